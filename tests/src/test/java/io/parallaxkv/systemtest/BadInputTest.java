package io.parallaxkv.systemtest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.parallaxkv.InvalidArgumentException;
import io.parallaxkv.NoSpaceException;
import io.parallaxkv.Options;
import io.parallaxkv.Parallax;
import io.parallaxkv.ParallaxClosedException;
import io.parallaxkv.ParallaxException;
import io.parallaxkv.Region;
import io.parallaxkv.ScanOptions;
import io.parallaxkv.Scanner;
import io.parallaxkv.Snapshot;
import io.parallaxkv.TooBigException;
import io.parallaxkv.WriteBatch;
import io.parallaxkv.WriteOptions;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bad input through every entry point that engine-java's LifecycleTest, BasicTest and
 * BufferVariantsTest leave out: each gets its specific exception, the JVM survives, and the data
 * written before (small, medium and large pairs) reads back after the volume is reopened.
 */
class BadInputTest {
  private static final int KEYS = 300;
  private static final byte[] EMPTY = new byte[0];
  private static final byte[] HUGE_KEY = new byte[Parallax.MAX_KEY_SIZE + 1];

  @TempDir Path dir;
  private Path volume;

  static Options options() {
    return Options.builder().l0Size(1L << 20).durabilityInterval(Duration.ofMillis(10)).build();
  }

  static byte[] key(int i) {
    return String.format("before-%05d", i).getBytes(StandardCharsets.US_ASCII);
  }

  /** Sizes cycle through the small, medium and large classes. */
  static byte[] value(int i) {
    byte[] v = new byte[new int[] {20, 500, 4000}[i % 3] + i];
    for (int j = 0; j < v.length; j++) v[j] = (byte) (i * 31 + j);
    return v;
  }

  @BeforeEach
  void writeData() {
    volume = dir.resolve("bad.vol");
    try (Parallax db = Parallax.open(volume, options()); Region r = db.region("r")) {
      for (int i = 0; i < KEYS; i++) r.put(key(i), value(i));
    }
  }

  /** Reopens the volume and checks the data written before, through gets and a scan. */
  private void checkDataSurvived() {
    try (Parallax db = Parallax.open(volume, options()); Region r = db.openRegion("r")) {
      for (int i = 0; i < KEYS; i++) assertArrayEquals(value(i), r.get(key(i)), "key " + i);
      byte[] prefix = "before-".getBytes(StandardCharsets.US_ASCII);
      try (Scanner s = r.scanner(ScanOptions.builder().prefix(prefix).build())) {
        for (int i = 0; i < KEYS; i++, s.next()) {
          assertTrue(s.isValid());
          assertArrayEquals(key(i), s.key());
          assertArrayEquals(value(i), s.value());
        }
        assertFalse(s.isValid());
      }
    }
  }

  private static ByteBuffer direct(byte[] b) {
    return ByteBuffer.allocateDirect(b.length).put(b).flip();
  }

  @Test
  void regionWritesAndReads() {
    try (Parallax db = Parallax.open(volume, options()); Region r = db.openRegion("r")) {
      byte[] k = key(0);
      ByteBuffer kb = ByteBuffer.wrap(k);
      assertThrows(NullPointerException.class, () -> r.put(kb, (ByteBuffer) null));
      assertThrows(NullPointerException.class, () -> r.put(kb, ByteBuffer.allocate(1), null));
      assertThrows(InvalidArgumentException.class,
          () -> r.put(ByteBuffer.allocate(0), ByteBuffer.allocate(1)));
      // A buffer that was filled but not flipped has no remaining bytes: an empty key.
      ByteBuffer unflipped = ByteBuffer.allocateDirect(k.length).put(k);
      assertThrows(InvalidArgumentException.class, () -> r.put(unflipped, direct(value(1))));
      assertThrows(TooBigException.class, () -> r.put(ByteBuffer.wrap(HUGE_KEY), ByteBuffer.allocate(1)));
      assertThrows(TooBigException.class,
          () -> r.put(kb, ByteBuffer.allocate(Parallax.MAX_VALUE_SIZE + 1)));
      assertThrows(NullPointerException.class, () -> r.delete((ByteBuffer) null));
      assertThrows(NullPointerException.class, () -> r.delete(k, null));
      assertThrows(NullPointerException.class, () -> r.delete(kb, null));
      assertThrows(InvalidArgumentException.class, () -> r.delete(EMPTY));
      assertThrows(InvalidArgumentException.class, () -> r.delete(ByteBuffer.allocateDirect(0)));
      assertThrows(TooBigException.class, () -> r.delete(HUGE_KEY));
      assertThrows(TooBigException.class, () -> r.delete(direct(HUGE_KEY)));
      assertThrows(InvalidArgumentException.class, () -> r.exists(EMPTY));
      assertThrows(NullPointerException.class, () -> r.exists((ByteBuffer) null));
      assertThrows(TooBigException.class, () -> r.exists(HUGE_KEY));
      assertThrows(TooBigException.class, () -> r.get(ByteBuffer.wrap(HUGE_KEY)));
      assertThrows(NullPointerException.class, () -> r.get((ByteBuffer) null));
      assertThrows(NullPointerException.class, () -> r.get((byte[]) null, ByteBuffer.allocate(8)));
      assertThrows(InvalidArgumentException.class, () -> r.get(k, ByteBuffer.allocate(8).asReadOnlyBuffer()));
      assertThrows(InvalidArgumentException.class,
          () -> r.get(kb, ByteBuffer.allocateDirect(8).asReadOnlyBuffer()));
      assertEquals(0, kb.position(), "a rejected call leaves the buffer alone");
      // Edge values that are valid: an empty value, a key of exactly the limit, binary keys.
      byte[] maxKey = new byte[Parallax.MAX_KEY_SIZE];
      maxKey[0] = (byte) 0xff;
      r.put(direct(maxKey), ByteBuffer.allocateDirect(0));
      assertArrayEquals(EMPTY, r.get(direct(maxKey)));
      byte[] zeros = new byte[3];
      r.put(zeros, value(2));
      assertArrayEquals(value(2), r.get(zeros));
      r.delete(maxKey, WriteOptions.SYNC);
      assertNull(r.get(maxKey));
    }
    checkDataSurvived();
  }

  @Test
  void snapshotsScannersAndScanOptions() {
    try (Parallax db = Parallax.open(volume, options()); Region r = db.openRegion("r");
        Snapshot snap = r.snapshot(); Scanner sc = r.scanner()) {
      assertThrows(NullPointerException.class, () -> snap.get((byte[]) null));
      assertThrows(InvalidArgumentException.class, () -> snap.get(EMPTY));
      assertThrows(TooBigException.class, () -> snap.get(HUGE_KEY));
      assertThrows(NullPointerException.class, () -> snap.exists((ByteBuffer) null));
      assertThrows(TooBigException.class, () -> snap.exists(HUGE_KEY));
      assertThrows(NullPointerException.class, () -> snap.getView((byte[]) null));
      assertThrows(InvalidArgumentException.class, () -> snap.getView(ByteBuffer.allocate(0)));
      assertThrows(TooBigException.class, () -> snap.getView(HUGE_KEY));
      assertThrows(InvalidArgumentException.class,
          () -> snap.get(ByteBuffer.wrap(key(0)), ByteBuffer.allocate(64).asReadOnlyBuffer()));
      assertThrows(NullPointerException.class, () -> snap.scanner(null));

      assertTrue(sc.isValid());
      assertThrows(NullPointerException.class, () -> sc.seekAfter((byte[]) null));
      assertThrows(InvalidArgumentException.class, () -> sc.seekAfter(EMPTY));
      assertThrows(TooBigException.class, () -> sc.seek(HUGE_KEY));
      assertThrows(NullPointerException.class, () -> sc.seek((ByteBuffer) null));
      assertThrows(InvalidArgumentException.class, () -> sc.seek(ByteBuffer.allocateDirect(0)));
      assertThrows(InvalidArgumentException.class, () -> sc.key(ByteBuffer.allocate(64).asReadOnlyBuffer()));
      assertThrows(NullPointerException.class, () -> sc.value((ByteBuffer) null));
      assertArrayEquals(key(0), sc.key(), "rejected calls do not move the scanner");
      assertFalse(sc.seekAfter(new byte[] {(byte) 0xff}));
      assertThrows(IllegalStateException.class, sc::keyLength);
      assertThrows(IllegalStateException.class, sc::valueView);
      assertThrows(IllegalStateException.class, () -> sc.value(ByteBuffer.allocate(8)));
      assertTrue(sc.seekToFirst(), "an exhausted scanner can start over");

      assertThrows(NullPointerException.class, () -> ScanOptions.builder().lowerBound(null));
      assertThrows(InvalidArgumentException.class, () -> ScanOptions.builder().upperBound(EMPTY));
      assertThrows(TooBigException.class, () -> ScanOptions.builder().lowerBound(HUGE_KEY, false));
      // The builder copies its arrays: changing them afterwards does not change the range.
      byte[] prefix = "before-0000".getBytes(StandardCharsets.US_ASCII);
      ScanOptions o = ScanOptions.builder().prefix(prefix).build();
      prefix[0] = 'z';
      try (Scanner p = r.scanner(o)) {
        int n = 0;
        for (; p.isValid(); p.next()) n++;
        assertEquals(10, n, "before-00000..before-00009");
      }
    }
    checkDataSurvived();
  }

  @Test
  void batches() {
    try (Parallax db = Parallax.open(volume, options()); Region r = db.openRegion("r");
        WriteBatch wb = new WriteBatch()) {
      assertThrows(NullPointerException.class, () -> wb.put(key(0), null));
      assertThrows(InvalidArgumentException.class, () -> wb.put(EMPTY, value(0)));
      assertThrows(NullPointerException.class, () -> wb.put((ByteBuffer) null, ByteBuffer.allocate(1)));
      assertThrows(NullPointerException.class, () -> wb.put(ByteBuffer.wrap(key(0)), null));
      assertThrows(TooBigException.class, () -> wb.put(key(0), new byte[Parallax.MAX_VALUE_SIZE + 1]));
      assertThrows(NullPointerException.class, () -> wb.delete((byte[]) null));
      assertThrows(InvalidArgumentException.class, () -> wb.delete(ByteBuffer.allocate(0)));
      assertEquals(0, wb.count(), "rejected ops are not added");
      // Fill the batch up to its encoded limit; the op that does not fit is refused alone.
      byte[] chunk = new byte[100_000];
      List<byte[]> added = new ArrayList<>();
      TooBigException full = null;
      for (int i = 0; full == null; i++) {
        byte[] k = ("batch-" + i).getBytes(StandardCharsets.US_ASCII);
        try {
          wb.put(k, chunk);
          added.add(k);
        } catch (TooBigException e) {
          full = e;
        }
      }
      assertEquals(ParallaxException.ETOOBIG, full.status());
      assertEquals(added.size(), wb.count());
      assertTrue(added.size() * 100_000L <= Parallax.MAX_BATCH_SIZE);
      assertThrows(NullPointerException.class, () -> r.write(wb, null));
      r.write(wb, WriteOptions.SYNC);
      for (byte[] k : added) assertArrayEquals(chunk, r.get(k));
    }
    checkDataSurvived();
  }

  @Test
  void namesOptionsAndPaths() throws Exception {
    try (Parallax db = Parallax.open(volume, options())) {
      assertThrows(NullPointerException.class, () -> db.region(null));
      assertThrows(NullPointerException.class, () -> db.openRegion(null));
      assertThrows(NullPointerException.class, () -> db.createRegion(null));
      assertThrows(NullPointerException.class, () -> db.dropRegion(null));
    }
    assertThrows(InvalidArgumentException.class, () -> Options.builder().gcThresholdPercent(0));
    assertThrows(InvalidArgumentException.class, () -> Options.builder().gcThresholdPercent(101));
    assertThrows(InvalidArgumentException.class, () -> Options.builder().compactionThreads(0));
    assertThrows(InvalidArgumentException.class, () -> Options.builder().smallThreshold(0));
    assertThrows(InvalidArgumentException.class, () -> Options.builder().largeThreshold(-1));
    assertThrows(InvalidArgumentException.class, () -> Options.builder().mediumMergeLevel(2));
    assertThrows(InvalidArgumentException.class, () -> Options.builder().maxVolumeSize(-1));
    assertThrows(NullPointerException.class, () -> Options.builder().placement(null));
    assertThrows(InvalidArgumentException.class,
        () -> Options.builder().durabilityInterval(Duration.ZERO));
    assertThrows(InvalidArgumentException.class,
        () -> Options.builder().durabilityInterval(Duration.ofMillis(-5)));
    // Options the builder cannot judge alone are refused by the engine at open.
    assertThrows(InvalidArgumentException.class, () -> Parallax.open(dir.resolve("o1.vol"),
        Options.builder().smallThreshold(2000).largeThreshold(100).build()));
    assertThrows(InvalidArgumentException.class,
        () -> Parallax.open(dir.resolve("o2.vol"), Options.builder().l0Size(1).build()));
    assertThrows(InvalidArgumentException.class,
        () -> Parallax.open(dir.resolve("o3.vol"), Options.builder().maxVolumeSize(1).build()));
    // Paths that are not volume files fail with an engine error, not a crash.
    Path sub = Files.createDirectory(dir.resolve("a-directory"));
    assertThrows(ParallaxException.class, () -> Parallax.open(sub, options()));
    assertThrows(ParallaxException.class,
        () -> Parallax.open(dir.resolve("no-such-dir").resolve("x.vol"), options()));
    checkDataSurvived();
  }

  /** Options.Builder documents InvalidArgumentException for every invalid setter argument. */
  @Test
  void nullDurabilityIntervalIsAnInvalidArgument() {
    assertThrows(NullPointerException.class, () -> Options.builder().durabilityInterval(null));
  }

  private static final Options SMALL_VOLUME =
      Options.builder().l0Size(1L << 20).maxVolumeSize(32L << 20).build();

  /**
   * Writes 1 MiB values into a 32 MiB volume until NoSpaceException, checks that every
   * acknowledged one reads back, and closes the volume (whose close may report ENOSPC too: it
   * still closes). Returns how many were acknowledged.
   */
  private static int fillVolume(Path path) {
    byte[] big = new byte[1 << 20];
    int acked = 0;
    Parallax db = Parallax.open(path, SMALL_VOLUME);
    try (Region r = db.region("r")) {
      NoSpaceException full = null;
      while (full == null) {
        big[0] = (byte) acked;
        try {
          r.put(key(acked), big);
          acked++;
        } catch (NoSpaceException e) {
          full = e;
        }
        assertTrue(acked < 64, "a 32 MiB volume took " + acked + " MiB");
      }
      assertEquals(ParallaxException.ENOSPC, full.status());
      assertTrue(acked > 0);
      checkBig(r, acked);
    } finally {
      try {
        db.close();
      } catch (NoSpaceException e) {
        assertFalse(db.isOpen());
      }
    }
    return acked;
  }

  private static void checkBig(Region r, int acked) {
    for (int i = 0; i < acked; i++) {
      byte[] v = r.get(key(i));
      assertEquals(1 << 20, v.length, "key " + i);
      assertEquals((byte) i, v[0], "key " + i);
    }
  }

  /** A full volume refuses writes with NoSpaceException and loses nothing acknowledged. */
  @Test
  void fullVolume() {
    Path small = dir.resolve("small.vol");
    int acked = fillVolume(small);
    Options larger = Options.builder().l0Size(1L << 20).maxVolumeSize(64L << 20).build();
    try (Parallax db = Parallax.open(small, larger); Region r = db.openRegion("r")) {
      checkBig(r, acked);
      r.put(key(acked), new byte[1 << 20]);
    }
    checkDataSurvived();
  }

  /** A volume that filled up must open again with the options it was created with. */
  @Test
  void fullVolumeReopensWithItsOwnOptions() {
    Path small = dir.resolve("small.vol");
    int acked = fillVolume(small);
    try (Parallax db = Parallax.open(small, SMALL_VOLUME); Region r = db.openRegion("r")) {
      checkBig(r, acked);
    }
  }

  @Test
  void closedHandles() {
    Parallax db = Parallax.open(volume, options());
    Region r = db.openRegion("r");
    Snapshot snap = r.snapshot();
    Scanner fromSnap = snap.scanner();
    r.put(key(0), value(1));
    r.flush();
    snap.close();
    snap.close();
    assertFalse(snap.isOpen());
    assertThrows(ParallaxClosedException.class, () -> snap.exists(key(0)));
    assertThrows(ParallaxClosedException.class,
        () -> snap.get(ByteBuffer.wrap(key(0)), ByteBuffer.allocate(8)));
    assertThrows(ParallaxClosedException.class, snap::scanner);
    assertThrows(ParallaxClosedException.class, () -> snap.getView(ByteBuffer.wrap(key(0))));
    // A scanner opened from the snapshot outlives it and still reads the snapshot's state.
    assertTrue(fromSnap.isOpen());
    for (int i = 0; i < KEYS; i++, fromSnap.next()) assertArrayEquals(value(i), fromSnap.value());
    assertFalse(fromSnap.isValid());
    fromSnap.close();

    Scanner sc = r.scanner();
    ByteBuffer keyView = sc.keyView();
    ByteBuffer valueView = sc.valueView();
    sc.close();
    sc.close();
    assertFalse(sc.isOpen());
    assertThrows(ParallaxClosedException.class, sc::seekToFirst);
    assertThrows(ParallaxClosedException.class, () -> sc.seek(key(1)));
    assertThrows(ParallaxClosedException.class, () -> sc.seekAfter(ByteBuffer.wrap(key(1))));
    assertThrows(ParallaxClosedException.class, sc::value);
    assertThrows(ParallaxClosedException.class, sc::keyView);
    assertThrows(ParallaxClosedException.class, sc::valueLength);
    assertThrows(ParallaxClosedException.class, () -> sc.key(ByteBuffer.allocate(64)));
    // Views of a closed scanner: FFM revokes them, JNI's copies stay readable; never a crash.
    for (ByteBuffer view : List.of(keyView, valueView)) {
      if (Parallax.backend().equals("ffm")) {
        assertThrows(IllegalStateException.class, () -> view.get(0));
      } else {
        view.get(new byte[view.remaining()]);
      }
    }

    WriteBatch wb = new WriteBatch().put(key(5), value(9));
    wb.close();
    assertThrows(ParallaxClosedException.class, () -> r.write(wb));
    assertThrows(ParallaxClosedException.class, wb::clear);
    assertArrayEquals(value(5), r.get(key(5)), "a closed batch writes nothing");
    r.put(key(0), value(0), WriteOptions.SYNC);

    db.close();
    assertFalse(r.isOpen());
    assertTrue(db.toString().contains("closed"), db.toString());
    assertThrows(ParallaxClosedException.class, db::stats);
    assertThrows(ParallaxClosedException.class, () -> db.openRegion("r"));
    assertThrows(ParallaxClosedException.class, () -> db.createRegion("new"));
    assertThrows(ParallaxClosedException.class, () -> db.dropRegion("r"));
    checkDataSurvived();
  }
}
