package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static io.parallaxkv.TestSupport.s;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The MemorySegment companion (JDK 22+ run only). */
class SegmentsTest {
  @TempDir Path dir;

  @Test
  void nativeAndHeapSegments() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("r");
        Arena arena = Arena.ofConfined()) {
      MemorySegment k = arena.allocateFrom("seg-key").asSlice(0, 7); // no NUL
      MemorySegment v = arena.allocate(100);
      v.fill((byte) 9);
      ParallaxSegments.put(r, k, v);
      assertArrayEquals(v.toArray(ValueLayout.JAVA_BYTE), r.get(b("seg-key")));
      assertTrue(ParallaxSegments.exists(r, k));
      MemorySegment dst = arena.allocate(200);
      assertEquals(100, ParallaxSegments.get(r, k, dst));
      assertEquals(9, dst.get(ValueLayout.JAVA_BYTE, 99));
      MemorySegment small = arena.allocate(10);
      assertEquals(100, ParallaxSegments.get(r, k, small), "needed size");
      MemorySegment heapKey = MemorySegment.ofArray(b("heap-key"));
      MemorySegment heapVal = MemorySegment.ofArray(b("heap-value"));
      ParallaxSegments.put(r, heapKey, heapVal, WriteOptions.SYNC);
      assertEquals("heap-value", s(r.get(b("heap-key"))));
      byte[] out = new byte[20];
      assertEquals(10, ParallaxSegments.get(r, heapKey, MemorySegment.ofArray(out)));
      assertEquals("heap-value", new String(out, 0, 10));
      MemorySegment sliced = arena.allocate(64).asSlice(13, 7);
      sliced.copyFrom(MemorySegment.ofArray(b("seg-key")));
      assertEquals(100, ParallaxSegments.get(r, sliced, arena.allocate(100)));
      try (Snapshot snap = r.snapshot()) {
        ParallaxSegments.delete(r, k, WriteOptions.DEFAULT);
        assertFalse(r.exists(b("seg-key")));
        assertEquals(100, ParallaxSegments.get(snap, k, dst));
      }
      try (WriteBatch wb = new WriteBatch()) {
        ParallaxSegments.put(wb, k, v);
        ParallaxSegments.delete(wb, heapKey);
        r.write(wb);
      }
      assertTrue(r.exists(b("seg-key")));
      assertFalse(r.exists(b("heap-key")));
      try (Scanner sc = r.scanner()) {
        MemorySegment key = ParallaxSegments.key(sc);
        assertEquals("seg-key", new String(key.toArray(ValueLayout.JAVA_BYTE)));
        assertTrue(key.isReadOnly());
        assertEquals(100, ParallaxSegments.value(sc).byteSize());
        sc.next();
        if ("ffm".equals(Parallax.backend())) {
          assertThrows(IllegalStateException.class, () -> key.get(ValueLayout.JAVA_BYTE, 0),
              "the engine's memory of an entry is revoked when the scanner moves");
        }
      }
      assertThrows(NullPointerException.class, () -> ParallaxSegments.put(r, null, v));
      assertThrows(InvalidArgumentException.class, () -> ParallaxSegments.put(r, arena.allocate(0), v));
      assertThrows(TooBigException.class, () -> ParallaxSegments.put(r, arena.allocate(2000), v));
      assertThrows(InvalidArgumentException.class,
          () -> ParallaxSegments.get(r, k, arena.allocate(10).asReadOnly()));
    }
  }
}
