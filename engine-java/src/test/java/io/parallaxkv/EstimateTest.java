package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Region.estimateRange and the estimates of RegionStats, against exact counts from a scan, on
 * both backends.
 */
class EstimateTest {
  @TempDir Path dir;

  /** Key i: 8 bytes of a bijective mix of i, unique and spread uniformly over the key space. */
  private static byte[] key(long i) {
    long x = i * 0x9E3779B97F4A7C15L;
    x ^= x >>> 31;
    x *= 0xBF58476D1CE4E5B9L;
    x ^= x >>> 29;
    return ByteBuffer.allocate(8).putLong(x).array();
  }

  /** Keys of the sorted list in [begin, end). */
  private static long count(List<byte[]> sorted, byte[] begin, byte[] end) {
    return lowerBound(sorted, end) - lowerBound(sorted, begin);
  }

  private static int lowerBound(List<byte[]> sorted, byte[] k) {
    int lo = 0, hi = sorted.size();
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (Arrays.compareUnsigned(sorted.get(mid), k) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  @Test
  void rangesAcrossL0AndLevels() {
    int n = 40000;
    Options o = Options.builder().l0Size(256 << 10).growthFactor(2).build();
    try (Parallax db = Parallax.open(dir.resolve("e.vol"), o); Region r = db.region("e")) {
      byte[] value = new byte[40];
      for (int i = 0; i < n - 1000; i++) r.put(key(i), value);
      r.flush();
      for (int i = n - 1000; i < n; i++) r.put(key(i), value); // these stay in L0
      RegionStats st = r.stats();
      assertTrue(st.deepestLevel() >= 2, "levels: " + st.deepestLevel());
      assertTrue(st.l0Entries() > 0);
      assertEquals(n, st.estimatedKeys());

      List<byte[]> sorted = new ArrayList<>();
      try (Scanner s = r.scanner()) {
        for (; s.isValid(); s.next()) sorted.add(s.key());
      }
      assertEquals(n, sorted.size());

      RangeEstimate all = r.estimateRange(null, null);
      assertEquals(n, all.entries());
      long bytes = st.l0Bytes();
      for (LevelStats l : st.levels()) bytes += l.liveBytes();
      assertEquals(bytes, all.bytes(), 1);
      byte[] lo = new byte[8];
      byte[] hi = new byte[8];
      Arrays.fill(hi, (byte) 0xff);
      assertEquals(n, r.estimateRange(lo, null).entries());
      assertEquals(0, r.estimateRange(hi, null).entries());
      assertEquals(0, r.estimateRange(null, lo).entries());
      assertEquals(new RangeEstimate(0, 0), r.estimateRange(key(3), key(3)));

      SplittableRandom rnd = new SplittableRandom(42);
      int checked = 0;
      while (checked < 30) {
        byte[] a = key(rnd.nextLong());
        byte[] c = key(rnd.nextLong());
        if (Arrays.compareUnsigned(a, c) > 0) {
          byte[] t = a;
          a = c;
          c = t;
        }
        long exact = count(sorted, a, c);
        if (exact < n / 20) continue;
        long est = r.estimateRange(a, c).entries();
        assertTrue(Math.abs(est - exact) <= exact / 4, "estimated " + est + ", scanned " + exact);
        checked++;
      }
    }
  }

  @Test
  void afterCompactTheEstimateIsTheLiveCount() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("c")) {
      for (int i = 0; i < 5000; i++) r.put(key(i), b("v1"));
      r.flush();
      for (int i = 0; i < 5000; i += 2) r.put(key(i), b("v2"));
      for (int i = 1; i < 5000; i += 4) r.delete(key(i));
      assertTrue(r.stats().estimatedKeys() >= 5000);
      r.compact();
      RegionStats st = r.stats();
      assertEquals(5000 - 1250, st.estimatedKeys());
      assertEquals(0, st.pendingCompactionBytes());
      assertEquals(5000 - 1250, r.estimateRange(null, null).entries());
    }
  }

  @Test
  void badBounds() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("b")) {
      assertEquals(new RangeEstimate(0, 0), r.estimateRange(null, null));
      InvalidArgumentException e =
          assertThrows(InvalidArgumentException.class, () -> r.estimateRange(b("b"), b("a")));
      assertTrue(e.getMessage().contains("begin is after end"), e.getMessage());
      assertThrows(InvalidArgumentException.class, () -> r.estimateRange(new byte[0], null));
      assertThrows(InvalidArgumentException.class, () -> r.estimateRange(null, new byte[0]));
      assertThrows(TooBigException.class,
          () -> r.estimateRange(new byte[Parallax.MAX_KEY_SIZE + 1], null));
      r.close();
      assertThrows(ParallaxClosedException.class, () -> r.estimateRange(null, null));
    }
  }
}
