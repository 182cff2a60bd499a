package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.DuplicateKeyError;
import java.util.List;

/**
 * The {@code _id_} index. Documents are keyed by the {@link KeyString} of their {@code _id}, so
 * the records themselves are this index: it has no entries of its own.
 */
final class IdIndex extends StoredIndex {
  static final String NAME = "_id_";
  private final CollectionStore store;

  IdIndex(CollectionStore store) {
    super(NAME, List.of(new IndexKey("_id", true)), false);
    this.store = store;
  }

  @Override
  boolean isMultikey() {
    return false;
  }

  @Override
  public boolean isUnique() {
    return true;
  }

  @Override
  public void checkAdd(Document document, MongoCollection<RecordKey> collection) {
    if (store.exists(RecordKey.of(document))) {
      throw new DuplicateKeyError(this, collection, getKeys(), new KeyValue(document.get("_id")));
    }
  }

  @Override
  public void checkUpdate(Document oldDocument, Document newDocument,
      MongoCollection<RecordKey> collection) {
    // _id is immutable (the library refuses updates that change it).
  }

  @Override
  public long getCount() {
    return store.count();
  }

  @Override
  public long getDataSize() {
    return 0; // no entries beside the records
  }

  @Override
  public void drop() {
    // Only with the whole collection, whose region goes with it.
  }
}
