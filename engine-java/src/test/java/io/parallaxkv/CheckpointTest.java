package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static io.parallaxkv.TestSupport.s;
import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Parallax#checkpoint}: consistency under writers, incremental copies, bad input, kill. */
class CheckpointTest {
  @TempDir Path dir;

  @Test
  void badInputIsRefusedAndLosesNothing() throws Exception {
    Path src = dir.resolve("src.vol"), foreign = dir.resolve("foreign");
    byte[] junk = new byte[16384];
    new Random(1).nextBytes(junk);
    Files.write(foreign, junk);
    try (Parallax db = Parallax.open(src, TestSupport.small()); Region a = db.region("a")) {
      a.put(b("k"), b("v"));
      assertThrows(NullPointerException.class, () -> db.checkpoint(null));
      assertThrows(NullPointerException.class, () -> db.checkpoint(dir.resolve("x"), (String) null));
      InvalidArgumentException self =
          assertThrows(InvalidArgumentException.class, () -> db.checkpoint(src));
      assertTrue(self.getMessage().contains("the volume itself"), self.getMessage());
      InvalidArgumentException f =
          assertThrows(InvalidArgumentException.class, () -> db.checkpoint(foreign));
      assertTrue(f.getMessage().contains("refusing to overwrite"), f.getMessage());
      assertArrayEquals(junk, Files.readAllBytes(foreign));
      assertThrows(NoSuchEntryException.class,
          () -> db.checkpoint(dir.resolve("no/such/dir/ck")));
      assertThrows(ParallaxIOException.class, () -> db.checkpoint(dir));
      assertThrows(NoSuchEntryException.class, () -> db.checkpoint(dir.resolve("ck"), "zz"));
      try (Parallax other = Parallax.open(dir.resolve("other.vol"), TestSupport.small())) {
        assertThrows(BusyException.class, () -> db.checkpoint(dir.resolve("other.vol")));
      }
      assertEquals("v", s(a.get(b("k"))));
    }
  }

  /**
   * A writer puts each key into region a, then region b; another commits batches setting
   * "ctr" in both; a third overwrites large values (the large log's GC runs). Each copy holds a
   * prefix of the chain at least as long as what was acknowledged before the call, in b only
   * what is in a, the same batch counter in both, and large values the writer wrote.
   */
  @Test
  void checkpointsUnderWritersAreConsistent() throws Exception {
    Options o = Options.builder().l0Size(256 << 10).gcThresholdPercent(5)
        .durabilityInterval(java.time.Duration.ofMillis(5)).build();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong chainAcked = new AtomicLong(), chainStarted = new AtomicLong();
    AtomicLong batchAcked = new AtomicLong(), batchStarted = new AtomicLong();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    try (Parallax db = Parallax.open(dir.resolve("src.vol"), o); Region a = db.region("a");
        Region bb = db.region("b")) {
      List<Thread> threads = new ArrayList<>();
      threads.add(new Thread(() -> run(failure, () -> {
        for (long i = 0; !stop.get(); i++) {
          chainStarted.set(i + 1);
          a.put(b("c" + i), b("v" + i));
          bb.put(b("c" + i), b("v" + i));
          chainAcked.set(i + 1);
        }
      })));
      threads.add(new Thread(() -> run(failure, () -> {
        try (WriteBatch batch = new WriteBatch()) {
          for (long i = 0; !stop.get(); i++) {
            batchStarted.set(i + 1);
            batch.clear();
            batch.put(a, b("ctr"), b(Long.toString(i)));
            batch.put(bb, b("ctr"), b(Long.toString(i)));
            db.write(batch);
            batchAcked.set(i + 1);
          }
        }
      })));
      threads.add(new Thread(() -> run(failure, () -> {
        for (int i = 0; !stop.get(); i++) bb.put(b("large" + i % 16), large(i));
      })));
      threads.forEach(Thread::start);
      Path ck = dir.resolve("ck.vol");
      for (int round = 0; round < 3; round++) {
        Thread.sleep(300);
        long ca = chainAcked.get(), ba = batchAcked.get();
        CheckpointStats st = db.checkpoint(ck);
        long cs = chainStarted.get(), bs = batchStarted.get();
        assertTrue(st.segments() > 0 && st.bytesCopied() > 0, st.toString());
        try (Parallax c = Parallax.open(ck, o); Region ca2 = c.openRegion("a");
            Region cb = c.openRegion("b")) {
          long inA = prefix(ca2, cs + 2), inB = prefix(cb, cs + 2);
          assertTrue(inB <= inA && inA <= inB + 1, "chain: " + inA + " in a, " + inB + " in b");
          assertTrue(inB >= ca && inA <= cs, "chain: " + inA + "/" + inB + ", acked " + ca
              + ", started " + cs);
          assertEquals(s(ca2.get(b("ctr"))), s(cb.get(b("ctr"))));
          long batches = ca2.get(b("ctr")) == null ? 0 : Long.parseLong(s(ca2.get(b("ctr")))) + 1;
          assertTrue(batches >= ba && batches <= bs, batches + " batches; acked " + ba
              + ", started " + bs);
          for (int k = 0; k < 16; k++) {
            byte[] v = cb.get(b("large" + k));
            if (v != null) assertArrayEquals(large(v[0] & 0xff | (v[1] & 0xff) << 8), v);
          }
        }
      }
      stop.set(true);
      for (Thread t : threads) t.join();
      if (failure.get() != null) throw new AssertionError(failure.get());
      assertTrue(bb.stats().placement().gcSegmentsFreed() > 0, "GC freed no segment");
    }
  }

  /** A value of 64..320 KiB that names its write (i in the first two bytes). */
  private static byte[] large(int i) {
    i &= 0xffff;
    byte[] v = new byte[(64 << 10) + (i * 4099) % (256 << 10)];
    Arrays.fill(v, (byte) (i * 31 + 7));
    v[0] = (byte) i;
    v[1] = (byte) (i >> 8);
    return v;
  }

  private static void run(AtomicReference<Throwable> failure, Runnable r) {
    try {
      r.run();
    } catch (Throwable t) {
      failure.compareAndSet(null, t);
    }
  }

  /** How many chain keys c0, c1, ... are present, checking none is present past a gap. */
  private static long prefix(Region r, long bound) {
    long n = 0;
    while (r.get(b("c" + n)) != null) {
      assertEquals("v" + n, s(r.get(b("c" + n))));
      n++;
    }
    for (long i = n + 1; i < bound; i++) assertNull(r.get(b("c" + i)), "c" + i + " after a gap");
    return n;
  }

  @Test
  void incrementalCopiesOnlyWhatChangedAndEqualsAFullCopy() {
    Path src = dir.resolve("src.vol"), inc = dir.resolve("inc.vol"), full = dir.resolve("full.vol");
    Options o = Options.builder().l0Size(1 << 20).build();
    CheckpointStats first, second, whole;
    try (Parallax db = Parallax.open(src, o); Region a = db.region("a");
        Region bb = db.region("b")) {
      for (int i = 0; i < 20000; i++) {
        a.put(b("k" + i), new byte[100 + i % 900]);
        bb.put(b("k" + i), b("v" + i));
      }
      a.compact();
      bb.compact();
      first = db.checkpoint(inc);
      bb.put(b("late"), b("x"));
      second = db.checkpoint(inc);
      whole = db.checkpoint(full);
      assertEquals(first.segments(), first.segmentsCopied());
      assertTrue(second.segmentsCopied() < second.segments(), second.toString());
      assertTrue(second.bytesCopied() * 4 < whole.bytesCopied(), second + " vs " + whole);
      CheckpointStats onlyB = db.checkpoint(dir.resolve("b.vol"), "b");
      assertTrue(onlyB.segments() < whole.segments(), onlyB + " vs " + whole);
    }
    assertEquals(dump(full), dump(inc));
    assertEquals(dump(src), dump(inc));
    try (Parallax c = Parallax.open(dir.resolve("b.vol"), o)) {
      assertEquals(List.of("b"), c.regions());
    }
  }

  private static List<String> dump(Path vol) {
    List<String> out = new ArrayList<>();
    try (Parallax db = Parallax.open(vol, Options.builder().l0Size(1 << 20).build())) {
      for (String name : db.regions()) {
        try (Region r = db.openRegion(name); Scanner sc = r.scanner()) {
          for (sc.seekToFirst(); sc.isValid(); sc.next())
            out.add(name + "/" + s(sc.key()) + "=" + Arrays.hashCode(sc.value()));
        }
      }
    }
    return out;
  }

  /** A child JVM writes and checkpoints back to back until it is killed. */
  @Test
  void killDuringCheckpointLeavesSourceAndTargetUsable() throws Exception {
    Random rnd = new Random();
    int opened = 0, refused = 0;
    for (int cycle = 0; cycle < 3; cycle++) {
      Path src = dir.resolve("k" + cycle + ".vol"), ck = dir.resolve("k" + cycle + ".ck");
      Process p = TestSupport.startChild(CheckpointChild.class, src.toString(), ck.toString());
      TestSupport.ChildReport rep = TestSupport.killWhen(p, c -> c.last("C") >= 1, rnd.nextInt(300));
      assertTrue(rep.last("C") >= 1, "the child stopped early: " + rep.other());
      try (Parallax db = Parallax.open(src, TestSupport.small()); Region a = db.region("a");
          Region bb = db.region("b")) {
        prefix(a, 0);
        prefix(bb, 0);
      }
      try (Parallax c = Parallax.open(ck, TestSupport.small()); Region a = c.openRegion("a");
          Region bb = c.openRegion("b")) {
        long inA = prefix(a, 0), inB = prefix(bb, 0);
        assertTrue(inB <= inA && inA <= inB + 1, "chain: " + inA + " in a, " + inB + " in b");
        opened++;
      } catch (NotAVolumeException e) {
        assertTrue(e.getMessage().contains("incomplete checkpoint"), e.getMessage());
        refused++;
      }
    }
    assertEquals(3, opened + refused);
  }
}
