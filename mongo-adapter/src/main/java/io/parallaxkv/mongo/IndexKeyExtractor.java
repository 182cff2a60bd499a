package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.CannotIndexParallelArraysError;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The key tuples a document contributes to an index, as MongoDB derives them: the value at each
 * field's dotted path (null when missing), one tuple per element when a path goes through an
 * array (a multikey index), an empty array indexed as itself so that every document has at
 * least one entry. Two array-valued fields in one compound index are refused, as in MongoDB.
 */
final class IndexKeyExtractor {
  private IndexKeyExtractor() {}

  /** The tuples of {@code document}; {@link Keys#multikey} says whether an array was expanded. */
  static Keys extract(Document document, List<IndexKey> fields) {
    List<List<Object>> perField = new ArrayList<>(fields.size());
    List<String> arrayFields = new ArrayList<>();
    for (IndexKey field : fields) {
      Map<ByteBuffer, Object> values = new LinkedHashMap<>();
      boolean array = collect(document, field.getKey().split("\\.", -1), 0, values);
      if (array) arrayFields.add(field.getKey());
      perField.add(new ArrayList<>(values.values()));
    }
    if (arrayFields.size() > 1) throw new CannotIndexParallelArraysError(arrayFields);
    List<List<Object>> tuples = new ArrayList<>();
    product(perField, 0, new ArrayList<>(), tuples);
    return new Keys(tuples, !arrayFields.isEmpty());
  }

  /** The index entries of one document. */
  record Keys(List<List<Object>> tuples, boolean multikey) {}

  /** Adds the values at {@code path[i..]} below {@code value}; true if an array was expanded. */
  private static boolean collect(Object value, String[] path, int i, Map<ByteBuffer, Object> out) {
    if (i == path.length) {
      if (value instanceof Collection<?> c && !c.isEmpty()) {
        for (Object element : c) addDistinct(out, element);
        return true;
      }
      addDistinct(out, value);
      return false;
    }
    if (value instanceof Document d) {
      return collect(d.containsKey(path[i]) ? d.get(path[i]) : null, path, i + 1, out);
    }
    if (value instanceof Collection<?> c && !c.isEmpty()) {
      // A path through an array of sub-documents reaches into each of them.
      for (Object element : c) collect(element instanceof Document ? element : null, path, i, out);
      return true;
    }
    addDistinct(out, null);
    return false;
  }

  /** Values that encode alike (1 and 1.0) are one index entry. */
  private static void addDistinct(Map<ByteBuffer, Object> out, Object value) {
    out.putIfAbsent(ByteBuffer.wrap(KeyString.encode(value)), value);
  }

  private static void product(List<List<Object>> perField, int i, List<Object> prefix,
      List<List<Object>> out) {
    if (i == perField.size()) {
      out.add(new ArrayList<>(prefix));
      return;
    }
    for (Object v : perField.get(i)) {
      prefix.add(v);
      product(perField, i + 1, prefix, out);
      prefix.remove(prefix.size() - 1);
    }
  }
}
