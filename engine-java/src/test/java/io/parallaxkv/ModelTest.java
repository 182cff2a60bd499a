package io.parallaxkv;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Random operations against a TreeMap model, across reopenings and compactions (256 KiB L0);
 * range deletes (alone and in batches), scans forward and reverse, with bounds and prefixes and
 * changes of direction, multi-gets, compactRange. A tenth of the writes skip the WAL
 * ({@link WriteOptions#NO_WAL}: a close flushes them, so the model keeps them across reopens);
 * a long-lived snapshot is read (gets, multi-gets, full scans both ways) against a copy of the
 * model taken with it while the writes go on.
 */
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

  /** An end for a range delete from k: a key 1..20 numbers on (about 1% of the key space). */
  private static WriteOptions writeOptions(Random rnd) {
    return rnd.nextInt(10) == 0 ? WriteOptions.NO_WAL : WriteOptions.DEFAULT;
  }

  static byte[] nearbyEnd(byte[] k, Random rnd) {
    byte[] e = k.clone();
    int n = ((k[0] & 0xff) << 8 | (k[1] & 0xff)) + 1 + rnd.nextInt(20);
    e[0] = (byte) (n >> 8);
    e[1] = (byte) n;
    return e;
  }

  @Test
  void randomOperationsMatchTreeMap() {
    long seed = Long.getLong("parallax.test.seed", System.nanoTime());
    Random rnd = new Random(seed);
    TreeMap<byte[], byte[]> model = new TreeMap<>(UNSIGNED);
    String ctx = "seed " + seed;
    int rounds = 4;
    for (int round = 0; round < rounds; round++) {
      Snapshot snap = null;
      TreeMap<byte[], byte[]> snapModel = null;
      try (Parallax db = TestSupport.open(dir); Region r = db.region("model")) {
        verifyAll(r, model, ctx + " after reopen " + round);
        for (int op = 0; op < 6000; op++) {
          int what = rnd.nextInt(100);
          byte[] k = key(rnd);
          if (what == 54) {
            byte[] end = nearbyEnd(k, rnd);
            if (rnd.nextInt(3) == 0) {
              try (WriteBatch wb = new WriteBatch()) {
                byte[] v = value(rnd);
                // the put comes after the range delete
                r.write(wb.deleteRange(k, end).put(k, v), writeOptions(rnd));
                model.subMap(k, true, end, false).clear();
                model.put(k, v);
              }
            } else {
              r.deleteRange(k, end, writeOptions(rnd));
              model.subMap(k, true, end, false).clear();
            }
          } else if (what < 55) {
            byte[] v = value(rnd);
            if (rnd.nextBoolean()) {
              r.put(k, v, writeOptions(rnd));
            } else {
              r.put(ByteBuffer.allocateDirect(k.length).put(k).flip(), ByteBuffer.wrap(v),
                  writeOptions(rnd));
            }
            model.put(k, v);
          } else if (what < 70) {
            r.delete(k, writeOptions(rnd));
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
              r.write(wb, writeOptions(rnd));
            }
          } else if (what < 94) {
            assertArrayEquals(model.get(k), r.get(k), ctx);
            assertEquals(model.containsKey(k), r.exists(k), ctx);
          } else if (what < 95) {
            List<byte[]> keys = new ArrayList<>();
            for (int i = 1 + rnd.nextInt(150); i > 0; i--) keys.add(key(rnd));
            List<byte[]> got = r.multiGet(keys);
            assertEquals(keys.size(), got.size(), ctx);
            for (int i = 0; i < keys.size(); i++) {
              assertArrayEquals(model.get(keys.get(i)), got.get(i), ctx + " multiGet " + i);
            }
          } else if (what < 96) {
            checkScan(r, model, k, rnd.nextBoolean(), ctx);
          } else if (what < 97) {
            if (snap == null) {
              snap = r.snapshot();
              snapModel = new TreeMap<>(model);
            } else if (rnd.nextInt(10) == 0) {
              verifySnapshot(snap, snapModel, ctx + " snapshot at op " + op);
              snap.close();
              snap = null;
            } else {
              assertArrayEquals(snapModel.get(k), snap.get(k), ctx + " snapshot get");
              List<byte[]> keys = List.of(k, key(rnd), key(rnd));
              List<byte[]> got = snap.multiGet(keys);
              for (int i = 0; i < keys.size(); i++) {
                assertArrayEquals(snapModel.get(keys.get(i)), got.get(i), ctx + " snapshot multiGet");
              }
            }
          } else if (what < 99) {
            checkWalk(r, model, k, rnd, ctx);
          } else if (rnd.nextInt(4) == 0) {
            r.compactRange(k, null);
          } else {
            r.flush();
          }
        }
        assertTrue(r.stats().compactions() > 0 || round == 0, ctx);
        verifyAll(r, model, ctx + " round " + round);
        if (snap != null) verifySnapshot(snap, snapModel, ctx + " snapshot at round end");
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

  /**
   * A scanner with random bounds or a prefix, a random seek (forward or reverse) and a random
   * walk of next and prev, checked against the model restricted to the range.
   */
  private static void checkWalk(Region r, TreeMap<byte[], byte[]> model, byte[] k, Random rnd,
      String ctx) {
    ScanOptions.Builder ob = ScanOptions.builder();
    if (rnd.nextInt(3) == 0) ob.readahead(rnd.nextInt(64));
    byte[] lo = null;
    byte[] hi = null;
    byte[] prefix = null;
    boolean loInc = rnd.nextBoolean();
    boolean hiInc = rnd.nextBoolean();
    switch (rnd.nextInt(4)) {
      case 0 -> { }
      case 1 -> {
        lo = key(rnd);
        hi = key(rnd);
        if (UNSIGNED.compare(lo, hi) > 0) {
          byte[] t = lo;
          lo = hi;
          hi = t;
        }
        ob.lowerBound(lo, loInc).upperBound(hi, hiInc);
      }
      case 2 -> {
        prefix = Arrays.copyOf(k, 1 + rnd.nextInt(3));
        ob.prefix(prefix);
      }
      default -> {
        hi = key(rnd);
        ob.upperBound(hi, hiInc);
      }
    }
    final byte[] l = lo;
    final byte[] h = hi;
    final byte[] p = prefix;
    final boolean li = loInc;
    final boolean hinc = hiInc;
    java.util.function.Predicate<byte[]> in = key -> {
      if (key == null) return false;
      if (p != null && (key.length < p.length || Arrays.mismatch(key, 0, p.length, p, 0, p.length) >= 0)) {
        return false;
      }
      if (l != null) {
        int c = UNSIGNED.compare(key, l);
        if (c < 0 || (c == 0 && !li)) return false;
      }
      if (h != null) {
        int c = UNSIGNED.compare(key, h);
        if (c > 0 || (c == 0 && !hinc)) return false;
      }
      return true;
    };
    try (Scanner s = r.scanner(ob.build())) {
      byte[] want;
      String how;
      switch (rnd.nextInt(5)) {
        case 0 -> {
          how = "seekToFirst";
          s.seekToFirst();
          want = model.keySet().stream().filter(in).findFirst().orElse(null);
        }
        case 1 -> {
          how = "seekToLast";
          s.seekToLast();
          want = model.descendingKeySet().stream().filter(in).findFirst().orElse(null);
        }
        case 2 -> {
          how = "seek";
          s.seek(k);
          want = model.tailMap(k, true).keySet().stream().filter(in).findFirst().orElse(null);
        }
        case 3 -> {
          how = "seekAfter";
          s.seekAfter(k);
          want = model.tailMap(k, false).keySet().stream().filter(in).findFirst().orElse(null);
        }
        default -> {
          how = "seekForPrev";
          s.seekForPrev(k);
          want = model.headMap(k, true).descendingKeySet().stream().filter(in).findFirst()
              .orElse(null);
        }
      }
      StringBuilder walk = new StringBuilder(how);
      for (int i = 0; i < 30; i++) {
        String where = ctx + " " + walk + " lo=" + Arrays.toString(l) + " hi=" + Arrays.toString(h)
            + " prefix=" + Arrays.toString(p);
        if (want == null) {
          assertFalse(s.isValid(), where);
          break;
        }
        assertTrue(s.isValid(), where);
        assertArrayEquals(want, s.key(), where);
        if (rnd.nextInt(3) == 0) assertArrayEquals(model.get(want), s.value(), where);
        if (rnd.nextBoolean()) {
          walk.append(" next");
          s.next();
          want = model.higherKey(want);
        } else {
          walk.append(" prev");
          s.prev();
          want = model.lowerKey(want);
        }
        if (!in.test(want)) want = null;
      }
    }
  }

  /** The snapshot's whole content is the model's copy taken with it. */
  private static void verifySnapshot(Snapshot snap, TreeMap<byte[], byte[]> model, String ctx) {
    try (Scanner s = snap.scanner()) {
      verifyScans(s, model, ctx);
    }
  }

  /** A full scan forward, then one backward, return the model's entries. */
  private static void verifyScans(Scanner s, TreeMap<byte[], byte[]> model, String ctx) {
    for (Map.Entry<byte[], byte[]> e : model.entrySet()) {
      assertTrue(s.isValid(), ctx);
      assertArrayEquals(e.getKey(), s.key(), ctx);
      assertArrayEquals(e.getValue(), s.value(), ctx);
      s.next();
    }
    assertFalse(s.isValid(), ctx);
    s.seekToLast();
    for (Map.Entry<byte[], byte[]> e : model.descendingMap().entrySet()) {
      assertTrue(s.isValid(), ctx + " reverse");
      assertArrayEquals(e.getKey(), s.key(), ctx + " reverse");
      assertArrayEquals(e.getValue(), s.value(), ctx + " reverse");
      s.prev();
    }
    assertFalse(s.isValid(), ctx + " reverse");
  }

  private static void verifyAll(Region r, TreeMap<byte[], byte[]> model, String ctx) {
    try (Scanner s = r.scanner()) {
      verifyScans(s, model, ctx);
    }
    // Estimates count versions and tombstones: only these bounds are certain whatever the data
    // (EstimateTest checks accuracy on distinct keys).
    assertTrue(r.estimateRange(null, null).entries() >= model.size(), ctx + " estimate");
    assertTrue(r.stats().estimatedKeys() >= model.size(), ctx + " estimatedKeys");
    if (!model.isEmpty()) {
      byte[] k = model.firstKey();
      assertEquals(new RangeEstimate(0, 0), r.estimateRange(k, k), ctx + " empty range");
    }
  }
}
