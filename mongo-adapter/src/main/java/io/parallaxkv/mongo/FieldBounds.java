package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.bson.BsonRegularExpression;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.bson.Json;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * What the conjunctive part of a filter says about one field, in index terms: a set of points
 * (equality, {@code $eq}, {@code $in}) or ranges ({@code $gt}, {@code $gte}, {@code $lt},
 * {@code $lte}, bracketed by type as MongoDB does: {@code $gt: 5} only reaches numbers).
 *
 * <p>Bounds are always a superset of the matching values: scans include both ends, and every
 * document a plan fetches is checked against the whole filter by the library's matcher. So an
 * operator this class does not understand is simply not used to narrow a scan.
 */
final class FieldBounds {
  private List<Object> points;
  private final List<Range> ranges = new ArrayList<>();

  /**
   * A range of values of one type: from {@code low} (or the type's first value when null) to
   * {@code high} (or its last), each end inclusive or not.
   */
  record Range(int rank, Object low, boolean lowInclusive, Object high, boolean highInclusive,
      String display) {
    /**
     * The keys {@code [start, end)} that hold exactly this range's values, in a field stored in
     * the given direction; see {@link KeyEnds} for what follows a value.
     */
    byte[][] keys(boolean descending, KeyEnds ends) {
      if (!descending) {
        byte[] start = low == null ? new byte[] {(byte) rank}
            : lowInclusive ? ends.before(encode(low, false)) : ends.after(encode(low, false));
        byte[] end = high == null ? new byte[] {(byte) (rank + 1)}
            : highInclusive ? ends.after(encode(high, false)) : ends.before(encode(high, false));
        return new byte[][] {start, end};
      }
      byte[] start = high == null ? new byte[] {(byte) ~rank}
          : highInclusive ? ends.before(encode(high, true)) : ends.after(encode(high, true));
      byte[] end = low == null ? new byte[] {(byte) (~rank + 1)}
          : lowInclusive ? ends.after(encode(low, true)) : ends.before(encode(low, true));
      return new byte[][] {start, end};
    }
  }

  /**
   * Where the keys of exactly one encoded value E begin and end. Index entries continue after
   * E with the next field or the {@code _id}, whose first byte is in 0x01..0xFE: their keys lie
   * in {@code [E+0x01, E+0xFF)}, while a longer string sharing E's bytes (KeyString escapes NUL as
   * 0x00 0xFF) continues with 0xFF, or 0x00 in a descending field. A record's key ends with its
   * {@code _id}: exactly E is {@code [E, E+0x00)}.
   */
  enum KeyEnds {
    ENTRY(0x01, 0xff), RECORD(-1, 0x00);

    private final int before;
    private final int after;

    KeyEnds(int before, int after) {
      this.before = before;
      this.after = after;
    }

    /** The first key of exactly E. */
    byte[] before(byte[] e) {
      return before < 0 ? e : withByte(e, before);
    }

    /** The first key past exactly E. */
    byte[] after(byte[] e) {
      return withByte(e, after);
    }
  }

  static byte[] encode(Object value, boolean descending) {
    return new KeyString.Builder().append(value, descending).toByteArray();
  }

  static byte[] withByte(byte[] prefix, int b) {
    byte[] k = Arrays.copyOf(prefix, prefix.length + 1);
    k[prefix.length] = (byte) b;
    return k;
  }

  /** The bounds of every field the filter constrains conjunctively. */
  static Map<String, FieldBounds> of(Document filter) {
    Map<String, FieldBounds> out = new LinkedHashMap<>();
    addConjuncts(filter, out);
    return out;
  }

  private static void addConjuncts(Document filter, Map<String, FieldBounds> out) {
    for (Map.Entry<String, Object> e : filter.entrySet()) {
      String key = e.getKey();
      if (key.equals("$and") && e.getValue() instanceof Collection<?> all) {
        for (Object clause : all) {
          if (clause instanceof Document d) addConjuncts(d, out);
        }
      } else if (!key.startsWith("$")) { // $or, $nor, $expr, $where...: no bounds
        out.computeIfAbsent(key, k -> new FieldBounds()).add(e.getValue());
      }
    }
  }

  private void add(Object predicate) {
    if (predicate instanceof Document d && d.keySet().stream().anyMatch(k -> k.startsWith("$"))) {
      for (Map.Entry<String, Object> op : d.entrySet()) operator(op.getKey(), op.getValue());
    } else if (isPoint(predicate)) {
      addPoints(Collections.singletonList(predicate));
    }
  }

  private void operator(String op, Object v) {
    switch (op) {
      case "$eq" -> {
        if (isPoint(v)) addPoints(Collections.singletonList(v));
      }
      case "$in" -> {
        if (v instanceof Collection<?> c && c.stream().allMatch(FieldBounds::isPoint)) {
          List<Object> pts = new ArrayList<>();
          for (Object p : c) pts.add(p);
          addPoints(pts);
        }
      }
      case "$gt", "$gte" -> {
        if (isRangeBound(v)) {
          ranges.add(new Range(KeyString.rank(v), v, op.equals("$gte"), null, true,
              (op.equals("$gt") ? "(" : "[") + json(v) + ", " + typeEnd(v) + "]"));
        }
      }
      case "$lt", "$lte" -> {
        if (isRangeBound(v)) {
          ranges.add(new Range(KeyString.rank(v), null, true, v, op.equals("$lte"),
              "[" + typeStart(v) + ", " + json(v) + (op.equals("$lt") ? ")" : "]")));
        }
      }
      default -> { } // $ne, $nin, $exists, $regex, $elemMatch...: no bounds
    }
  }

  private void addPoints(List<Object> pts) {
    if (points == null) points = new ArrayList<>(pts); // a second set would intersect: keep one
  }

  /** Values an index entry can equal: not arrays (matched element-wise or whole) nor regexes. */
  private static boolean isPoint(Object v) {
    if (v instanceof Collection || v instanceof BsonRegularExpression || v instanceof Pattern) {
      return false;
    }
    return !(v instanceof Document d && BsonRegularExpression.isRegularExpression(d));
  }

  private static boolean isRangeBound(Object v) {
    return v != null && isPoint(v) && !(v instanceof Document);
  }

  private static String typeStart(Object v) {
    return v instanceof Number ? "-inf" : "MinOf" + v.getClass().getSimpleName();
  }

  private static String typeEnd(Object v) {
    return v instanceof Number ? "inf" : "MaxOf" + v.getClass().getSimpleName();
  }

  static String json(Object v) {
    return Json.toCompactJsonValue(v);
  }

  /** Equality points, or null when the field has none. */
  List<Object> points() {
    return points;
  }

  /**
   * The keys {@code [start, end)} to scan for this field's ranges, or null if it has none. On a
   * multikey index two range operators may be satisfied by different array elements, so only
   * one is used there (as MongoDB does); otherwise they intersect.
   */
  byte[][] rangeKeys(boolean descending, boolean multikey, KeyEnds ends) {
    if (ranges.isEmpty()) return null;
    byte[][] r = ranges.get(0).keys(descending, ends);
    if (multikey) return r;
    for (Range o : ranges.subList(1, ranges.size())) {
      byte[][] k = o.keys(descending, ends);
      r = new byte[][] {
          Arrays.compareUnsigned(k[0], r[0]) > 0 ? k[0] : r[0],
          Arrays.compareUnsigned(k[1], r[1]) < 0 ? k[1] : r[1]};
    }
    return r;
  }

  /** How explain shows the ranges used. */
  String rangeDisplay(boolean multikey) {
    if (multikey) return ranges.get(0).display();
    return String.join(" ∩ ", ranges.stream().map(Range::display).toList());
  }

  /** True if no value in these bounds is null or missing (a sparse index can serve them). */
  boolean excludesNull(boolean multikey) {
    if (points != null) return points.stream().noneMatch(p -> p == null);
    return !ranges.isEmpty(); // ranges never take null as a bound
  }
}
