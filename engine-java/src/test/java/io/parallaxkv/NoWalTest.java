package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static io.parallaxkv.TestSupport.s;
import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** WriteOptions.disableWal: visibility, close, and a killed JVM (same backend as the suite). */
class NoWalTest {
  @TempDir Path dir;

  @Test
  void unloggedWritesAreVisibleAndSurviveClose() {
    Path vol = dir.resolve("v");
    try (Parallax db = Parallax.open(vol, TestSupport.small()); Region r = db.region("r")) {
      long walBytes = r.stats().walBytesAppended();
      for (int i = 0; i < 1000; i++) r.put(b("u" + i), b("v" + i), WriteOptions.disableWal(true));
      r.delete(b("u7"), WriteOptions.NO_WAL);
      try (WriteBatch batch = new WriteBatch()) {
        batch.put(b("batch"), b("1"));
        r.write(batch, WriteOptions.NO_WAL);
      }
      assertEquals(walBytes, r.stats().walBytesAppended(), "unlogged writes append no WAL bytes");
      assertEquals("v5", s(r.get(b("u5"))));
      assertNull(r.get(b("u7")));
      r.put(b("logged"), b("x"), WriteOptions.SYNC); // a sync write after unlogged ones returns
      assertTrue(WriteOptions.NO_WAL.isWalDisabled());
      assertFalse(WriteOptions.disableWal(false).isWalDisabled());
    }
    try (Parallax db = Parallax.open(vol, TestSupport.small()); Region r = db.region("r")) {
      for (int i = 0; i < 1000; i++) {
        if (i == 7) assertNull(r.get(b("u7")));
        else assertEquals("v" + i, s(r.get(b("u" + i))), "u" + i);
      }
      assertEquals("1", s(r.get(b("batch"))));
      assertEquals("x", s(r.get(b("logged"))));
    }
  }

  /**
   * A child JVM writes unlogged keys, flushes (reported as "F n"), then mixes unlogged and
   * synced logged writes (each synced one reported as "S i") until it is killed: after reopen
   * every write before the flush and every reported synced write is there.
   */
  @Test
  void killedProcessKeepsFlushedAndSyncedWrites() throws Exception {
    Path vol = dir.resolve("v");
    Process p = TestSupport.startChild(NoWalChild.class, vol.toString());
    TestSupport.ChildReport rep = TestSupport.killWhen(p, c -> c.last("S") >= 300, 0);
    long flushed = rep.last("F"), synced = rep.last("S");
    assertTrue(synced >= 300, "the child stopped early: " + rep.other());
    try (Parallax db = Parallax.open(vol, TestSupport.small()); Region r = db.region("r")) {
      for (int i = 0; i < flushed; i++) assertEquals("v" + i, s(r.get(b("pre" + i))), "pre" + i);
      for (int i = 0; i <= synced; i++) assertEquals("s" + i, s(r.get(b("sync" + i))), "sync" + i);
    }
  }
}
