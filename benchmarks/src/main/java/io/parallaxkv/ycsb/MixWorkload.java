package io.parallaxkv.ycsb;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ThreadLocalRandom;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.Status;
import site.ycsb.WorkloadException;
import site.ycsb.generator.ExponentialGenerator;
import site.ycsb.measurements.Measurements;
import site.ycsb.workloads.CoreWorkload;

/**
 * YCSB's {@link CoreWorkload} with the Parallax paper's KV-size mixes (§4, Table 1): each record
 * is small, medium or large, with stored values (the {@link FieldCodec} encoding of its one
 * field) of exactly 9, 104 or 1004 bytes and keys of exactly 24 bytes ({@code user} + 20
 * digits). Operation mixes, request distributions and key choice are CoreWorkload's, so YCSB's
 * workload files A–F apply unchanged.
 *
 * <p><b>Which class a record has.</b> On insert (the load, and inserts of workloads D and E)
 * the class is a function of the key: a 64-bit hash of the key picks it with the mix's
 * proportions, so a key's first class is reproducible. On update (workloads A, B, F) the rule is
 * {@code mix.update}: {@code redraw} (default) draws a new class from the mix at random, so
 * about 1 − Σp² of updates change a pair's category (56% for SD and MD, 36% for a 100/0/0 mix:
 * none) while the population keeps the mix's proportions — the paper's mixed runs, where
 * updates "change the sizes of KV pairs and thus their category"; {@code keep} rewrites the
 * key's insert class. A value's bytes are a function of (key, class), so with
 * {@code dataintegrity=true} a read checks that the value has one of the mix's lengths and the
 * bytes of that class (reported as YCSB's {@code VERIFY} status).
 *
 * <p>Properties: {@code mix} ({@code S}, {@code M}, {@code L}, {@code SD} (60/20/20),
 * {@code MD} (20/60/20), {@code LD} (20/20/60) or {@code small/medium/large} percentages such as
 * {@code 50/30/20}; default SD), {@code mix.small}, {@code mix.medium}, {@code mix.large} (stored
 * value bytes, default 9, 104, 1004), {@code mix.update} ({@code redraw} or {@code keep}).
 * Defaults it sets unless given: {@code fieldcount=1}, {@code fieldnameprefix=f},
 * {@code zeropadding=20}, {@code readallfields=true}.
 */
public class MixWorkload extends CoreWorkload {
  /** Bytes of every key ({@code user} + 20 digits). */
  public static final int KEY_BYTES = 24;

  /** A KV-size mix: the share of small, medium and large records. */
  public record Mix(String name, double small, double medium, double large) {
    /** Parses {@code S}, {@code M}, {@code L}, {@code SD}, {@code MD}, {@code LD} or {@code a/b/c}. */
    public static Mix parse(String s) {
      String n = s.trim().toUpperCase(Locale.ROOT);
      switch (n) {
        case "S": return new Mix(n, 1, 0, 0);
        case "M": return new Mix(n, 0, 1, 0);
        case "L": return new Mix(n, 0, 0, 1);
        case "SD": return new Mix(n, 0.6, 0.2, 0.2);
        case "MD": return new Mix(n, 0.2, 0.6, 0.2);
        case "LD": return new Mix(n, 0.2, 0.2, 0.6);
        default:
          String[] p = n.split("/");
          if (p.length != 3) throw new IllegalArgumentException("unknown mix " + s);
          double a = Double.parseDouble(p[0]);
          double b = Double.parseDouble(p[1]);
          double c = Double.parseDouble(p[2]);
          if (a < 0 || b < 0 || c < 0 || a + b + c <= 0) throw new IllegalArgumentException("bad mix " + s);
          return new Mix(n, a / (a + b + c), b / (a + b + c), c / (a + b + c));
      }
    }

    /** The class (0 small, 1 medium, 2 large) at quantile {@code u} in [0, 1). */
    public int classAt(double u) {
      return u < small ? 0 : u < small + medium ? 1 : 2;
    }

    /** Mean key + stored value bytes of a record, for value sizes {@code values[class]}. */
    public double meanRecordBytes(int[] values) {
      return KEY_BYTES + small * values[0] + medium * values[1] + large * values[2];
    }
  }

  private static final int[] DEFAULT_VALUES = {9, 104, 1004};

  private final Measurements measurements = Measurements.getMeasurements();
  private Mix mix;
  private String field;
  private final int[] valueBytes = new int[3];
  private final int[] fieldBytes = new int[3];
  private boolean redraw;
  private boolean verify;

  @Override
  public void init(Properties p) throws WorkloadException {
    p.putIfAbsent(FIELD_COUNT_PROPERTY, "1");
    p.putIfAbsent(FIELD_NAME_PREFIX, "f");
    p.putIfAbsent(ZERO_PADDING_PROPERTY, "20");
    p.putIfAbsent(READ_ALL_FIELDS_PROPERTY, "true");
    super.init(p);
    if (fieldcount != 1) throw new WorkloadException("MixWorkload writes one field per record; fieldcount=" + fieldcount);
    try {
      mix = Mix.parse(p.getProperty("mix", "SD"));
      field = p.getProperty(FIELD_NAME_PREFIX) + "0";
      String[] names = {"mix.small", "mix.medium", "mix.large"};
      for (int c = 0; c < 3; c++) {
        valueBytes[c] = Integer.parseInt(p.getProperty(names[c], Integer.toString(DEFAULT_VALUES[c])).trim());
        fieldBytes[c] = FieldCodec.valueLengthFor(field, valueBytes[c]);
      }
    } catch (IllegalArgumentException e) {
      throw new WorkloadException(e.getMessage(), e);
    }
    String update = p.getProperty("mix.update", "redraw").trim().toLowerCase(Locale.ROOT);
    if (!update.equals("redraw") && !update.equals("keep")) {
      throw new WorkloadException("mix.update must be redraw or keep, not " + update);
    }
    redraw = update.equals("redraw");
    verify = Boolean.parseBoolean(p.getProperty(DATA_INTEGRITY_PROPERTY, DATA_INTEGRITY_PROPERTY_DEFAULT));
  }

  /** The mix in use. */
  public Mix mix() {
    return mix;
  }

  /** Stored value bytes of class {@code c}. */
  public int valueBytes(int c) {
    return valueBytes[c];
  }

  /** The class a key gets when it is inserted. */
  public int insertClass(String key) {
    return mix.classAt(unit(hash(key.getBytes(StandardCharsets.UTF_8))));
  }

  /** The class an update of {@code key} writes, by the {@code mix.update} rule. */
  public int updateClass(String key) {
    return redraw ? mix.classAt(ThreadLocalRandom.current().nextDouble()) : insertClass(key);
  }

  /** The record of {@code key} in class {@code c}: one field with the bytes of (key, class). */
  public Map<String, ByteIterator> record(String key, int c) {
    Map<String, ByteIterator> r = new HashMap<>(2);
    r.put(field, new ByteArrayByteIterator(content(key, c, fieldBytes[c])));
    return r;
  }

  /** True if {@code cells} is a record this workload wrote for {@code key}, in any class. */
  public boolean isValid(String key, Map<String, ByteIterator> cells) {
    ByteIterator it = cells.get(field);
    if (cells.size() != 1 || it == null) return false;
    byte[] v = it.toArray();
    for (int c = 0; c < 3; c++) {
      if (v.length == fieldBytes[c]) return Arrays.equals(v, content(key, c, v.length));
    }
    return false;
  }

  private static long hash(byte[] b) {
    long h = 0xcbf29ce484222325L;
    for (byte x : b) h = (h ^ (x & 0xFF)) * 0x100000001b3L;
    return mixBits(h);
  }

  private static long mixBits(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  private static double unit(long h) {
    return (h >>> 11) * 0x1.0p-53;
  }

  private static byte[] content(String key, int c, int n) {
    byte[] out = new byte[n];
    long x = mixBits(hash(key.getBytes(StandardCharsets.UTF_8)) + 0x9E3779B97F4A7C15L * (c + 1));
    for (int i = 0; i < n; i++) {
      if ((i & 7) == 0) {
        x ^= x << 13;
        x ^= x >>> 7;
        x ^= x << 17;
      }
      out[i] = (byte) (x >>> ((i & 7) << 3));
    }
    return out;
  }

  @Override
  public boolean doInsert(DB db, Object threadstate) {
    String key = buildKeyName(keysequence.nextValue().longValue());
    Status s = db.insert(table, key, record(key, insertClass(key)));
    return s != null && s.isOk();
  }

  private long nextKeynum() {
    long keynum;
    if (keychooser instanceof ExponentialGenerator) {
      do {
        keynum = transactioninsertkeysequence.lastValue() - keychooser.nextValue().intValue();
      } while (keynum < 0);
    } else {
      do {
        keynum = keychooser.nextValue().intValue();
      } while (keynum > transactioninsertkeysequence.lastValue());
    }
    return keynum;
  }

  private void check(String key, Map<String, ByteIterator> cells) {
    if (verify) measurements.reportStatus("VERIFY", isValid(key, cells) ? Status.OK : Status.UNEXPECTED_STATE);
  }

  @Override
  public void doTransactionRead(DB db) {
    String key = buildKeyName(nextKeynum());
    Map<String, ByteIterator> cells = new HashMap<>();
    db.read(table, key, null, cells);
    check(key, cells);
  }

  @Override
  public void doTransactionUpdate(DB db) {
    String key = buildKeyName(nextKeynum());
    db.update(table, key, record(key, updateClass(key)));
  }

  @Override
  public void doTransactionInsert(DB db) {
    long keynum = transactioninsertkeysequence.nextValue();
    try {
      String key = buildKeyName(keynum);
      db.insert(table, key, record(key, insertClass(key)));
    } finally {
      transactioninsertkeysequence.acknowledge(keynum);
    }
  }

  @Override
  public void doTransactionReadModifyWrite(DB db) {
    String key = buildKeyName(nextKeynum());
    Map<String, ByteIterator> values = record(key, updateClass(key));
    Map<String, ByteIterator> cells = new HashMap<>();
    long ist = measurements.getIntendedtartTimeNs();
    long st = System.nanoTime();
    db.read(table, key, null, cells);
    db.update(table, key, values);
    long en = System.nanoTime();
    check(key, cells);
    measurements.measure("READ-MODIFY-WRITE", (int) ((en - st) / 1000));
    measurements.measureIntended("READ-MODIFY-WRITE", (int) ((en - ist) / 1000));
  }
}
