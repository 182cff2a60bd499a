package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static io.parallaxkv.TestSupport.s;
import static org.junit.jupiter.api.Assertions.*;

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
      assertThrows(InvalidArgumentException.class, () -> r.multiGet(null));
      assertThrows(InvalidArgumentException.class, () -> r.multiGet(Arrays.asList(b("a"), null)));
      assertThrows(InvalidArgumentException.class, () -> r.multiGet(List.of(new byte[0])));
      assertThrows(TooBigException.class,
          () -> r.multiGet(List.of(new byte[Parallax.MAX_KEY_SIZE + 1])));
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
