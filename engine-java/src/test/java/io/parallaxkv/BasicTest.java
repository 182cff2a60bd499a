package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static io.parallaxkv.TestSupport.s;
import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BasicTest {
  @TempDir Path dir;

  @Test
  void backendIsTheRequestedOne() {
    String want = System.getProperty("parallax.backend");
    if (want != null && !want.equals("auto")) assertEquals(want, Parallax.backend());
  }

  @Test
  void putGetDeleteExists() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("r")) {
      assertNull(r.get(b("k")));
      assertFalse(r.exists(b("k")));
      r.put(b("k"), b("v1"));
      assertEquals("v1", s(r.get(b("k"))));
      assertTrue(r.exists(b("k")));
      r.put(b("k"), b("v2"), WriteOptions.SYNC);
      assertEquals("v2", s(r.get(b("k"))));
      r.put(b("empty"), new byte[0]);
      assertArrayEquals(new byte[0], r.get(b("empty")));
      assertTrue(r.exists(b("empty")));
      r.delete(b("k"));
      assertNull(r.get(b("k")));
      r.delete(b("never-there"), WriteOptions.sync());
      r.sync();
      r.flush();
      assertEquals("", s(r.get(b("empty"))));
      RegionStats st = r.stats();
      assertTrue(st.puts() >= 3, st.toString());
      assertTrue(st.deletes() >= 2);
      assertEquals(Parallax.MAX_LEVELS, st.levels().size());
      assertTrue(st.compactions() >= 1);
      assertTrue(st.level(1).entries() >= 1, st.toString());
      VolumeStats vs = db.stats();
      assertTrue(vs.volumeBytes() > 0 && vs.segmentsUsed() > 0, vs.toString());
    }
  }

  @Test
  void aDroppedRegionsSpaceGoesBackToTheFileSystem() {
    byte[] value = new byte[1000];
    try (Parallax db = TestSupport.open(dir)) {
      try (Region big = db.region("big")) {
        for (int i = 0; i < 200_000; i++) big.put(b(String.format("big%08d", i)), value);
        big.flush();
      }
      db.dropRegion("big");
    }
    try (Parallax db = TestSupport.open(dir)) {
      VolumeStats vs = db.stats();
      // 200 MB were written; at rest the volume keeps a 64th of its segments in use free with
      // their blocks, at least 4: 4 here.
      assertTrue(vs.segmentsReleased() > 0, vs.toString());
      assertTrue(vs.segmentsTotal() - vs.segmentsUsed() - vs.segmentsReleased() <= 4, vs.toString());
    }
  }

  @Test
  void compactMergesEverythingIntoTheLastLevelAndFreesTheMediumLog() {
    // A small L0 and growth factor 2: several levels, and medium values in transient logs.
    Options small = Options.builder().l0Size(64 << 10).growthFactor(2).build();
    Region kept;
    try (Parallax db = Parallax.open(dir.resolve("compact.vol"), small);
         Region r = db.region("r")) {
      kept = r;
      for (int i = 0; i < 3; i++) r.put(b("gone" + i), new byte[300]);
      for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 400; i++) r.put(b("k" + i), new byte[300 + round]);
        r.flush();
      }
      for (int i = 0; i < 3; i++) r.delete(b("gone" + i));
      r.flush();
      // Before: two levels or more, the tombstones in an upper one.
      RegionStats before = r.stats();
      long entriesBefore = before.levels().stream().mapToLong(LevelStats::entries).sum();
      assertTrue(before.deepestLevel() >= 2 && entriesBefore > 400, before.toString());
      r.compact();
      RegionStats st = r.stats();
      assertEquals(0, st.placement().mediumLogSegments(), "merged in place: " + st);
      long entries = 0;
      for (LevelStats l : st.levels()) {
        if (l.level() != st.deepestLevel()) assertEquals(0, l.entries(), st.toString());
        entries += l.entries();
      }
      assertEquals(400, entries, "shadowed versions and tombstones dropped: " + st);
      for (int i = 0; i < 400; i++) assertEquals(303, r.get(b("k" + i)).length, "k" + i);
      for (int i = 0; i < 3; i++) assertNull(r.get(b("gone" + i)));
    }
    assertThrows(ParallaxClosedException.class, kept::compact);
  }

  @Test
  void levelStatsCountLeafBytesByClass() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("r")) {
      r.put(b("small"), new byte[10]);
      r.put(b("medium"), new byte[300]);
      r.put(b("large"), new byte[5000]);
      r.flush();
      LevelStats l1 = r.stats().level(1);
      assertTrue(l1.smallBytesWritten() > 0, l1.toString());
      assertTrue(l1.mediumBytesWritten() > 300, l1.toString()); // L1 is the last level: in place
      assertTrue(l1.largeBytesWritten() > 0 && l1.largeBytesWritten() < 5000, l1.toString());
    }
  }

  @Test
  void snapshotViewsStayValidUntilTheSnapshotCloses() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("r")) {
      int[] sizes = {10, 300, 5000, 3 << 20}; // small, medium, large, larger than a segment
      byte[][] vals = new byte[sizes.length][];
      for (int i = 0; i < sizes.length; i++) {
        vals[i] = new byte[sizes[i]];
        for (int j = 0; j < sizes[i]; j++) vals[i][j] = (byte) (i * 7 + j * 13);
        r.put(b("view" + i), vals[i]);
      }
      ByteBuffer[] views = new ByteBuffer[sizes.length];
      Snapshot snap = r.snapshot();
      for (int i = 0; i < sizes.length; i++) {
        views[i] = snap.getView(b("view" + i));
        assertTrue(views[i].isReadOnly());
        assertEquals(ByteBuffer.wrap(vals[i]), views[i]);
      }
      assertNull(snap.getView(b("absent")));
      for (int i = 0; i < sizes.length; i++) r.put(b("view" + i), new byte[sizes[i]]);
      r.flush();
      for (int i = 0; i < sizes.length; i++) assertEquals(ByteBuffer.wrap(vals[i]), views[i]);
      snap.close();
      assertThrows(ParallaxClosedException.class, () -> snap.getView(b("view0")));
      if (Parallax.backend().equals("ffm")) {
        // Zero copy: the engine's memory, revoked with the snapshot.
        assertThrows(IllegalStateException.class, () -> views[0].get(0));
      } else {
        assertEquals(ByteBuffer.wrap(vals[0]), views[0]); // a copy
      }
    }
  }

  @Test
  void largeValuesAndLimits() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("r")) {
      byte[] big = new byte[Parallax.MAX_VALUE_SIZE];
      for (int i = 0; i < big.length; i++) big[i] = (byte) (i * 31);
      r.put(b("big"), big);
      assertArrayEquals(big, r.get(b("big")));
      byte[] mid = new byte[100_000];
      mid[99_999] = 7;
      r.put(b("mid"), mid);
      assertArrayEquals(mid, r.get(b("mid")));
      byte[] maxKey = new byte[Parallax.MAX_KEY_SIZE];
      maxKey[0] = 1;
      r.put(maxKey, b("x"));
      assertEquals("x", s(r.get(maxKey)));
      assertThrows(TooBigException.class, () -> r.put(new byte[Parallax.MAX_KEY_SIZE + 1], b("x")));
      assertThrows(TooBigException.class, () -> r.put(b("k"), new byte[Parallax.MAX_VALUE_SIZE + 1]));
      assertThrows(InvalidArgumentException.class, () -> r.put(new byte[0], b("x")));
    }
  }

  @Test
  void regionsCreateListOpenDrop() {
    try (Parallax db = TestSupport.open(dir)) {
      try (Region a = db.createRegion("a"); Region bb = db.region("b")) {
        a.put(b("1"), b("a1"));
        bb.put(b("1"), b("b1"));
        assertEquals("a1", s(a.get(b("1"))));
        assertEquals("b1", s(bb.get(b("1"))));
        assertThrows(AlreadyExistsException.class, () -> db.createRegion("a"));
        assertThrows(BusyException.class, () -> db.openRegion("a"));
        assertThrows(BusyException.class, () -> db.dropRegion("a"));
      }
      assertEquals(List.of("a", "b"), db.regions());
      assertThrows(NoSuchEntryException.class, () -> db.openRegion("zzz"));
      db.dropRegion("a");
      assertEquals(List.of("b"), db.regions());
      assertThrows(NoSuchEntryException.class, () -> db.dropRegion("a"));
      assertThrows(TooBigException.class, () -> db.region("x".repeat(Parallax.MAX_REGION_NAME + 1)));
      assertThrows(InvalidArgumentException.class, () -> db.region(""));
      assertThrows(InvalidArgumentException.class, () -> db.region("a\0b"));
      try (Region r = db.region("ünïcødé")) {
        r.put(b("k"), b("v"));
      }
      assertTrue(db.regions().contains("ünïcødé"));
    }
  }

  @Test
  void reopenKeepsData() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("r")) {
      for (int i = 0; i < 1000; i++) r.put(b("key" + i), b("value" + i));
    }
    try (Parallax db = TestSupport.open(dir); Region r = db.openRegion("r")) {
      for (int i = 0; i < 1000; i++) assertEquals("value" + i, s(r.get(b("key" + i))));
    }
  }

  @Test
  void volumeErrors() throws Exception {
    Path missing = dir.resolve("missing.vol");
    ParallaxException e = assertThrows(NoSuchEntryException.class,
        () -> Parallax.open(missing, Options.builder().createIfMissing(false).build()));
    assertEquals(ParallaxException.ENOENT, e.status());
    assertFalse(e.getMessage().isEmpty());
    Path junk = dir.resolve("junk.vol");
    byte[] data = new byte[1 << 16];
    java.util.Arrays.fill(data, (byte) 0x5a);
    Files.write(junk, data);
    assertThrows(NotAVolumeException.class, () -> Parallax.open(junk));
    try (Parallax db = TestSupport.open(dir)) {
      assertThrows(BusyException.class, () -> TestSupport.open(dir));
    }
    assertThrows(NullPointerException.class, () -> Parallax.open(null));
    assertThrows(NullPointerException.class, () -> Parallax.open(dir.resolve("x"), null));
    assertThrows(InvalidArgumentException.class, () -> Options.builder().l0Size(0));
    assertThrows(InvalidArgumentException.class, () -> Options.builder().growthFactor(1));
    assertThrows(InvalidArgumentException.class, () -> Options.builder().memoryBudget(100 << 10));
    assertThrows(InvalidArgumentException.class, () -> Options.builder().warmMiB(-1));
  }

  @Test
  void aReopenedRegionWarmsItsTreesUnlessTold() throws Exception {
    Path vol = dir.resolve("warm.vol");
    Options small = Options.builder().l0Size(256 << 10).growthFactor(4).build();
    try (Parallax db = Parallax.open(vol, small); Region r = db.region("r")) {
      byte[] v = new byte[100];
      for (int i = 0; i < 50000; i++) r.put(b(String.format("k%06d", i)), v);
      r.flush();
      assertEquals(0, r.stats().warmBytesRead(), "nothing to warm when the region was created");
    }
    try (Parallax db = Parallax.open(vol, Options.builder().warmMiB(0).build());
        Region r = db.region("r")) {
      assertEquals(0, r.stats().warmBytesRead());
    }
    // By default the warm-up reads the trees into the page cache in the background, and a close
    // records what is in memory (warm.vol.warm) for the next open, which reads and removes it.
    Path record = dir.resolve("warm.vol.warm");
    for (int session = 0; session < 2; session++) {
      try (Parallax db = Parallax.open(vol); Region r = db.region("r")) {
        assertFalse(Files.exists(record), "an open consumes the record");
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (r.stats().warmBytesRead() == 0 && System.nanoTime() < deadline) Thread.sleep(10);
        assertTrue(r.stats().warmBytesRead() > 0, r.stats().toString());
        assertArrayEquals(new byte[100], r.get(b("k012345")));
      }
      assertTrue(Files.exists(record), "the close recorded the warmed pages");
    }
  }

  @Test
  void memoryBudgetBoundsTheRegionsTwoL0s() {
    assertEquals(32L << 20, Options.builder().memoryBudget(64L << 20).build().l0Size);
    Options o = Options.builder().memoryBudget(512 << 10).build();
    try (Parallax db = Parallax.open(dir.resolve("budget.vol"), o); Region r = db.region("r")) {
      byte[] v = new byte[100];
      for (int i = 0; i < 20000; i++) r.put(b(String.format("k%06d", i)), v);
      RegionStats st = r.stats();
      assertTrue(st.compactions() >= 2, st.toString()); // 2.4 MB through a 256 KiB L0
    }
  }

  @Test
  void optionsReachTheEngine() {
    Options o = Options.builder().l0Size(256 << 10).growthFactor(4).compactionThreads(2)
        .useDirectIo(false).maxVolumeSize(1L << 30).createIfMissing(true)
        .durabilityInterval(java.time.Duration.ofMillis(20)).placement(Options.Placement.HYBRID)
        .smallThreshold(120).largeThreshold(1024).gcThresholdPercent(10).mediumMergeLevel(0).build();
    try (Parallax db = Parallax.open(dir.resolve("o.vol"), o); Region r = db.region("r")) {
      byte[] v = new byte[1000];
      for (int i = 0; i < 2000; i++) r.put(b(String.format("k%06d", i)), v);
      r.flush();
      RegionStats st = r.stats();
      assertTrue(st.compactions() >= 2, "a 256 KiB L0 compacts 2 MB of data several times");
      RegionStats.Placement p = st.placement();
      assertEquals(st.puts(), p.smallPuts() + p.mediumPuts() + p.largePuts(), st.toString());
    }
  }

  @Test
  void largeValuesAreCopiedInKeyOrderOnlyWhenAsked() {
    for (boolean sort : new boolean[] {true, false}) {
      Options o = Options.builder().l0Size(64 << 10).growthFactor(2).sortLargeValues(sort).build();
      try (Parallax db = Parallax.open(dir.resolve("sort-" + sort + ".vol"), o);
           Region r = db.region("r")) {
        for (int i = 0; i < 3000; i++) {
          int k = (int) ((long) i * 7919 % 3000);
          r.put(b(String.format("k%06d", k)), value(k, 1100));
        }
        r.compact();
        RegionStats.Placement p = r.stats().placement();
        if (sort) {
          // Every value is copied in key order by the merge into the last level, unless GC
          // relocated it first: relocated values are settled, and merges leave them in place.
          assertTrue(p.largeLogBytesSorted() > 0, p.toString());
          assertTrue(p.largeLogBytesSorted() + p.gcBytesRelocated() >= p.largeBytes(), p.toString());
        } else {
          assertEquals(0, p.largeLogBytesSorted(), p.toString());
        }
        try (Scanner sc = r.scanner()) {
          int k = 0;
          for (sc.seekToFirst(); sc.isValid(); sc.next(), k++) {
            assertEquals(String.format("k%06d", k), s(sc.key()));
            assertArrayEquals(value(k, 1100), sc.value());
          }
          assertEquals(3000, k);
        }
      }
    }
  }

  private static byte[] value(int k, int len) {
    byte[] v = new byte[len];
    for (int i = 0; i < len; i++) v[i] = (byte) (k * 31 + i);
    return v;
  }

  @Test
  void writeBatchIsAtomicAndReusable() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("r");
        WriteBatch batch = new WriteBatch()) {
      r.put(b("gone"), b("x"));
      batch.put(b("a"), b("1")).put(b("b"), b("2")).delete(b("gone"));
      batch.put(java.nio.ByteBuffer.wrap(b("c")), java.nio.ByteBuffer.allocateDirect(3));
      assertEquals(4, batch.count());
      r.write(batch, WriteOptions.SYNC);
      assertEquals("1", s(r.get(b("a"))));
      assertEquals("2", s(r.get(b("b"))));
      assertArrayEquals(new byte[3], r.get(b("c")));
      assertNull(r.get(b("gone")));
      batch.clear();
      assertEquals(0, batch.count());
      batch.delete(b("a"));
      r.write(batch);
      assertNull(r.get(b("a")));
      batch.clear();
      // Values up to 1 MiB (PAR_MAX_INLINE_VALUE) count whole against the batch limit.
      byte[] v = new byte[1 << 20];
      batch.put(b("x1"), v);
      assertThrows(TooBigException.class, () -> batch.put(b("x2"), v));
      assertThrows(NullPointerException.class, () -> r.write(null));
    }
  }

  @Test
  void snapshotsIgnoreLaterWrites() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("r")) {
      r.put(b("a"), b("1"));
      try (Snapshot snap = r.snapshot()) {
        r.put(b("a"), b("2"));
        r.put(b("b"), b("new"));
        r.flush();
        assertEquals("1", s(snap.get(b("a"))));
        assertNull(snap.get(b("b")));
        assertFalse(snap.exists(b("b")));
        assertEquals("2", s(r.get(b("a"))));
        try (Scanner sc = snap.scanner()) {
          assertTrue(sc.isValid());
          assertEquals("a", s(sc.key()));
          assertEquals("1", s(sc.value()));
          assertFalse(sc.next());
        }
        java.nio.ByteBuffer dst = java.nio.ByteBuffer.allocate(8);
        assertEquals(1, snap.get(java.nio.ByteBuffer.wrap(b("a")), dst));
        assertEquals('1', dst.get(0));
      }
    }
  }
}
