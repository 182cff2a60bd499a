package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static io.parallaxkv.TestSupport.s;
import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ScannerTest {
  @TempDir Path dir;
  Parallax db;
  Region r;

  @BeforeEach
  void open() {
    db = TestSupport.open(dir);
    r = db.region("r");
    for (String k : new String[] {"a", "b1", "b2", "b3", "c", "d"}) r.put(b(k), b("v" + k));
  }

  @AfterEach
  void close() {
    db.close();
  }

  static List<String> keys(Scanner s) {
    List<String> out = new ArrayList<>();
    for (; s.isValid(); s.next()) out.add(s(s.key()));
    return out;
  }

  /** From the current entry backwards, in the order visited. */
  static List<String> keysBack(Scanner s) {
    List<String> out = new ArrayList<>();
    for (; s.isValid(); s.prev()) out.add(s(s.key()));
    return out;
  }

  @Test
  void fullScanAndSeeks() {
    try (Scanner s = r.scanner()) {
      assertEquals(List.of("a", "b1", "b2", "b3", "c", "d"), keys(s));
      assertFalse(s.next());
      assertTrue(s.seek(b("b")));
      assertEquals("b1", s(s.key()));
      assertTrue(s.seek(b("b2")));
      assertEquals("b2", s(s.key()));
      assertTrue(s.seekAfter(b("b2")));
      assertEquals("b3", s(s.key()));
      assertEquals("vb3", s(s.value()));
      assertFalse(s.seekAfter(b("d")));
      assertFalse(s.isValid());
      assertThrows(IllegalStateException.class, s::key);
      assertTrue(s.seekToFirst());
      assertEquals("a", s(s.key()));
      assertTrue(s.seek(ByteBuffer.allocateDirect(1).put((byte) 'c').flip()));
      assertEquals("c", s(s.key()));
    }
  }

  @Test
  void boundsAndPrefix() {
    try (Scanner s = r.scanner(ScanOptions.builder().prefix(b("b")).build())) {
      assertEquals(List.of("b1", "b2", "b3"), keys(s));
      assertTrue(s.seek(b("a")));
      assertEquals("b1", s(s.key()));
      assertFalse(s.seek(b("c")));
    }
    try (Scanner s = r.scanner(ScanOptions.builder().lowerBound(b("b1"), false)
        .upperBound(b("c"), true).build())) {
      assertEquals(List.of("b2", "b3", "c"), keys(s));
      assertTrue(s.seek(b("b1")));
      assertEquals("b2", s(s.key()));
    }
    try (Scanner s = r.scanner(ScanOptions.builder().lowerBound(b("b2")).upperBound(b("c")).build())) {
      assertEquals(List.of("b2", "b3"), keys(s));
    }
    try (Scanner s = r.scanner(ScanOptions.builder().prefix(b("zz")).build())) {
      assertFalse(s.isValid());
    }
  }

  /** Readahead is a hint: shorter or longer than the scan, the entries are the same. */
  @Test
  void readaheadIsAHint() {
    for (int n : new int[] {0, 1, 2, 1024, Integer.MAX_VALUE}) {
      try (Scanner s = r.scanner(ScanOptions.builder().lowerBound(b("b")).readahead(n).build())) {
        assertEquals(List.of("b1", "b2", "b3", "c", "d"), keys(s), "readahead " + n);
        assertTrue(s.seekToLast());
        assertEquals(List.of("d", "c", "b3", "b2", "b1"), keysBack(s), "readahead " + n);
      }
    }
    assertThrows(InvalidArgumentException.class, () -> ScanOptions.builder().readahead(-1));
  }

  @Test
  void reverseScansAndDirectionChanges() {
    r.delete(b("c"));
    try (Scanner s = r.scanner()) {
      assertTrue(s.seekToLast());
      assertEquals(List.of("d", "b3", "b2", "b1", "a"), keysBack(s));
      assertFalse(s.prev(), "past the front stays there");
      assertTrue(s.seekForPrev(b("b2")));
      assertEquals("b2", s(s.key()));
      assertTrue(s.seekForPrev(b("c")), "c is deleted");
      assertEquals("b3", s(s.key()));
      assertEquals("vb3", s(s.value()));
      assertTrue(s.next());
      assertEquals("d", s(s.key()));
      assertTrue(s.prev());
      assertEquals("b3", s(s.key()));
      assertTrue(s.prev());
      assertTrue(s.next());
      assertEquals("b3", s(s.key()));
      assertFalse(s.seekForPrev(b("0")));
      assertThrows(IllegalStateException.class, s::value);
      assertTrue(s.seekForPrev(ByteBuffer.allocateDirect(2).put((byte) 'b').put((byte) '9').flip()));
      assertEquals("b3", s(s.key()));
    }
    r.flush(); // the same from a device level, with L0 shadowing it
    r.put(b("b25"), b("new"));
    r.delete(b("b3"));
    try (Scanner s = r.scanner()) {
      assertTrue(s.seekToLast());
      assertEquals(List.of("d", "b25", "b2", "b1", "a"), keysBack(s));
    }
  }

  @Test
  void reverseHonoursBoundsAndPrefix() {
    r.put(b("b\u00ff"), b("x"));
    try (Scanner s = r.scanner(ScanOptions.builder().prefix(b("b")).build())) {
      assertTrue(s.seekToLast());
      assertEquals(List.of("b\u00ff", "b3", "b2", "b1"), keysBack(s));
      assertTrue(s.seekForPrev(b("z")));
      assertEquals("b\u00ff", s(s.key()));
      assertTrue(s.seekForPrev(b("b2x")));
      assertEquals("b2", s(s.key()));
      assertFalse(s.seekForPrev(b("a")));
      assertTrue(s.seekToFirst());
      assertFalse(s.prev(), "the prefix's first key has no predecessor in range");
    }
    try (Scanner s = r.scanner(ScanOptions.builder().lowerBound(b("b1"), false)
        .upperBound(b("c"), true).build())) {
      assertTrue(s.seekToLast());
      assertEquals(List.of("c", "b\u00ff", "b3", "b2"), keysBack(s));
    }
    try (Scanner s = r.scanner(ScanOptions.builder().lowerBound(b("b1"), false)
        .upperBound(b("c"), false).build())) {
      assertTrue(s.seekToLast());
      assertEquals(List.of("b\u00ff", "b3", "b2"), keysBack(s));
      assertTrue(s.seekForPrev(b("c")));
      assertEquals("b\u00ff", s(s.key()));
    }
    byte[] ff = {(byte) 0xff, (byte) 0xff};
    r.put(ff, b("top"));
    r.put(new byte[] {(byte) 0xff, (byte) 0xff, 1}, b("top1"));
    try (Scanner s = r.scanner(ScanOptions.builder().prefix(ff).build())) {
      assertTrue(s.seekToLast(), "a prefix of 0xff bytes has no end key");
      assertEquals("top1", s(s.value()));
      assertTrue(s.prev());
      assertEquals("top", s(s.value()));
      assertFalse(s.prev());
    }
  }

  @Test
  void nullArgumentsAndNoEntry() {
    try (Scanner s = r.scanner()) {
      assertThrows(NullPointerException.class, () -> s.seek((byte[]) null));
      assertThrows(NullPointerException.class, () -> s.seek((ByteBuffer) null));
      assertThrows(NullPointerException.class, () -> s.seekAfter((byte[]) null));
      assertThrows(NullPointerException.class, () -> s.seekAfter((ByteBuffer) null));
      assertThrows(NullPointerException.class, () -> s.seekForPrev((byte[]) null));
      assertThrows(NullPointerException.class, () -> s.seekForPrev((ByteBuffer) null));
      assertThrows(NullPointerException.class, () -> s.key(null));
      assertThrows(NullPointerException.class, () -> s.value(null));
      assertFalse(s.seekAfter(b("z")));
      assertThrows(IllegalStateException.class, s::key);
      assertThrows(IllegalStateException.class, s::value);
      assertThrows(IllegalStateException.class, s::keyLength);
      assertThrows(IllegalStateException.class, s::valueLength);
      assertThrows(IllegalStateException.class, s::keyView);
      assertThrows(IllegalStateException.class, s::valueView);
      assertThrows(IllegalStateException.class, () -> s.value(ByteBuffer.allocate(4)));
      assertFalse(s.next());
      assertFalse(s.prev());
    }
  }

  /** Key-only scans, and the first key past the upper bound, read no large value. */
  @Test
  void valuesAreReadLazily() {
    byte[] large = new byte[8 << 10];
    new java.util.Random(3).nextBytes(large);
    for (int i = 0; i < 10; i++) r.put(b("L" + i), large);
    for (int round = 0; round < 2; round++) {
      long before = r.stats().placement().largeLogValueReads();
      try (Scanner s = r.scanner(ScanOptions.builder().lowerBound(b("L2")).upperBound(b("L5"))
          .build())) {
        assertEquals(List.of("L2", "L3", "L4"), keys(s));
        assertTrue(s.seekToLast());
        assertEquals(List.of("L4", "L3", "L2"), keysBack(s));
      }
      try (Scanner s = r.scanner()) {
        int n = 0;
        for (; s.isValid(); s.next()) n++;
        assertEquals(16, n);
      }
      assertEquals(before, r.stats().placement().largeLogValueReads(), "key-only scans");
      try (Scanner s = r.scanner()) {
        assertTrue(s.seek(b("L7")));
        assertEquals(large.length, s.valueLength());
        assertArrayEquals(large, s.value());
        assertArrayEquals(large, bytes(s.valueView()));
      }
      assertEquals(before + 1, r.stats().placement().largeLogValueReads(), "one value, once");
      r.flush();
    }
  }

  /**
   * A scanner keeps its region reachable, so the region's Cleaner cannot close it (and with it
   * the scanner, whose close would wait forever for the views this thread holds) under it.
   */
  @Test
  void scannerKeepsItsRegionReachable() throws Exception {
    r.close();
    List<java.lang.ref.WeakReference<Region>> region = new ArrayList<>();
    Scanner s = openScannerOnDroppedRegion(db, region);
    ByteBuffer view = s.keyView(); // on FFM, a view the Cleaner's close would wait for
    for (int i = 0; i < 3; i++) {
      System.gc(); // clears weak references to whatever it finds unreachable
      Thread.sleep(20);
    }
    assertNotNull(region.get(0).get(), "the region was collected under its scanner");
    assertTrue(s.isOpen());
    assertEquals('a', view.get(0));
    assertEquals(List.of("a", "b1", "b2", "b3", "c", "d"), keys(s));
    s.close();
  }

  private static Scanner openScannerOnDroppedRegion(Parallax db,
      List<java.lang.ref.WeakReference<Region>> out) {
    Region dropped = db.region("r");
    out.add(new java.lang.ref.WeakReference<>(dropped));
    return dropped.scanner();
  }

  @Test
  void entryAccessors() {
    try (Scanner s = r.scanner()) {
      assertEquals(1, s.keyLength());
      assertEquals(2, s.valueLength());
      ByteBuffer kv = s.keyView();
      assertTrue(kv.isReadOnly());
      assertEquals('a', kv.get(0));
      assertEquals("va", s(bytes(s.valueView())));
      ByteBuffer dst = ByteBuffer.allocateDirect(8);
      assertEquals(2, s.value(dst));
      assertEquals(2, dst.position());
      ByteBuffer tiny = ByteBuffer.allocate(1);
      assertEquals(2, s.value(tiny));
      assertEquals(0, tiny.position());
      ByteBuffer heap = ByteBuffer.allocate(4);
      assertEquals(1, s.key(heap));
      assertEquals('a', heap.get(0));
    }
  }

  static byte[] bytes(ByteBuffer b) {
    byte[] a = new byte[b.remaining()];
    b.duplicate().get(a);
    return a;
  }

  /** Views of small, medium and large values, in L0 and (after a flush) on the device levels. */
  @Test
  void viewsHoldTheCurrentEntry() {
    byte[] medium = new byte[500];
    byte[] large = new byte[64 << 10];
    java.util.Arrays.fill(medium, (byte) 'm');
    new java.util.Random(7).nextBytes(large);
    r.put(b("m"), medium);
    r.put(b("n"), large);
    for (int round = 0; round < 2; round++) {
      try (Scanner s = r.scanner()) {
        int n = 0;
        for (; s.isValid(); s.next(), n++) {
          ByteBuffer k = s.keyView();
          ByteBuffer v = s.valueView();
          assertTrue(k.isReadOnly() && v.isReadOnly());
          assertArrayEquals(s.key(), bytes(k));
          assertArrayEquals(s.value(), bytes(v));
          assertArrayEquals(s.value(), bytes(s.valueView()), "a second view of the entry");
          if (s(s.key()).equals("n")) assertArrayEquals(large, bytes(v));
          if (s(s.key()).equals("m")) assertArrayEquals(medium, bytes(v));
        }
        assertEquals(8, n);
      }
      r.flush();
    }
    try (Scanner s = r.scanner()) {
      s.seek(b("b2"));
      assertTrue(s.seekAfter(s.keyView()), "a view as the seek key");
      assertEquals("b3", s(s.key()));
    }
  }

  @Test
  void jniViewsAreCopiesThatStayReadable() {
    assumeTrue("jni".equals(Parallax.backend()), "JNI views are copies");
    try (Scanner s = r.scanner()) {
      ByteBuffer k = s.keyView();
      assertEquals("a", s(bytes(k)));
      s.next();
      assertEquals(1, k.remaining());
      k.get(0); // another entry's byte now, but never an error
    }
  }

  @Test
  void scannerSeesSnapshotWhileWritesContinue() {
    try (Scanner s = r.scanner()) {
      r.put(b("aa"), b("new"));
      r.delete(b("c"));
      r.flush();
      assertEquals(List.of("a", "b1", "b2", "b3", "c", "d"), keys(s));
    }
    try (Scanner s = r.scanner()) {
      assertEquals(List.of("a", "aa", "b1", "b2", "b3", "d"), keys(s));
    }
  }
}
