package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LifecycleTest {
  @TempDir Path dir;

  @Test
  void useAfterCloseThrows() {
    Parallax db = TestSupport.open(dir);
    Region r = db.region("r");
    r.put(b("k"), b("v"));
    Snapshot snap = r.snapshot();
    Scanner sc = r.scanner();
    WriteBatch wb = new WriteBatch();
    r.close();
    r.close(); // idempotent
    assertFalse(r.isOpen());
    assertFalse(snap.isOpen(), "children closed first");
    assertFalse(sc.isOpen());
    assertThrows(ParallaxClosedException.class, () -> r.get(b("k")));
    assertThrows(ParallaxClosedException.class, () -> r.put(b("k"), b("v")));
    assertThrows(ParallaxClosedException.class, () -> r.put(ByteBuffer.wrap(b("k")), ByteBuffer.wrap(b("v"))));
    assertThrows(ParallaxClosedException.class, () -> r.delete(b("k")));
    assertThrows(ParallaxClosedException.class, () -> r.exists(b("k")));
    assertThrows(ParallaxClosedException.class, () -> r.write(wb));
    assertThrows(ParallaxClosedException.class, r::flush);
    assertThrows(ParallaxClosedException.class, r::sync);
    assertThrows(ParallaxClosedException.class, r::stats);
    assertThrows(ParallaxClosedException.class, r::snapshot);
    assertThrows(ParallaxClosedException.class, r::scanner);
    assertThrows(ParallaxClosedException.class, () -> snap.get(b("k")));
    assertThrows(ParallaxClosedException.class, sc::next);
    assertThrows(ParallaxClosedException.class, sc::isValid);
    assertThrows(ParallaxClosedException.class, sc::key);
    sc.close();
    snap.close();
    try (Region again = db.openRegion("r")) { // the region really was closed
      assertEquals("v", TestSupport.s(again.get(b("k"))));
    }
    Region other = db.region("other");
    db.close();
    db.close();
    assertFalse(other.isOpen());
    assertThrows(ParallaxClosedException.class, () -> other.get(b("k")));
    assertThrows(ParallaxClosedException.class, () -> db.region("x"));
    assertThrows(ParallaxClosedException.class, db::regions);
    wb.close();
    wb.close();
    assertThrows(ParallaxClosedException.class, () -> wb.put(b("k"), b("v")));
    assertThrows(ParallaxClosedException.class, wb::count);
  }

  @Test
  void badInput() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("r")) {
      assertThrows(NullPointerException.class, () -> r.put((byte[]) null, b("v")));
      assertThrows(NullPointerException.class, () -> r.put(b("k"), (byte[]) null));
      assertThrows(NullPointerException.class, () -> r.put((ByteBuffer) null, ByteBuffer.allocate(1)));
      assertThrows(NullPointerException.class, () -> r.put(b("k"), b("v"), null));
      assertThrows(NullPointerException.class, () -> r.get((byte[]) null));
      assertThrows(InvalidArgumentException.class, () -> r.get(new byte[0]));
      assertThrows(InvalidArgumentException.class, () -> r.get(ByteBuffer.allocate(0)));
      assertThrows(TooBigException.class, () -> r.get(new byte[Parallax.MAX_KEY_SIZE + 1]));
      assertThrows(NullPointerException.class, () -> r.delete((byte[]) null));
      assertThrows(NullPointerException.class, () -> r.exists((byte[]) null));
      assertThrows(NullPointerException.class, () -> r.scanner(null));
      assertThrows(TooBigException.class,
          () -> r.put(ByteBuffer.allocateDirect(Parallax.MAX_KEY_SIZE + 1), ByteBuffer.allocate(1)));
      assertThrows(TooBigException.class,
          () -> r.put(ByteBuffer.allocate(1).put((byte) 1).flip(), ByteBuffer.allocateDirect(Parallax.MAX_VALUE_SIZE + 1)));
      try (Scanner s = r.scanner()) {
        assertThrows(NullPointerException.class, () -> s.seek((byte[]) null));
        assertThrows(InvalidArgumentException.class, () -> s.seek(new byte[0]));
        assertThrows(IllegalStateException.class, s::value); // empty region: not on an entry
      }
      try (WriteBatch wb = new WriteBatch()) {
        assertThrows(NullPointerException.class, () -> wb.put((byte[]) null, b("v")));
        assertThrows(TooBigException.class, () -> wb.delete(new byte[Parallax.MAX_KEY_SIZE + 1]));
      }
      assertThrows(NullPointerException.class, () -> ScanOptions.builder().prefix(null));
      r.put(b("still"), b("works"));
      assertEquals("works", TestSupport.s(r.get(b("still"))));
    }
  }

  /** Closing a region (and the volume) while other threads hammer it fails them cleanly. */
  @Test
  void closeWhileOtherThreadsRun() throws Exception {
    for (int round = 0; round < 3; round++) {
      Parallax db = TestSupport.open(dir);
      Region r = db.region("r");
      int threads = 4;
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      CountDownLatch started = new CountDownLatch(threads);
      List<Future<Integer>> fs = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int tt = t;
        fs.add(pool.submit(() -> {
          started.countDown();
          int ops = 0;
          try {
            for (int i = 0; ; i++) {
              byte[] k = b("k" + tt + "-" + (i % 500));
              switch (tt) {
                case 0 -> r.put(k, new byte[100]);
                case 1 -> r.get(k);
                case 2 -> {
                  try (Scanner s = r.scanner()) {
                    for (int j = 0; j < 50 && s.isValid(); j++) s.next();
                  }
                }
                default -> {
                  try (Snapshot sn = r.snapshot()) {
                    sn.get(k);
                  }
                }
              }
              ops++;
            }
          } catch (ParallaxClosedException expected) {
            return ops;
          }
        }));
      }
      started.await();
      Thread.sleep(50);
      if (round % 2 == 0) r.close();
      else db.close(); // closes the region first
      for (Future<Integer> f : fs) assertTrue(f.get(60, TimeUnit.SECONDS) >= 0);
      pool.shutdown();
      db.close();
    }
    try (Parallax db = TestSupport.open(dir); Region r = db.region("r")) {
      assertNotNull(r.get(b("k0-0")));
    }
  }

  /** A handle dropped without close is closed by the Cleaner (which logs where it was created). */
  @Test
  void leakedHandlesAreCleaned() throws Exception {
    try (Parallax db = TestSupport.open(dir)) {
      leakRegion(db);
      // the region "leak" is open until the Cleaner closes it; wait for that
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (true) {
        System.gc();
        try (Region again = db.openRegion("leak")) {
          break;
        } catch (BusyException stillOpen) {
          if (System.nanoTime() > deadline) fail("the Cleaner did not close a leaked region");
          Thread.sleep(50);
        }
      }
      for (int i = 0; i < 100; i++) leakScanner(db);
    }
  }

  private static void leakRegion(Parallax db) {
    Region r = db.region("leak");
    r.put(b("k"), b("v"));
  }

  private static void leakScanner(Parallax db) {
    try (Region r = db.region("s" + (System.nanoTime() % 3))) {
      r.put(b("k"), b("v"));
      r.scanner(); // leaked, closed with the region
    } catch (BusyException ignored) {
      // unlikely race with another leak in flight
    }
  }
}
