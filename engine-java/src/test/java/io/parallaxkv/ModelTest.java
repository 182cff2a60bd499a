package io.parallaxkv;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Random operations against a TreeMap model, across reopenings and compactions (256 KiB L0). */
class ModelTest {
  @TempDir Path dir;

  private static final java.util.Comparator<byte[]> UNSIGNED = Arrays::compareUnsigned;

  static byte[] key(Random rnd) {
    int n = rnd.nextInt(2000);
    int len = 1 + rnd.nextInt(3) * 8;
    byte[] k = new byte[Math.max(len, 4)];
    k[0] = (byte) (n >> 8);
    k[1] = (byte) n;
    k[2] = (byte) (n % 7 == 0 ? 0xff : 0x10);
    for (int i = 3; i < k.length; i++) k[i] = (byte) (n * i);
    return k;
  }

  static byte[] value(Random rnd) {
    int kind = rnd.nextInt(10);
    int len = kind < 6 ? rnd.nextInt(100) : kind < 9 ? 120 + rnd.nextInt(900) : 1024 + rnd.nextInt(5000);
    byte[] v = new byte[len];
    rnd.nextBytes(v);
    return v;
  }

  @Test
  void randomOperationsMatchTreeMap() {
    long seed = Long.getLong("parallax.test.seed", System.nanoTime());
    Random rnd = new Random(seed);
    TreeMap<byte[], byte[]> model = new TreeMap<>(UNSIGNED);
    String ctx = "seed " + seed;
    int rounds = 4;
    for (int round = 0; round < rounds; round++) {
      try (Parallax db = TestSupport.open(dir); Region r = db.region("model")) {
        verifyAll(r, model, ctx + " after reopen " + round);
        for (int op = 0; op < 6000; op++) {
          int what = rnd.nextInt(100);
          byte[] k = key(rnd);
          if (what < 55) {
            byte[] v = value(rnd);
            if (rnd.nextBoolean()) r.put(k, v);
            else r.put(ByteBuffer.allocateDirect(k.length).put(k).flip(), ByteBuffer.wrap(v));
            model.put(k, v);
          } else if (what < 70) {
            r.delete(k);
            model.remove(k);
          } else if (what < 75) {
            try (WriteBatch wb = new WriteBatch()) {
              for (int i = 0; i < 10; i++) {
                byte[] bk = key(rnd);
                if (rnd.nextInt(4) == 0) {
                  wb.delete(bk);
                  model.remove(bk);
                } else {
                  byte[] v = value(rnd);
                  wb.put(bk, v);
                  model.put(bk, v);
                }
              }
              r.write(wb);
            }
          } else if (what < 95) {
            assertArrayEquals(model.get(k), r.get(k), ctx);
            assertEquals(model.containsKey(k), r.exists(k), ctx);
          } else if (what < 99) {
            checkScan(r, model, k, rnd.nextBoolean(), ctx);
          } else {
            r.flush();
          }
        }
        assertTrue(r.stats().compactions() > 0 || round == 0, ctx);
        verifyAll(r, model, ctx + " round " + round);
      }
    }
  }

  private static void checkScan(Region r, TreeMap<byte[], byte[]> model, byte[] from, boolean inclusive,
      String ctx) {
    try (Scanner s = r.scanner()) {
      if (inclusive) s.seek(from);
      else s.seekAfter(from);
      Iterator<Map.Entry<byte[], byte[]>> it = model.tailMap(from, inclusive).entrySet().iterator();
      for (int i = 0; i < 50 && it.hasNext(); i++) {
        Map.Entry<byte[], byte[]> e = it.next();
        assertTrue(s.isValid(), ctx);
        assertArrayEquals(e.getKey(), s.key(), ctx);
        assertArrayEquals(e.getValue(), s.value(), ctx);
        s.next();
      }
      if (!it.hasNext()) assertFalse(s.isValid(), ctx);
    }
  }

  private static void verifyAll(Region r, TreeMap<byte[], byte[]> model, String ctx) {
    try (Scanner s = r.scanner()) {
      for (Map.Entry<byte[], byte[]> e : model.entrySet()) {
        assertTrue(s.isValid(), ctx);
        assertArrayEquals(e.getKey(), s.key(), ctx);
        assertArrayEquals(e.getValue(), s.value(), ctx);
        s.next();
      }
      assertFalse(s.isValid(), ctx);
    }
  }
}
