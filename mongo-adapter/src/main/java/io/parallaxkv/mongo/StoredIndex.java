package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.bson.Document;
import java.util.List;

/**
 * An index of a {@link ParallaxCollection}. The library's {@link Index} contract lets each index
 * write its own entries; here the collection writes a document and all its index entries in one
 * atomic engine batch instead, and {@link QueryPlanner} chooses and scans indexes. So the
 * library's per-index write and lookup hooks are refused: nothing in this backend calls them.
 */
abstract class StoredIndex extends Index<RecordKey> {
  private static final String WRITTEN_BY_COLLECTION =
      "index entries are written in the document's batch by ParallaxCollection";
  private static final String PLANNED_BY_PLANNER = "queries are planned by QueryPlanner";

  StoredIndex(String name, List<IndexKey> keys, boolean sparse) {
    super(name, keys, sparse);
  }

  /** Whether some document had an array in an indexed field (one entry per element). */
  abstract boolean isMultikey();

  @Override
  public boolean isSparse() {
    return super.isSparse();
  }

  @Override
  public RecordKey getPosition(Document document) {
    return RecordKey.of(document);
  }

  @Override
  public void updateInPlace(Document oldDocument, Document newDocument, RecordKey position,
      MongoCollection<RecordKey> collection) {
    // Entries change in ParallaxCollection.handleUpdate, in the batch that rewrites the document.
  }

  @Override
  public void add(Document document, RecordKey position, MongoCollection<RecordKey> collection) {
    throw new UnsupportedOperationException(WRITTEN_BY_COLLECTION);
  }

  @Override
  public RecordKey remove(Document document) {
    throw new UnsupportedOperationException(WRITTEN_BY_COLLECTION);
  }

  @Override
  public boolean canHandle(Document query) {
    throw new UnsupportedOperationException(PLANNED_BY_PLANNER);
  }

  @Override
  public Iterable<RecordKey> getPositions(Document query) {
    throw new UnsupportedOperationException(PLANNED_BY_PLANNER);
  }
}
