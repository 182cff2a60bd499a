package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static io.parallaxkv.TestSupport.s;
import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Region.deleteRange and WriteBatch.deleteRange: reads in both directions, snapshots, batches
 * across regions, reopen and compaction, argument checks, a killed writer; and compactRange,
 * which compacts the whole region.
 */
class RangeDeleteTest {
  @TempDir Path dir;

  static byte[] k(int i) {
    return b(String.format("k%05d", i));
  }

  static List<String> forward(Scanner sc) {
    List<String> out = new ArrayList<>();
    for (boolean ok = sc.seekToFirst(); ok; ok = sc.next()) out.add(s(sc.key()));
    return out;
  }

  static List<String> backward(Scanner sc) {
    List<String> out = new ArrayList<>();
    for (boolean ok = sc.seekToLast(); ok; ok = sc.prev()) out.add(0, s(sc.key()));
    return out;
  }

  static List<String> expected(int n, int from, int to) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < n; i++) if (i < from || i >= to) out.add(s(k(i)));
    return out;
  }

  @Test
  void rangeIsGoneForEveryReadAndSnapshotKeepsIt() {
    int n = 500;
    try (Parallax db = TestSupport.open(dir); Region r = db.region("r")) {
      for (int i = 0; i < n; i++) r.put(k(i), b("v" + i));
      r.flush();
      try (Snapshot before = r.snapshot()) {
        r.deleteRange(k(100), k(200));
        List<String> want = expected(n, 100, 200);
        for (int pass = 0; pass < 3; pass++) {
          assertNull(r.get(k(100)));
          assertNull(r.get(k(199)));
          assertEquals("v200", s(r.get(k(200))));
          assertEquals("v99", s(r.get(k(99))));
          assertFalse(r.exists(k(150)));
          List<byte[]> got = r.multiGet(List.of(k(99), k(150), k(200)));
          assertEquals("v99", s(got.get(0)));
          assertNull(got.get(1));
          assertEquals("v200", s(got.get(2)));
          try (Scanner sc = r.scanner()) {
            assertEquals(want, forward(sc));
            assertEquals(want, backward(sc));
            assertTrue(sc.seekForPrev(k(150)));
            assertEquals(s(k(99)), s(sc.key()));
            assertTrue(sc.seek(k(150)));
            assertEquals(s(k(200)), s(sc.key()));
          }
          assertEquals("v150", s(before.get(k(150))));
          try (Scanner sc = before.scanner()) {
            assertEquals(expected(n, 0, 0), backward(sc));
          }
          if (pass == 0) r.flush();
          if (pass == 1) r.compactRange(null, null);
        }
      }
      r.put(k(150), b("again"));
      assertEquals("again", s(r.get(k(150))));
    }
    try (Parallax db = TestSupport.open(dir); Region r = db.region("r")) {
      assertEquals("again", s(r.get(k(150))));
      assertNull(r.get(k(151)));
    }
  }

  @Test
  void batchesApplyInOrderAndSurviveReopen() {
    try (Parallax db = TestSupport.open(dir); Region a = db.region("a"); Region c = db.region("c")) {
      for (int i = 0; i < 50; i++) {
        a.put(k(i), b("a" + i));
        c.put(k(i), b("c" + i));
      }
      try (WriteBatch wb = new WriteBatch()) {
        a.write(wb.deleteRange(k(10), k(20)).put(k(15), b("kept")));
      }
      try (WriteBatch wb = new WriteBatch()) {
        db.write(wb.deleteRange(a, k(30), k(40)).deleteRange(c, k(0), k(5)).put(c, k(2), b("new")));
      }
    }
    try (Parallax db = TestSupport.open(dir); Region a = db.region("a"); Region c = db.region("c")) {
      assertNull(a.get(k(10)));
      assertEquals("kept", s(a.get(k(15))));
      assertNull(a.get(k(35)));
      assertEquals("a40", s(a.get(k(40))));
      assertNull(c.get(k(0)));
      assertEquals("new", s(c.get(k(2))));
      assertEquals("c5", s(c.get(k(5))));
    }
  }

  @Test
  void badArgumentsThrowAndChangeNothing() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("r");
        WriteBatch wb = new WriteBatch()) {
      r.put(k(1), b("v"));
      assertThrows(NullPointerException.class, () -> r.deleteRange(null, k(2)));
      assertThrows(NullPointerException.class, () -> r.deleteRange(k(0), null));
      assertThrows(NullPointerException.class, () -> wb.deleteRange(null, k(2)));
      assertThrows(NullPointerException.class, () -> wb.deleteRange(null, k(0), k(2)));
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> r.deleteRange(k(2), k(0)));
      assertTrue(e.getMessage().contains("begins after its end"), e.getMessage());
      assertThrows(IllegalArgumentException.class, () -> wb.deleteRange(k(2), k(0)));
      assertThrows(IllegalArgumentException.class, () -> wb.deleteRange(r, k(2), k(0)));
      assertThrows(IllegalArgumentException.class, () -> r.compactRange(k(2), k(0)));
      assertThrows(InvalidArgumentException.class, () -> r.deleteRange(new byte[0], k(2)));
      assertThrows(TooBigException.class,
          () -> r.deleteRange(k(0), new byte[Parallax.MAX_KEY_SIZE + 1]));
      assertEquals(0, wb.count());
      r.deleteRange(k(1), k(1)); // empty: deletes nothing
      assertEquals("v", s(r.get(k(1))));
    }
  }

  @Test
  void compactRangeCompactsTheWholeRegion() {
    try (Parallax db = TestSupport.open(dir); Region r = db.region("r")) {
      for (int i = 0; i < 2000; i++) r.put(k(i), new byte[200]);
      r.deleteRange(k(0), k(1000));
      r.compactRange(k(0), k(1000));
      RegionStats st = r.stats();
      // Everything reached the last level: the covered entries and the tombstone are gone.
      assertEquals(0, st.l0Entries());
      assertEquals(1000, st.estimatedKeys());
      assertNull(r.get(k(999)));
      assertNotNull(r.get(k(1000)));
    }
  }

  /**
   * A child JVM writes rounds of puts, a range delete and a put inside the range, each round
   * synced (RangeDeleteChild), and is killed (the small L0 flushes every few dozen rounds, so
   * range tombstones reach the levels). After recovery every acknowledged round reads exactly as
   * written: the range's keys gone, the put after the delete present, the rest intact; and the keys
   * of later rounds (which a prefix of the log may hold in part) hold what their puts wrote.
   */
  @Test
  void killedWriterKeepsAcknowledgedRangeDeletes() throws Exception {
    Path vol = dir.resolve("k.vol");
    Process p = TestSupport.startChild(RangeDeleteChild.class, vol.toString());
    TestSupport.ChildReport rep = TestSupport.killWhen(p, c -> c.last("D") >= 300, 0);
    long acked = rep.last("D");
    assertTrue(acked >= 300, "the child stopped early: " + rep.other());
    try (Parallax db = Parallax.open(vol, TestSupport.small()); Region r = db.region("r")) {
      assertTrue(r.stats().levels().get(0).entries() > 0, "the writes reached a level");
      for (long i = 0; i <= acked; i++) {
        for (int k = 0; k < 10; k++) {
          byte[] want = k == 5 ? b("after " + i) : k >= 3 && k < 7 ? null
              : RangeDeleteChild.value(i, k);
          assertArrayEquals(want, r.get(RangeDeleteChild.key(i, k)), "round " + i + " key " + k);
        }
      }
      try (Scanner sc = r.scanner(ScanOptions.builder()
          .lowerBound(RangeDeleteChild.key(acked + 1, 0)).build())) {
        for (; sc.isValid(); sc.next()) {
          String key = s(sc.key());
          int k = key.charAt(key.length() - 1) - '0';
          long round = Long.parseLong(key.substring(1, 7));
          if (k == 5) continue; // the round's first put, or the put after its range delete
          assertArrayEquals(RangeDeleteChild.value(round, k), sc.value(), key);
        }
      }
    }
  }
}
