package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.backend.Missing;
import de.bwaldvogel.mongo.backend.Utils;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.DuplicateKeyError;
import de.bwaldvogel.mongo.exception.MongoServerError;
import io.parallaxkv.Parallax;
import io.parallaxkv.Scanner;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A single-field or compound secondary index, unique or not, sparse or not, ascending and/or
 * descending per field. Its entries are keys {@code 0x03 id KeyString(fields) KeyString(_id)}
 * in the collection's region (descending fields byte-inverted, so that a forward scan yields the
 * index's order); {@link ParallaxCollection} writes them with their document.
 */
final class SecondaryIndex extends StoredIndex {
  /** MongoDB's error for a key over the engine's limit ("key too large to index"). */
  private static final int KEY_TOO_LONG = 17280;

  private final CollectionStore store;
  private final int id;
  private final boolean unique;
  private boolean multikey;
  private boolean built;

  SecondaryIndex(CollectionStore store, int id, String name, List<IndexKey> keys, boolean unique,
      boolean sparse, boolean multikey, boolean built) {
    super(name, keys, sparse);
    this.store = store;
    this.id = id;
    this.unique = unique;
    this.multikey = multikey;
    this.built = built;
  }

  /** Rebuilds an index from its stored definition. */
  static SecondaryIndex fromDefinition(CollectionStore store, Document definition) {
    Document spec = (Document) definition.get("spec");
    Document key = (Document) spec.get("key");
    List<IndexKey> keys = new ArrayList<>();
    for (Map.Entry<String, Object> e : key.entrySet()) {
      keys.add(new IndexKey(e.getKey(), ((Number) e.getValue()).doubleValue() > 0));
    }
    return new SecondaryIndex(store, ((Number) definition.get("id")).intValue(),
        (String) spec.get("name"), keys, Utils.isTrue(spec.get("unique")),
        Utils.isTrue(spec.get("sparse")), Utils.isTrue(definition.get("multikey")), true);
  }

  /** The definition stored in the catalog. */
  Document definition() {
    return new Document("id", id).append("multikey", multikey).append("spec", toIndexDescription());
  }

  int id() {
    return id;
  }

  boolean isBuilt() {
    return built;
  }

  void markBuilt() {
    built = true;
  }

  @Override
  boolean isMultikey() {
    return multikey;
  }

  void markMultikey() {
    multikey = true;
  }

  @Override
  public boolean isUnique() {
    return unique;
  }

  /** The entries of {@code document} (none for a sparse index when every field is missing). */
  Entries entries(Document document, RecordKey record) {
    if (isSparse() && keys().stream().allMatch(
        k -> Utils.getSubdocumentValueCollectionAware(document, k) instanceof Missing)) {
      return new Entries(Map.of(), false);
    }
    IndexKeyExtractor.Keys keys = IndexKeyExtractor.extract(document, getKeys());
    Map<ByteBuffer, List<Object>> out = new LinkedHashMap<>();
    for (List<Object> tuple : keys.tuples()) {
      byte[] entry = KeyLayout.indexEntry(id, encodeFields(tuple), record.idKeyString());
      if (entry.length > Parallax.MAX_KEY_SIZE) {
        throw new MongoServerError(KEY_TOO_LONG, "KeyTooLong", "key too large to index ("
            + entry.length + " bytes, the engine's limit is " + Parallax.MAX_KEY_SIZE + "): index "
            + getName());
      }
      out.put(ByteBuffer.wrap(entry), tuple);
    }
    return new Entries(out, keys.multikey());
  }

  /** The index entries of one document, each with the field values it encodes. */
  record Entries(Map<ByteBuffer, List<Object>> keys, boolean multikey) {}

  /** The encoding of one tuple of field values, each in its field's direction. */
  byte[] encodeFields(List<Object> tuple) {
    KeyString.Builder b = new KeyString.Builder();
    for (int i = 0; i < tuple.size(); i++) b.append(tuple.get(i), !getKeys().get(i).isAscending());
    return b.toByteArray();
  }

  @Override
  public void checkAdd(Document document, MongoCollection<RecordKey> collection) {
    checkUnique(document, null, collection);
  }

  @Override
  public void checkUpdate(Document oldDocument, Document newDocument,
      MongoCollection<RecordKey> collection) {
    checkUnique(newDocument, RecordKey.of(oldDocument), collection);
  }

  /**
   * Refuses {@code document} if a unique index has an entry with one of its field tuples for
   * another record. Writers are serialized per collection, so the answer holds until the write.
   */
  private void checkUnique(Document document, RecordKey self, MongoCollection<RecordKey> coll) {
    if (!unique) return;
    RecordKey record = RecordKey.of(document);
    for (List<Object> tuple : entries(document, record).keys().values()) {
      byte[] fields = encodeFields(tuple);
      byte[] prefix = KeyLayout.concat(KeyLayout.indexPrefix(id), fields);
      try (Scanner s = store.scan(prefix, KeyLayout.successor(prefix))) {
        for (; s.isValid(); s.next()) {
          byte[] entry = s.key();
          // A prefix match may be a longer value (KeyString escapes): compare exactly.
          if (Arrays.equals(KeyLayout.fieldsOfEntry(entry), fields)
              && !KeyLayout.recordOfEntry(entry).equals(self)) {
            throw new DuplicateKeyError(this, coll, getKeys(), new KeyValue(tuple));
          }
        }
      }
    }
  }

  @Override
  public long getCount() {
    long n = 0;
    byte[] prefix = KeyLayout.indexPrefix(id);
    try (Scanner s = store.scan(prefix, KeyLayout.successor(prefix))) {
      for (; s.isValid(); s.next()) n++;
    }
    return n;
  }

  @Override
  public long getDataSize() {
    long bytes = 0;
    byte[] prefix = KeyLayout.indexPrefix(id);
    try (Scanner s = store.scan(prefix, KeyLayout.successor(prefix))) {
      for (; s.isValid(); s.next()) bytes += s.keyLength();
    }
    return bytes;
  }

  @Override
  public void drop() {
    store.dropIndex(getName(), id);
  }
}
