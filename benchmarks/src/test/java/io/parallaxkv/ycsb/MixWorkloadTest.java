package io.parallaxkv.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import org.junit.jupiter.api.Test;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.Status;
import site.ycsb.WorkloadException;
import site.ycsb.measurements.Measurements;

/** The size classes of the mix workload and the record encoding. */
class MixWorkloadTest {
  /** Remembers what the workload writes. */
  static final class Capture extends DB {
    final List<String> keys = new ArrayList<>();
    final List<byte[]> values = new ArrayList<>();

    @Override
    public Status read(String t, String k, Set<String> f, Map<String, ByteIterator> r) {
      return Status.OK;
    }

    @Override
    public Status scan(String t, String s, int n, Set<String> f, Vector<HashMap<String, ByteIterator>> r) {
      return Status.OK;
    }

    @Override
    public Status update(String t, String k, Map<String, ByteIterator> v) {
      return insert(t, k, v);
    }

    @Override
    public Status insert(String t, String k, Map<String, ByteIterator> v) {
      keys.add(k);
      values.add(FieldCodec.encode(v));
      return Status.OK;
    }

    @Override
    public Status delete(String t, String k) {
      return Status.OK;
    }
  }

  private static MixWorkload workload(String mix, String update, int records) throws WorkloadException {
    Properties p = new Properties();
    p.setProperty("mix", mix);
    p.setProperty("mix.update", update);
    p.setProperty("recordcount", Integer.toString(records));
    Measurements.setProperties(p);
    MixWorkload w = new MixWorkload();
    w.init(p);
    return w;
  }

  @Test
  void loadFollowsTheMixWithExactSizes() throws Exception {
    int n = 20000;
    MixWorkload w = workload("SD", "redraw", n);
    Capture db = new Capture();
    for (int i = 0; i < n; i++) assertTrue(w.doInsert(db, null));
    int[] count = new int[3];
    for (int i = 0; i < n; i++) {
      String k = db.keys.get(i);
      assertEquals(MixWorkload.KEY_BYTES, k.length(), k);
      int size = db.values.get(i).length;
      int c = size == 9 ? 0 : size == 104 ? 1 : size == 1004 ? 2 : -1;
      assertTrue(c >= 0, "value of " + size + " bytes");
      assertEquals(w.insertClass(k), c, "class is a function of the key");
      count[c]++;
    }
    assertEquals(0.6, count[0] / (double) n, 0.02);
    assertEquals(0.2, count[1] / (double) n, 0.02);
    assertEquals(0.2, count[2] / (double) n, 0.02);
  }

  @Test
  void updatesRedrawOrKeepTheClass() throws Exception {
    MixWorkload redraw = workload("SD", "redraw", 1000);
    MixWorkload keep = workload("SD", "keep", 1000);
    int changed = 0;
    int n = 20000;
    for (int i = 0; i < n; i++) {
      String k = String.format("user%020d", i);
      if (redraw.updateClass(k) != redraw.insertClass(k)) changed++;
      assertEquals(keep.insertClass(k), keep.updateClass(k));
    }
    assertEquals(1 - (0.36 + 0.04 + 0.04), changed / (double) n, 0.02);
  }

  @Test
  void readsRecogniseEveryClassOfTheKeyAndNothingElse() throws Exception {
    MixWorkload w = workload("MD", "redraw", 10);
    String k = "user00000000000000000042";
    for (int c = 0; c < 3; c++) {
      Map<String, ByteIterator> r = w.record(k, c);
      Map<String, ByteIterator> decoded = new HashMap<>();
      FieldCodec.decode(FieldCodec.encode(r), null, decoded);
      assertTrue(w.isValid(k, decoded));
      assertFalse(w.isValid("user00000000000000000043", w.record(k, c)));
    }
    Map<String, ByteIterator> wrong = new HashMap<>();
    wrong.put("f0", new ByteArrayByteIterator(new byte[5]));
    assertFalse(w.isValid(k, wrong));
    assertEquals(24 + 0.2 * 9 + 0.6 * 104 + 0.2 * 1004, w.mix().meanRecordBytes(new int[] {9, 104, 1004}), 1e-9);
  }

  @Test
  void mixesParse() {
    assertEquals(new MixWorkload.Mix("LD", 0.2, 0.2, 0.6), MixWorkload.Mix.parse("ld"));
    MixWorkload.Mix custom = MixWorkload.Mix.parse("50/30/20");
    assertEquals(0.5, custom.small(), 1e-9);
    assertThrows(IllegalArgumentException.class, () -> MixWorkload.Mix.parse("XL"));
  }

  @Test
  void codecRoundTripsAndHitsExactSizes() {
    Map<String, ByteIterator> m = new LinkedHashMap<>();
    m.put("field0", new ByteArrayByteIterator(new byte[300]));
    m.put("f1", new ByteArrayByteIterator("x".getBytes()));
    byte[] enc = FieldCodec.encode(m);
    assertEquals(1 + 6 + 2 + 300 + 1 + 2 + 1 + 1, enc.length);
    Map<String, ByteIterator> back = new HashMap<>();
    FieldCodec.decode(enc, Set.of("f1"), back);
    assertEquals(Set.of("f1"), back.keySet());
    assertEquals("x", back.get("f1").toString());
    assertEquals(5, FieldCodec.valueLengthFor("f0", 9));
    assertEquals(100, FieldCodec.valueLengthFor("f0", 104));
    assertEquals(999, FieldCodec.valueLengthFor("f0", 1004));
    assertThrows(IllegalArgumentException.class, () -> FieldCodec.valueLengthFor("f0", 3));
    assertThrows(IllegalArgumentException.class, () -> FieldCodec.decode(new byte[] {5, 'a'}, null, new HashMap<>()));
  }
}
