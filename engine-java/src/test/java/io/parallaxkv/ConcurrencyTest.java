package io.parallaxkv;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Writers and scanners at once; each key's value encodes the key, so readers can check it. Each
 * scanner reads its snapshot forward, then backward while the writers go on: the same keys.
 */
class ConcurrencyTest {
  @TempDir Path dir;

  static byte[] key(int w, int i) {
    return ByteBuffer.allocate(8).putInt(w).putInt(i).array();
  }

  static byte[] value(byte[] key, int len) {
    byte[] v = new byte[len];
    for (int i = 0; i < len; i++) v[i] = key[i % key.length];
    return v;
  }

  static boolean valueMatches(byte[] key, byte[] v) {
    for (int i = 0; i < v.length; i++) if (v[i] != key[i % key.length]) return false;
    return true;
  }

  @Test
  void writersAndScanners() throws Exception {
    int writers = 3, perWriter = 15_000;
    ExecutorService pool = Executors.newFixedThreadPool(writers + 2);
    AtomicBoolean done = new AtomicBoolean();
    try (Parallax db = TestSupport.open(dir); Region r = db.region("c")) {
      List<Future<?>> fs = new ArrayList<>();
      for (int w = 0; w < writers; w++) {
        int ww = w;
        fs.add(pool.submit(() -> {
          for (int i = 0; i < perWriter; i++) {
            byte[] k = key(ww, i);
            r.put(k, value(k, 10 + (i % 200)));
            if (i % 5 == 4) r.delete(key(ww, i - 2));
          }
          return null;
        }));
      }
      List<Future<Integer>> scans = new ArrayList<>();
      for (int s = 0; s < 2; s++) {
        scans.add(pool.submit(() -> {
          int n = 0;
          while (!done.get()) {
            try (Scanner sc = r.scanner()) {
              List<byte[]> seen = new ArrayList<>();
              byte[] prev = null;
              for (; sc.isValid(); sc.next()) {
                byte[] k = sc.key();
                if (prev != null) assertTrue(Arrays.compareUnsigned(prev, k) < 0, "sorted");
                assertTrue(valueMatches(k, sc.value()), "value belongs to key");
                seen.add(k);
                prev = k;
                n++;
              }
              // Later, while the writers go on: the same snapshot backwards.
              int i = seen.size();
              for (sc.seekToLast(); sc.isValid(); sc.prev()) {
                assertTrue(i > 0, "reverse scan has more keys than the forward one");
                assertArrayEquals(seen.get(--i), sc.key(), "reverse scan of the same snapshot");
                if (i % 7 == 0) assertTrue(valueMatches(sc.key(), sc.value()), "value of key");
              }
              assertEquals(0, i, "reverse scan has fewer keys than the forward one");
            }
          }
          return n;
        }));
      }
      for (Future<?> f : fs) f.get(120, TimeUnit.SECONDS);
      done.set(true);
      for (Future<Integer> f : scans) assertTrue(f.get(120, TimeUnit.SECONDS) >= 0);
      for (int w = 0; w < writers; w++) {
        for (int i = 0; i < perWriter; i++) {
          byte[] k = key(w, i);
          byte[] v = r.get(k);
          boolean expectDeleted = (i + 2) % 5 == 4 && i + 2 < perWriter;
          if (expectDeleted) assertNull(v, "deleted " + w + "/" + i);
          else assertTrue(v != null && valueMatches(k, v), "present " + w + "/" + i);
        }
      }
    } finally {
      done.set(true);
      pool.shutdownNow();
      pool.awaitTermination(30, TimeUnit.SECONDS);
    }
  }
}
