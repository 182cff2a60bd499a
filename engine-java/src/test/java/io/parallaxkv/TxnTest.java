package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static io.parallaxkv.TestSupport.s;
import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Parallax.write (batches across regions) and Parallax.snapshot(Region...). */
class TxnTest {
  @TempDir Path dir;

  @Test
  void badInput() {
    try (Parallax db = TestSupport.open(dir); Region a = db.region("a"); Region bb = db.region("b");
        Parallax other = Parallax.open(dir.resolve("other.vol"), TestSupport.small());
        Region c = other.region("c"); WriteBatch batch = new WriteBatch()) {
      assertThrows(NullPointerException.class, () -> batch.put((Region) null, b("k"), b("v")));
      assertThrows(NullPointerException.class, () -> db.write(null));
      assertThrows(NullPointerException.class, () -> db.snapshot((Region) null));
      assertThrows(InvalidArgumentException.class, () -> db.snapshot());
      assertThrows(InvalidArgumentException.class, () -> db.snapshot(a, c));
      batch.put(a, b("k"), b("v")).put(bb, b("k"), b("v"));
      assertThrows(InvalidArgumentException.class, () -> a.write(batch));
      assertThrows(InvalidArgumentException.class, () -> db.write(batch, WriteOptions.NO_WAL));
      batch.put(c, b("k"), b("v"));
      assertThrows(InvalidArgumentException.class, () -> db.write(batch));
      assertNull(a.get(b("k")));
      batch.clear();
      batch.put(b("untagged"), b("v"));
      assertThrows(InvalidArgumentException.class, () -> db.write(batch));
      batch.clear();
      Region d = db.region("d");
      batch.put(a, b("k"), b("v")).put(d, b("k"), b("v"));
      d.close();
      assertThrows(ParallaxClosedException.class, () -> db.write(batch));
      assertThrows(ParallaxClosedException.class, () -> batch.put(d, b("k"), b("v")));
      assertNull(a.get(b("k")));
    }
  }

  /** Random cross-region batches, single writes, flushes and reopens against a model. */
  @Test
  void modelAcrossReopens() {
    Path vol = dir.resolve("m.vol");
    Random rnd = new Random(42);
    List<Map<String, String>> model = List.of(new HashMap<>(), new HashMap<>(), new HashMap<>());
    String[] names = {"x", "y", "z"};
    for (int round = 0; round < 4; round++) {
      try (Parallax db = Parallax.open(vol, TestSupport.small());
          Region x = db.region("x"); Region y = db.region("y"); Region z = db.region("z");
          WriteBatch batch = new WriteBatch()) {
        Region[] rs = {x, y, z};
        for (int i = 0; i < 3; i++) checkRegion(rs[i], model.get(i), names[i]);
        for (int step = 0; step < 300; step++) {
          batch.clear();
          int ops = 1 + rnd.nextInt(10);
          for (int k = 0; k < ops; k++) {
            int i = rnd.nextInt(3);
            String key = "k" + rnd.nextInt(200);
            if (rnd.nextInt(4) == 0) {
              batch.delete(rs[i], b(key));
              model.get(i).remove(key);
            } else {
              String v = "v" + step + "-" + k + (rnd.nextInt(20) == 0 ? "x".repeat(2000) : "");
              batch.put(rs[i], b(key), b(v));
              model.get(i).put(key, v);
            }
          }
          db.write(batch);
          if (rnd.nextInt(50) == 0) rs[rnd.nextInt(3)].flush();
        }
        for (int i = 0; i < 3; i++) checkRegion(rs[i], model.get(i), names[i]);
      }
    }
  }

  private static void checkRegion(Region r, Map<String, String> m, String name) {
    int n = 0;
    try (Scanner sc = r.scanner()) {
      for (; sc.isValid(); sc.next()) {
        assertEquals(m.get(s(sc.key())), s(sc.value()), name + "/" + s(sc.key()));
        n++;
      }
    }
    assertEquals(m.size(), n, name);
  }

  @Test
  void readersNeverSeeHalfABatch() throws Exception {
    try (Parallax db = TestSupport.open(dir); Region a = db.region("a"); Region bb = db.region("b")) {
      AtomicBoolean stop = new AtomicBoolean();
      AtomicLong batches = new AtomicLong(), checks = new AtomicLong();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      Thread writer = new Thread(() -> {
        try (WriteBatch batch = new WriteBatch()) {
          for (long i = 1; !stop.get(); i++) {
            batch.clear();
            batch.put(a, b("x"), b(Long.toString(i))).put(bb, b("x"), b(Long.toString(i)));
            db.write(batch);
            batches.set(i);
          }
        } catch (Throwable t) {
          failure.set(t);
        }
      });
      Thread reader = new Thread(() -> {
        try {
          while (!stop.get()) {
            List<Snapshot> snaps = db.snapshot(a, bb);
            try {
              assertEquals(s(snaps.get(0).get(b("x"))), s(snaps.get(1).get(b("x"))));
            } finally {
              for (Snapshot sn : snaps) sn.close();
            }
            checks.incrementAndGet();
          }
        } catch (Throwable t) {
          failure.set(t);
        }
      });
      writer.start();
      reader.start();
      Thread.sleep(1000);
      stop.set(true);
      writer.join();
      reader.join();
      if (failure.get() != null) throw new AssertionError(failure.get());
      assertTrue(batches.get() > 5 && checks.get() > 5, batches + " batches, " + checks + " checks");
    }
  }

  /** A child JVM commits batches across two regions until it is killed. */
  @Test
  void killedProcessKeepsWholeBatches() throws Exception {
    Path vol = dir.resolve("k.vol");
    Process p = TestSupport.startChild(TxnChild.class, vol.toString());
    TestSupport.ChildReport rep = TestSupport.killWhen(p, c -> c.last("B") >= 100, 0);
    long acked = rep.last("B");
    assertTrue(acked >= 100, "the child stopped early: " + rep.other());
    try (Parallax db = Parallax.open(vol, TestSupport.small()); Region a = db.region("a");
        Region bb = db.region("b")) {
      for (long i = 0; i < acked + 1000; i++) {
        byte[] va = a.get(b("b" + i)), vb = bb.get(b("b" + i));
        assertEquals(va == null, vb == null, "batch " + i + " is in one region only");
        if (i <= acked) assertNotNull(va, "acknowledged batch " + i);
      }
      assertEquals(s(a.get(b("last"))), s(bb.get(b("last"))));
    }
  }
}
