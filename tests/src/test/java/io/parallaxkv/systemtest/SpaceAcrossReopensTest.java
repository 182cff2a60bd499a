package io.parallaxkv.systemtest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.parallaxkv.Options;
import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import io.parallaxkv.RegionStats;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Many short sessions (open, overwrite ten large values, close) keep the live data under one
 * segment, so the large log must stay a few segments long however often the volume is reopened:
 * every reopen starts the large log's heads in fresh segments, and the segments left behind must
 * become collectable once their records are dead.
 */
class SpaceAcrossReopensTest {
  private static final int SESSIONS = 40;
  private static final int KEYS = 10;
  private static final int VALUE = 8000;

  @TempDir Path dir;

  /** The large-log segments after {@code SESSIONS} sessions of {@code putsPerSession} puts. */
  private long largeLogSegmentsAfterSessions(int putsPerSession) {
    Path volume = dir.resolve("space.vol");
    Options options = Options.builder().l0Size(1L << 20).gcThresholdPercent(5).build();
    long segments = 0;
    for (int session = 0; session < SESSIONS; session++) {
      try (Parallax db = Parallax.open(volume, options); Region r = db.region("r")) {
        for (int i = 0; i < putsPerSession; i++) r.put(key(i % KEYS), value(session, i % KEYS));
        r.flush();
        RegionStats.Placement p = r.stats().placement();
        segments = p.largeLogSegments();
      }
    }
    try (Parallax db = Parallax.open(volume, options); Region r = db.openRegion("r")) {
      for (int k = 0; k < KEYS; k++) assertArrayEquals(value(SESSIONS - 1, k), r.get(key(k)));
    }
    return segments;
  }

  private static byte[] key(int k) {
    return ("space-" + k).getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[] value(int session, int k) {
    byte[] v = new byte[VALUE];
    v[0] = (byte) session;
    v[1] = (byte) k;
    return v;
  }

  @Test
  void sessionsThatFillMuchOfASegmentLeaveNoGarbageBehind() {
    long segments = largeLogSegmentsAfterSessions(100);
    assertTrue(segments <= 6, "the large log holds " + segments + " segments after " + SESSIONS
        + " sessions; the live data fits in one");
  }

  @Test
  void shortSessionsLeaveNoGarbageBehind() {
    long segments = largeLogSegmentsAfterSessions(KEYS);
    assertTrue(segments <= 6, "the large log holds " + segments + " segments after " + SESSIONS
        + " sessions; the live data fits in one");
  }
}
