package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.bson.BsonRegularExpression;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.bson.Json;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
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

  /** A range of encoded values: keys from {@code low} up to keys starting with {@code high}. */
  record Range(byte[] low, byte[] high, String display) {
    byte[] highEnd() {
      return KeyLayout.successor(high);
    }
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
      addPoints(List.of(predicate));
    }
  }

  private void operator(String op, Object v) {
    switch (op) {
      case "$eq" -> {
        if (isPoint(v)) addPoints(List.of(v));
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
          ranges.add(new Range(KeyString.encode(v), rankOnly(v),
              (op.equals("$gt") ? "(" : "[") + json(v) + ", " + typeEnd(v) + "]"));
        }
      }
      case "$lt", "$lte" -> {
        if (isRangeBound(v)) {
          ranges.add(new Range(rankOnly(v), KeyString.encode(v),
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

  private static byte[] rankOnly(Object v) {
    return new byte[] {(byte) KeyString.rank(v)};
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
   * The range to scan, or null. On a multikey index two range operators may be satisfied by
   * different array elements, so only one is used there (as MongoDB does); otherwise they
   * intersect.
   */
  Range range(boolean multikey) {
    if (ranges.isEmpty()) return null;
    Range r = ranges.get(0);
    if (multikey) return r;
    for (Range o : ranges.subList(1, ranges.size())) {
      byte[] low = Arrays.compareUnsigned(o.low(), r.low()) > 0 ? o.low() : r.low();
      byte[] high = Arrays.compareUnsigned(o.highEnd(), r.highEnd()) < 0 ? o.high() : r.high();
      r = new Range(low, high, r.display() + " ∩ " + o.display());
    }
    return r;
  }

  /** True if no value in these bounds is null or missing (a sparse index can serve them). */
  boolean excludesNull(boolean multikey) {
    if (points != null) return points.stream().noneMatch(p -> p == null);
    return range(multikey) != null; // ranges never take null as a bound
  }
}
