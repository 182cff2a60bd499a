package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.bson.Document;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Chooses how to run a query: a scan of one index over the intervals the filter allows, or a
 * collection scan. Each index (the records themselves for {@code _id_}) is scored by how much of
 * its key prefix the filter pins down — equality fields count twice, a trailing range once —
 * and by whether its order gives the requested sort; the best one wins.
 */
final class QueryPlanner {
  /** Compound {@code $in} lists multiply; past this many intervals a field is not narrowed. */
  private static final int MAX_INTERVALS = 256;

  private QueryPlanner() {}

  static QueryPlan plan(Document filter, Document sort, List<StoredIndex> indexes) {
    Map<String, FieldBounds> bounds = FieldBounds.of(filter == null ? new Document() : filter);
    List<SortKey> sortKeys = SortKey.of(sort);
    int idOrder = sortMatch(sortKeys, List.of(new IndexKey("_id", true)), 0).direction();
    QueryPlan best = QueryPlan.collectionScan(idOrder != 0, idOrder < 0);
    int bestScore = best.providesSort() && !sortKeys.isEmpty() ? 0 : -1;
    for (StoredIndex index : indexes) {
      QueryPlan candidate = indexPlan(index, bounds, sortKeys);
      if (candidate == null) continue;
      int score = candidate.score();
      if (score > bestScore) {
        best = candidate;
        bestScore = score;
      }
    }
    return best;
  }

  /** A sort field and direction from the query's sort document. */
  record SortKey(String field, boolean ascending) {
    static List<SortKey> of(Document sort) {
      List<SortKey> out = new ArrayList<>();
      if (sort == null) return out;
      for (Map.Entry<String, Object> e : sort.entrySet()) {
        if (e.getKey().equals("$natural")) continue; // natural order is _id order here
        if (!(e.getValue() instanceof Number n)) return List.of(new SortKey("$meta", true));
        out.add(new SortKey(e.getKey(), n.doubleValue() > 0));
      }
      return out;
    }
  }

  private static QueryPlan indexPlan(StoredIndex index, Map<String, FieldBounds> bounds,
      List<SortKey> sortKeys) {
    List<IndexKey> fields = index.getKeys();
    boolean multikey = index.isMultikey();
    FieldBounds first = bounds.get(fields.get(0).getKey());
    if (index.isSparse() && (first == null || !first.excludesNull(multikey))) {
      return null; // a sparse index lacks the documents without the field
    }
    boolean records = !(index instanceof SecondaryIndex);
    FieldBounds.KeyEnds ends = records ? FieldBounds.KeyEnds.RECORD : FieldBounds.KeyEnds.ENTRY;
    byte[] start = records
        ? new byte[] {KeyLayout.RECORD} : KeyLayout.indexPrefix(((SecondaryIndex) index).id());
    List<byte[]> prefixes = List.of(start);
    List<byte[][]> intervals = null;
    Document display = new Document();
    int equalityFields = 0;
    int singlePointFields = 0;
    boolean range = false;
    for (IndexKey field : fields) {
      FieldBounds b = bounds.get(field.getKey());
      boolean descending = !field.isAscending();
      if (b != null && b.points() != null
          && prefixes.size() * b.points().size() <= MAX_INTERVALS) {
        prefixes = extend(prefixes, b.points(), descending);
        if (singlePointFields == equalityFields && b.points().size() == 1) singlePointFields++;
        equalityFields++;
        List<String> shown = new ArrayList<>();
        for (Object p : b.points()) shown.add("[" + FieldBounds.json(p) + ", " + FieldBounds.json(p) + "]");
        display.put(field.getKey(), shown);
        continue;
      }
      byte[][] r = b == null ? null : b.rangeKeys(descending, multikey, ends);
      if (r != null) {
        intervals = new ArrayList<>();
        if (Arrays.compareUnsigned(r[0], r[1]) < 0) {
          for (byte[] p : prefixes) {
            intervals.add(new byte[][] {KeyLayout.concat(p, r[0]), KeyLayout.concat(p, r[1])});
          }
        }
        range = true;
        display.put(field.getKey(), List.of(b.rangeDisplay(multikey)));
      }
      break;
    }
    for (IndexKey field : fields) display.putIfAbsent(field.getKey(), List.of("[MinKey, MaxKey]"));
    if (intervals == null) {
      intervals = new ArrayList<>();
      for (byte[] p : prefixes) {
        // Exactly the pinned values: see FieldBounds.KeyEnds.
        intervals.add(equalityFields == 0 ? new byte[][] {p, KeyLayout.successor(p)}
            : new byte[][] {ends.before(p), ends.after(p)});
      }
    }
    SortMatch match = multikey ? SortMatch.NONE : sortMatch(sortKeys, fields, singlePointFields);
    boolean sorted = match.direction() != 0;
    boolean usefulSort = sorted && !sortKeys.isEmpty();
    if (equalityFields == 0 && !range && !usefulSort) return null; // no better than a scan
    // Pinned key prefix first; the sort breaks ties.
    int score = 2 * (equalityFields * 2 + (range ? 1 : 0)) + (usefulSort ? 1 : 0);
    if (index instanceof IdIndex id && equalityFields == fields.size()) {
      return QueryPlan.idLookups(id, intervals, sorted, match.direction() < 0, display, score);
    }
    return QueryPlan.indexScan(index, intervals, sorted, match.direction() < 0,
        !match.wholeKey(), display, score);
  }

  private static List<byte[]> extend(List<byte[]> prefixes, List<Object> points,
      boolean descending) {
    List<byte[]> encoded = new ArrayList<>();
    for (Object p : points) {
      byte[] e = FieldBounds.encode(p, descending);
      if (encoded.stream().noneMatch(x -> Arrays.equals(x, e))) encoded.add(e);
    }
    encoded.sort(Arrays::compareUnsigned); // intervals in key order: the scan stays sorted
    List<byte[]> out = new ArrayList<>(prefixes.size() * encoded.size());
    for (byte[] p : prefixes) {
      for (byte[] e : encoded) out.add(KeyLayout.concat(p, e));
    }
    return out;
  }

  /**
   * How a scan of an index's {@code fields} yields a sort: {@code direction} 1 in key order, -1
   * in reverse key order, 0 not at all; {@code wholeKey} when the sort runs to the index's last
   * field, so that documents tied on the sort are tied on the whole key (and come out in
   * {@code _id} order) — otherwise ties follow the further fields and need {@link TieOrder}.
   */
  record SortMatch(int direction, boolean wholeKey) {
    static final SortMatch NONE = new SortMatch(0, true);
  }

  /**
   * The sort must be a run of index fields starting no later than the first field that is not
   * pinned to a single value, in the index's directions (forward) or in all the opposite ones
   * (backward).
   */
  static SortMatch sortMatch(List<SortKey> sortKeys, List<IndexKey> fields, int pinned) {
    if (sortKeys.isEmpty()) return new SortMatch(1, true);
    for (int start = 0; start <= pinned; start++) {
      if (start + sortKeys.size() > fields.size()) return SortMatch.NONE;
      boolean same = true;
      boolean opposite = true;
      for (int k = 0; k < sortKeys.size(); k++) {
        IndexKey f = fields.get(start + k);
        boolean named = f.getKey().equals(sortKeys.get(k).field());
        same &= named && f.isAscending() == sortKeys.get(k).ascending();
        opposite &= named && f.isAscending() != sortKeys.get(k).ascending();
      }
      boolean wholeKey = start + sortKeys.size() == fields.size();
      if (same) return new SortMatch(1, wholeKey);
      if (opposite) return new SortMatch(-1, wholeKey);
    }
    return SortMatch.NONE;
  }
}
