package io.parallaxkv.systemtest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.parallaxkv.Options;
import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reopening a region whose write-ahead log holds more than an L0 while large-log segments are
 * ready for GC: the replay flushes, a compaction worker then has no merge to run and starts GC.
 * The reopen runs in a child JVM ({@link Reopen}) because the engine bug this shows kills the
 * process.
 */
class ReplayGcTest {
  private static final int MEDIUM_PAIRS = 120_000;
  private static final int ATTEMPTS = 3;

  @TempDir Path dir;

  /**
   * Opens the volume with a 64 KiB L0, a 5% GC threshold and two workers (one flushes, the other
   * is free to collect), checks a few pairs, exits 0.
   */
  public static final class Reopen {
    private Reopen() {}

    public static void main(String[] args) {
      Options o = Options.builder().l0Size(64L << 10).gcThresholdPercent(5).compactionThreads(2)
          .build();
      try (Parallax db = Parallax.open(Path.of(args[0]), o); Region r = db.openRegion("r")) {
        for (int i = 0; i < MEDIUM_PAIRS; i += 1000) {
          if (r.get(mediumKey(i)) == null) throw new AssertionError("lost " + i);
        }
        byte[] big = r.get(bigKey(0));
        if (big == null || big.length != 8000) throw new AssertionError("lost big0");
      }
    }
  }

  static byte[] mediumKey(int i) {
    return String.format("m%07d", i).getBytes(StandardCharsets.US_ASCII);
  }

  static byte[] bigKey(int k) {
    return ("big" + k).getBytes(StandardCharsets.US_ASCII);
  }

  @Test
  void reopenWithALongLogAndCollectableGarbage() throws Exception {
    Path prepared = dir.resolve("prepared.vol");
    // A 64 MiB L0 keeps ~45 MB of pairs in the log only. A 100% threshold keeps the large-log
    // segments uncollected until the reopen lowers it; each holds 95% garbage (one key
    // overwritten) and a few live values, so that every collection relocates.
    Options first = Options.builder().l0Size(64L << 20).gcThresholdPercent(100).build();
    try (Parallax db = Parallax.open(prepared, first); Region r = db.region("r")) {
      byte[] big = new byte[8000];
      for (int i = 0; i < 2000; i++) r.put(bigKey(i % 20 == 0 ? 1000 + i : 0), big);
      r.flush();
      assertTrue(r.stats().placement().largeLogGarbageBytes() > 8 << 20, "garbage accounted");
      byte[] medium = new byte[300];
      for (int i = 0; i < MEDIUM_PAIRS; i++) r.put(mediumKey(i), medium);
      assertTrue(r.stats().l0Bytes() > 32 << 20, "the pairs are in L0 and the log only");
    }
    // The crash depends on timing (with two workers it came at every reopen here): try a few.
    Path volume = dir.resolve("replay.vol");
    Path out = dir.resolve("reopen.txt");
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
      Files.copy(prepared, volume, StandardCopyOption.REPLACE_EXISTING);
      Process p = new ProcessBuilder(ChildJvm.command(Reopen.class, List.of(volume.toString())))
          .directory(dir.toFile()).redirectErrorStream(true).redirectOutput(out.toFile()).start();
      try {
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the reopen finished");
      } finally {
        p.destroyForcibly();
        p.waitFor();
      }
      assertEquals(0, p.exitValue(), "reopen " + attempt + " failed:\n" + Files.readString(out));
    }
    try (Parallax db = Parallax.open(volume, first); Region r = db.openRegion("r")) {
      assertArrayEquals(new byte[8000], r.get(bigKey(0)));
    }
  }
}
