package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static io.parallaxkv.TestSupport.s;
import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Region.multiGet and Snapshot.multiGet. */
class MultiGetTest {
  @TempDir Path dir;

  @Test
  void manyKeysAcrossLevels() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("m")) {
      byte[] large = new byte[6000];
      Arrays.fill(large, (byte) 7);
      for (int i = 0; i < 500; i++) r.put(b("k" + i), b("v" + i));
      r.flush();
      for (int i = 0; i < 500; i += 3) r.delete(b("k" + i)); // L0 deletes over L1 puts
      r.put(b("k1"), large); // a large value, maybe still in a tail buffer
      List<byte[]> keys = new ArrayList<>();
      for (int i = 499; i >= 0; i--) keys.add(b("k" + i));
      keys.add(b("absent"));
      keys.add(b("k1"));
      try (Snapshot snap = r.snapshot()) {
        r.put(b("k2"), b("after the snapshot"));
        List<byte[]> got = snap.multiGet(keys);
        assertEquals(keys.size(), got.size());
        for (int j = 0; j < 500; j++) {
          int i = 499 - j;
          if (i == 1) assertArrayEquals(large, got.get(j));
          else if (i % 3 == 0) assertNull(got.get(j), "k" + i);
          else assertEquals("v" + i, s(got.get(j)), "k" + i);
        }
        assertNull(got.get(500));
        assertArrayEquals(large, got.get(501));
      }
      assertEquals("after the snapshot", s(r.multiGet(List.of(b("k2"))).get(0)));
      assertEquals(List.of(), r.multiGet(List.of()));
      assertThrows(NullPointerException.class, () -> r.multiGet(null));
      assertThrows(NullPointerException.class, () -> r.multiGet(Arrays.asList(b("a"), null)));
      assertThrows(InvalidArgumentException.class, () -> r.multiGet(List.of(new byte[0])));
      assertThrows(TooBigException.class,
          () -> r.multiGet(List.of(new byte[Parallax.MAX_KEY_SIZE + 1])));
    }
  }

  /**
   * The buffer variant: direct and heap keys (with positions not at 0), values packed into a
   * direct or a heap destination, a destination too small (the size needed, position kept),
   * and the same through a snapshot; the results equal the array variant's.
   */
  @Test
  void intoBuffer() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("m")) {
      byte[] large = new byte[5000];
      Arrays.fill(large, (byte) 3);
      for (int i = 0; i < 200; i++) r.put(b("k" + i), i == 7 ? large : b("v" + i));
      r.put(b("empty"), new byte[0]);
      r.flush();
      for (int i = 0; i < 200; i += 5) r.delete(b("k" + i));
      List<byte[]> arrays = new ArrayList<>();
      List<ByteBuffer> keys = new ArrayList<>();
      for (int i = 199; i >= 0; i--) arrays.add(b("k" + i));
      arrays.add(b("empty"));
      arrays.add(b("absent"));
      for (int j = 0; j < arrays.size(); j++) {
        byte[] k = arrays.get(j);
        ByteBuffer kb = j % 2 == 0 ? ByteBuffer.allocateDirect(k.length + 3) : ByteBuffer.allocate(k.length + 3);
        kb.position(3);
        kb.put(k).position(3);
        keys.add(kb);
      }
      List<byte[]> want = r.multiGet(arrays);
      for (boolean direct : new boolean[] {true, false}) {
        int[] lengths = new int[keys.size()];
        ByteBuffer small = direct ? ByteBuffer.allocateDirect(100) : ByteBuffer.allocate(100);
        small.position(10);
        long need = r.multiGet(keys, small, lengths);
        assertTrue(need > 90);
        assertEquals(10, small.position());
        ByteBuffer dst = direct ? ByteBuffer.allocateDirect((int) need + 20) : ByteBuffer.allocate((int) need + 20);
        dst.position(20);
        Arrays.fill(lengths, 12345);
        assertEquals(need, r.multiGet(keys, dst, lengths));
        assertEquals(20 + need, dst.position());
        int at = 20;
        for (int j = 0; j < keys.size(); j++) {
          assertEquals(3, keys.get(j).position()); // key positions untouched
          if (want.get(j) == null) {
            assertEquals(Region.NOT_FOUND, lengths[j], "key " + j);
            continue;
          }
          assertEquals(want.get(j).length, lengths[j], "key " + j);
          byte[] got = new byte[lengths[j]];
          dst.get(at, got);
          assertArrayEquals(want.get(j), got, "key " + j);
          at += lengths[j];
        }
      }
      try (Snapshot snap = r.snapshot()) {
        r.put(b("k1"), b("after the snapshot"));
        ByteBuffer dst = ByteBuffer.allocate(64);
        int[] lengths = new int[1];
        assertEquals(2, snap.multiGet(List.of(ByteBuffer.wrap(b("k1"))), dst, lengths));
        assertEquals("v1", s(Arrays.copyOf(dst.array(), 2)));
        dst.clear();
        assertEquals(18, r.multiGet(List.of(ByteBuffer.wrap(b("k1"))), dst, lengths));
      }
      int[] one = new int[1];
      ByteBuffer out = ByteBuffer.allocate(8);
      assertEquals(0, r.multiGet(List.of(), out, new int[0]));
      assertThrows(NullPointerException.class, () -> r.multiGet(null, out, one));
      assertThrows(NullPointerException.class, () -> r.multiGet(List.of(ByteBuffer.wrap(b("a"))), null, one));
      assertThrows(InvalidArgumentException.class,
          () -> r.multiGet(List.of(ByteBuffer.wrap(b("a"))), out.asReadOnlyBuffer(), one));
      assertThrows(NullPointerException.class, () -> r.multiGet(List.of(ByteBuffer.wrap(b("a"))), out, null));
      assertThrows(InvalidArgumentException.class,
          () -> r.multiGet(List.of(ByteBuffer.wrap(b("a")), ByteBuffer.wrap(b("b"))), out, one));
      assertThrows(NullPointerException.class,
          () -> r.multiGet(Arrays.asList(ByteBuffer.wrap(b("a")), null), out, new int[2]));
      assertThrows(InvalidArgumentException.class, () -> r.multiGet(List.of(ByteBuffer.allocate(0)), out, one));
    }
  }

  /** More keys than the per-thread scratch keeps: the call uses a block of its own. */
  @Test
  void largeBatch() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("m")) {
      List<byte[]> keys = new ArrayList<>();
      for (int i = 0; i < 5000; i++) {
        byte[] k = new byte[100];
        Arrays.fill(k, (byte) 'x');
        byte[] n = b(Integer.toString(i));
        System.arraycopy(n, 0, k, 0, n.length);
        keys.add(k);
        if (i % 2 == 0) r.put(k, n);
      }
      List<byte[]> got = r.multiGet(keys);
      for (int i = 0; i < 5000; i++) {
        if (i % 2 == 0) assertEquals(Integer.toString(i), s(got.get(i)));
        else assertNull(got.get(i));
      }
    }
  }
}
