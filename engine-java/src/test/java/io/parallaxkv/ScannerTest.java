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
      assertThrows(InvalidArgumentException.class, s::key);
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
