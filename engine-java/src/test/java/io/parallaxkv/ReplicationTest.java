package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.parallaxkv.Replication.Chunk;
import io.parallaxkv.Replication.Role;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The replication hooks through the Java API: a primary's log shipped to a send-index and a
 * build-index backup, levels installed after the primary's compactions, promotion, and the
 * refusals (gaps, malformed bytes, a region that is not a backup, a caller's write to a backup).
 */
class ReplicationTest {
  @TempDir Path dir;

  private static Options inPlace() {
    return Options.builder().l0Size(256 << 10).placement(Options.Placement.IN_PLACE)
        .durabilityInterval(java.time.Duration.ofMillis(5)).build();
  }

  /** Ships every durable record of {@code c} to {@code backup}; the backup's newest LSN. */
  private static long shipLog(Replication.LogCursor c, Region backup) {
    long applied = Replication.stats(backup).logLsn();
    for (Chunk ch; (ch = c.read(64 << 10)) != null; ) {
      applied = Replication.apply(backup, ch.records(), 0, ch.records().length, WriteOptions.DEFAULT);
      assertTrue(applied >= ch.lastLsn());
    }
    return applied;
  }

  /** Ships the primary's levels to a send-index backup; the segments copied. */
  private static int shipIndex(Region primary, Region backup) {
    try (Replication.IndexExport x = Replication.exportIndex(primary);
        Replication.IndexInstall in = Replication.installIndex(backup, x.layout())) {
      int[] needed = in.needed();
      byte[] seg = new byte[Replication.SEGMENT_SIZE];
      if (needed.length > 0) {
        assertThrows(InvalidArgumentException.class, () -> in.segment(needed[0], new byte[Replication.SEGMENT_SIZE + 1]));
      }
      for (int s : needed) in.segment(s, Arrays.copyOf(seg, x.segment(s, seg)));
      in.commit();
      return needed.length;
    }
  }

  private static TreeMap<String, byte[]> scan(Region r) {
    TreeMap<String, byte[]> m = new TreeMap<>();
    try (Scanner s = r.scanner()) {
      for (boolean ok = s.seekToFirst(); ok; ok = s.next()) m.put(new String(s.key()), s.value());
    }
    return m;
  }

  private static void assertSame(TreeMap<String, byte[]> want, TreeMap<String, byte[]> got) {
    assertEquals(want.keySet(), got.keySet());
    for (var e : want.entrySet()) assertArrayEquals(e.getValue(), got.get(e.getKey()), e.getKey());
  }

  /** Runs r on a thread of its own and waits for it, rethrowing what it threw. */
  private static void onAnotherThread(Runnable r) throws Throwable {
    var task = new java.util.concurrent.FutureTask<Void>(r, null);
    new Thread(task).start();
    try {
      task.get();
    } catch (java.util.concurrent.ExecutionException e) {
      throw e.getCause();
    }
  }

  /**
   * A cursor set to ship written records returns writes made without SYNC before the log syncs
   * them (its interval here is a minute); a default cursor returns them once they are durable.
   */
  @Test
  void cursorShipsWrittenRecords() {
    Options slow = Options.builder().l0Size(256 << 10).durabilityInterval(java.time.Duration.ofMinutes(1)).build();
    try (Parallax pv = Parallax.open(dir.resolve("p.vol"), slow);
        Parallax bv = Parallax.open(dir.resolve("b.vol"), slow)) {
      Region p = pv.region("r");
      Region backup = bv.region("r");
      Replication.setRole(backup, Role.BACKUP_SEND_INDEX);
      Replication.LogCursor written = Replication.openLog(p, 1);
      Replication.LogCursor durable = Replication.openLog(p, 1);
      written.shipWritten();
      TreeMap<String, byte[]> want = new TreeMap<>();
      for (int i = 0; i < 200; i++) {
        byte[] v = new byte[i % 10 == 0 ? 3000 : 100];
        Arrays.fill(v, (byte) i);
        p.put(b("key" + i), v, WriteOptions.DEFAULT);
        want.put("key" + i, v);
      }
      assertNull(durable.read(1 << 20), "nothing is durable yet");
      assertEquals(200, shipLog(written, backup));
      Replication.setRole(backup, Role.PRIMARY);
      assertSame(want, scan(backup));
      p.sync();
      assertEquals(200, durable.read(1 << 20).lastLsn());
      written.close();
      durable.close();
      assertThrows(ParallaxClosedException.class, written::shipWritten, "a closed cursor");
    }
  }

  /**
   * A cursor past its limit of WAL segments the levels cover is released (its reads throw
   * NoSuchEntryException); one with a higher limit keeps the log for its reader.
   */
  @Test
  void cursorLimitBoundsTheLogItKeeps() {
    try (Parallax pv = Parallax.open(dir.resolve("p.vol"), inPlace())) {
      Region p = pv.region("r");
      Replication.LogCursor tight = Replication.openLog(p, 1);
      Replication.LogCursor loose = Replication.openLog(p, 1);
      tight.setLimit(1);
      loose.setLimit(Replication.DEFAULT_LOG_LIMIT * 4);
      assertThrows(IllegalArgumentException.class, () -> tight.setLimit(0));
      byte[] v = new byte[4000];
      for (int i = 0; i < 5000; i++) p.put(b(String.format("key%05d", i)), v);
      p.flush();
      p.put(b("after"), v); // a commit after the flush trims what the cursors allow
      p.flush();
      assertThrows(NoSuchEntryException.class, () -> tight.read(1 << 20));
      assertTrue(loose.read(1 << 20) != null);
      tight.close();
      loose.close();
    }
  }

  /**
   * A build-index backup of a hybrid primary (values up to 3 MiB, in its large log) made from a
   * snapshot: loaded without the log, rebased to the snapshot's LSN, then fed the log after it;
   * promoted, it holds the primary's state. Writes after the snapshot reach it through the log.
   */
  @Test
  void snapshotTransferOfAHybridRegion() {
    Options hybrid = Options.builder().l0Size(256 << 10)
        .durabilityInterval(java.time.Duration.ofMillis(5)).build();
    try (Parallax pv = Parallax.open(dir.resolve("p.vol"), hybrid);
        Parallax bv = Parallax.open(dir.resolve("b.vol"), hybrid)) {
      Region p = pv.region("r");
      Region bi = bv.region("r");
      Replication.setRole(bi, Role.BACKUP_BUILD_INDEX);
      TreeMap<String, byte[]> model = new TreeMap<>();
      java.util.Random rnd = new java.util.Random(17);
      Runnable writes = () -> {
        for (int i = 0; i < 3000; i++) {
          String k = String.format("key%05d", rnd.nextInt(2000));
          byte[] v = new byte[i % 500 == 0 ? (3 << 20) + i : rnd.nextInt(4000)];
          rnd.nextBytes(v);
          if (i % 13 == 0) {
            p.delete(b(k));
            model.remove(k);
          } else {
            p.put(b(k), v);
            model.put(k, v);
          }
        }
      };
      writes.run();
      p.flush();
      Replication.LogCursor before = Replication.openLog(p, Replication.stats(p).l0Lsn() + 1);
      writes.run();
      Replication.SnapshotAt at = Replication.snapshot(p);
      TreeMap<String, byte[]> atSnapshot = new TreeMap<>(model);
      writes.run();
      try (Scanner sc = at.snapshot().scanner()) {
        for (boolean ok = sc.seekToFirst(); ok; ok = sc.next()) bi.put(sc.key(), sc.value(), WriteOptions.NO_WAL);
      }
      at.snapshot().close();
      assertTrue(Replication.stats(bi).logLsn() <= at.lsn());
      Replication.rebase(bi, at.lsn());
      assertEquals(at.lsn(), Replication.stats(bi).logLsn());
      assertSame(atSnapshot, scan(bi));
      assertTrue(bi.stats().placement().largeLogBytesAppended() > 3 << 20, "large values in the backup's own log");
      assertThrows(InvalidArgumentException.class, () -> Replication.rebase(bi, at.lsn() - 1));
      assertThrows(InvalidArgumentException.class, () -> Replication.rebase(p, Replication.stats(p).logLsn()));

      try (Replication.LogCursor after = Replication.openLog(p, at.lsn() + 1)) {
        before.close();
        p.sync();
        // At least every write's record: the primary's GC may take LSNs meanwhile (relocations).
        long written = Replication.stats(p).logLsn();
        long shipped = shipLog(after, bi);
        assertTrue(shipped >= written, "shipped up to " + shipped + " of " + written);
      }
      Replication.setRole(bi, Role.PRIMARY);
      assertSame(model, scan(bi));
    }
  }

  /**
   * Send index of a hybrid region: shipped leaves point into the primary's medium and large logs,
   * which the backup copies and mirrors (its leaves rewritten to point into its own copies);
   * promoted, it holds the primary's state, and compacts like a primary.
   */
  @Test
  void sendIndexOfAHybridRegion() {
    Options hybrid = Options.builder().l0Size(256 << 10)
        .durabilityInterval(java.time.Duration.ofMillis(5)).build();
    try (Parallax pv = Parallax.open(dir.resolve("p.vol"), hybrid);
        Parallax sv = Parallax.open(dir.resolve("s.vol"), hybrid)) {
      Region p = pv.region("r");
      Region s = sv.region("r");
      Replication.setRole(s, Role.BACKUP_SEND_INDEX);
      TreeMap<String, byte[]> model = new TreeMap<>();
      java.util.Random rnd = new java.util.Random(18);
      Replication.LogCursor c = Replication.openLog(p, 1);
      long compactions = 0;
      int installs = 0;
      for (int i = 0; i < 20000; i++) {
        String k = String.format("key%05d", rnd.nextInt(3000));
        byte[] v = new byte[rnd.nextInt(4000)]; // small, medium and large pairs
        rnd.nextBytes(v);
        p.put(b(k), v);
        model.put(k, v);
        if (i % 1000 == 999) {
          p.sync();
          shipLog(c, s);
          long n = p.stats().compactions();
          if (n != compactions) {
            compactions = n;
            shipIndex(p, s);
            installs++;
          }
        }
      }
      p.sync();
      shipLog(c, s);
      c.close();
      assertTrue(installs > 2, "levels were shipped");
      assertTrue(p.stats().placement().largeLogBytesAppended() > 0, "values in the primary's large log");
      assertEquals(0, Replication.stats(s).compactions(), "a send-index backup never compacts");
      long mirror = Replication.stats(s).mirrorBytes();
      long large = p.stats().placement().largeLogBytesAppended();
      // Apply writes the shipped large values into the mirror, installs what apply did not, each
      // only the blocks records reach: about the large log's bytes (less the segments GC dropped
      // before a copy). Copies of whole segments wrote each head again, 2 MiB, at every install:
      // over 2 MiB an install more.
      assertTrue(mirror > 0 && mirror <= large + installs * (1L << 20),
          "mirror " + mirror + " B for a large log of " + large + " B, " + installs + " installs");
      // A medium-log segment is copied once while the backup's levels point into it, not again with
      // every new tree the primary's merges pass it on to.
      long medium = Replication.stats(s).mediumSegments();
      long mediumWritten = p.stats().placement().mediumLogBytesWritten() / Replication.SEGMENT_SIZE;
      assertTrue(medium <= mediumWritten,
          medium + " medium-log segments copied, " + mediumWritten + " written by the primary");
      // Copies write the blocks their nodes and records reach, not whole segments.
      Replication.Stats st = Replication.stats(s);
      assertTrue(st.segmentBytes() < st.segmentsInstalled() * Replication.SEGMENT_SIZE,
          st.segmentBytes() + " B written for " + st.segmentsInstalled() + " segments");
      Replication.setRole(s, Role.PRIMARY);
      assertSame(model, scan(s));
      s.compact();
      assertSame(model, scan(s));
    }
  }

  /**
   * A region server calls the hooks from whichever thread serves the message: a cursor reads on
   * one thread, then another, and is closed on a third; an install takes its segments on threads
   * other than the one that began it and the one that commits it. (On FFM, buffers the hooks kept
   * were confined to the thread that allocated them, and such calls failed.)
   */
  @Test
  void hooksServeCallsFromAnyThread() throws Throwable {
    try (Parallax pv = Parallax.open(dir.resolve("p.vol"), inPlace());
        Parallax sv = Parallax.open(dir.resolve("s.vol"), inPlace())) {
      Region p = pv.region("r");
      Region s = sv.region("r");
      Replication.setRole(s, Role.BACKUP_SEND_INDEX);
      Replication.LogCursor c = Replication.openLog(p, 1); // pins the log the compaction covers
      TreeMap<String, byte[]> model = new TreeMap<>();
      for (int i = 0; i < 6000; i++) {
        String k = String.format("key%05d", i % 2000);
        byte[] v = new byte[100 + i % 50];
        Arrays.fill(v, (byte) i);
        p.put(b(k), v);
        model.put(k, v);
      }
      p.sync();
      p.compact();
      onAnotherThread(() -> {
        Chunk ch = c.read(4096);
        Replication.apply(s, ch.records(), 0, ch.records().length, WriteOptions.SYNC);
      });
      onAnotherThread(() -> shipLog(c, s));
      onAnotherThread(c::close);
      try (Replication.IndexExport x = Replication.exportIndex(p);
          Replication.IndexInstall in = Replication.installIndex(s, x.layout())) {
        int[] needed = in.needed();
        assertTrue(needed.length > 0, "levels to ship");
        for (int seg : needed) {
          onAnotherThread(() -> {
            byte[] bytes = new byte[Replication.SEGMENT_SIZE];
            in.segment(seg, Arrays.copyOf(bytes, x.segment(seg, bytes)));
          });
        }
        onAnotherThread(in::commit);
      }
      Replication.setRole(s, Role.PRIMARY);
      assertSame(model, scan(s));
    }
  }

  @Test
  void logAndIndexShippingThenPromotion() {
    try (Parallax pv = Parallax.open(dir.resolve("p.vol"), inPlace());
        Parallax sv = Parallax.open(dir.resolve("s.vol"), inPlace());
        Parallax bv = Parallax.open(dir.resolve("b.vol"), inPlace())) {
      Region p = pv.region("r");
      Region s = sv.region("r");
      Region bi = bv.region("r");
      Replication.setRole(s, Role.BACKUP_SEND_INDEX);
      Replication.setRole(bi, Role.BACKUP_BUILD_INDEX);
      TreeMap<String, byte[]> model = new TreeMap<>();
      java.util.Random rnd = new java.util.Random(16);
      Replication.LogCursor cs = Replication.openLog(p, 1);
      Replication.LogCursor cb = Replication.openLog(p, 1);
      long compactions = 0;
      int copied = 0;
      for (int i = 0; i < 20000; i++) {
        String k = String.format("key%05d", rnd.nextInt(3000));
        byte[] v = new byte[rnd.nextInt(300)];
        rnd.nextBytes(v);
        if (i % 2500 == 1234) { // range deletes travel in the log and in the shipped levels
          String end = String.format("key%05d", rnd.nextInt(3000));
          String lo = k.compareTo(end) <= 0 ? k : end, hi = k.compareTo(end) <= 0 ? end : k;
          p.deleteRange(b(lo), b(hi));
          model.subMap(lo, hi).clear();
        } else if (i % 11 == 0) {
          p.delete(b(k));
          model.remove(k);
        } else {
          p.put(b(k), v);
          model.put(k, v);
        }
        if (i % 1000 == 999) {
          p.sync();
          // The cursors pin the log they have not read: compactions never trim it under them.
          shipLog(cb, bi);
          shipLog(cs, s);
          long c = p.stats().compactions();
          if (c != compactions) {
            compactions = c;
            copied += shipIndex(p, s);
          }
        }
      }
      p.sync();
      shipLog(cs, s);
      shipLog(cb, bi);
      assertTrue(copied > 0, "levels were shipped");
      assertNull(cs.read(4096), "nothing more");
      cs.close();
      cb.close();

      Replication.Stats st = Replication.stats(s);
      assertEquals(Role.BACKUP_SEND_INDEX, st.role());
      assertEquals(0, st.compactions(), "a send-index backup never compacts");
      assertTrue(st.treesInstalled() > 0);
      assertEquals(Replication.stats(p).logLsn(), st.logLsn());

      // Re-delivery is skipped; a gap, a primary, and malformed bytes are refused.
      try (Replication.LogCursor again = Replication.openLog(p, st.logLsn())) {
        Chunk ch = again.read(4096);
        assertEquals(st.logLsn(), Replication.apply(s, ch.records(), 0, ch.records().length, WriteOptions.SYNC));
        byte[] gap = ch.records().clone();
        java.nio.ByteBuffer.wrap(gap).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(0, st.logLsn() + 5);
        assertThrows(InvalidArgumentException.class, () -> Replication.apply(s, gap, 0, gap.length, WriteOptions.DEFAULT));
        assertThrows(InvalidArgumentException.class,
            () -> Replication.apply(p, ch.records(), 0, ch.records().length, WriteOptions.DEFAULT));
        assertThrows(InvalidArgumentException.class,
            () -> Replication.apply(s, ch.records(), 0, ch.records().length, WriteOptions.NO_WAL));
        byte[] bad = Arrays.copyOf(ch.records(), 10);
        assertThrows(CorruptionException.class, () -> Replication.apply(s, bad, 0, bad.length, WriteOptions.DEFAULT));
      }
      // A caller's write to a send-index backup is refused: its LSNs are the primary's.
      assertThrows(InvalidArgumentException.class, () -> s.put(b("stray"), b("v")));
      assertEquals(st.logLsn(), Replication.stats(s).logLsn());
      byte[] layout;
      try (Replication.IndexExport x = Replication.exportIndex(p)) {
        layout = x.layout();
      }
      assertThrows(InvalidArgumentException.class, () -> Replication.installIndex(bi, layout));
      assertThrows(CorruptionException.class,
          () -> Replication.installIndex(s, Arrays.copyOf(layout, layout.length - 1)));

      // Promotion: both backups hold exactly the primary's state.
      Replication.setRole(s, Role.PRIMARY);
      Replication.setRole(bi, Role.PRIMARY);
      TreeMap<String, byte[]> want = scan(p);
      assertEquals(model.keySet(), want.keySet());
      assertSame(want, scan(s));
      assertSame(want, scan(bi));
      s.put(b("after"), b("x"));
      assertEquals(st.logLsn() + 1, Replication.stats(s).logLsn());
    }
  }
}
