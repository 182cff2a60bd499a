package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.bson.Document;
import io.parallaxkv.Region;
import io.parallaxkv.ScanOptions;
import io.parallaxkv.Scanner;
import io.parallaxkv.Snapshot;
import io.parallaxkv.WriteBatch;
import io.parallaxkv.WriteOptions;
import java.util.ArrayList;
import java.util.List;

/**
 * One collection's region (layout in {@link KeyLayout}): reads, atomic write batches, and the
 * catalog kept beside the documents — the collection's counters and its index definitions.
 *
 * <p>Writers are serialized by the collection (one writer per collection), which is what keeps
 * the in-memory counters equal to the persisted ones: every batch that changes a document also
 * rewrites the counters, so after a crash they match the documents that survived.
 */
final class CollectionStore implements AutoCloseable {
  static final byte[] EMPTY = new byte[0];
  private static final byte[] STATS_KEY = KeyLayout.meta("stats");
  private static final byte[] COLLECTION_KEY = KeyLayout.meta("collection");
  private static final String INDEX_META_PREFIX = "index:";
  private static final int DELETE_CHUNK = 1000;

  private final Region region;
  private final String namespace;
  private long count;
  private long dataSize;
  private int nextIndexId;
  private volatile boolean dropping;

  CollectionStore(Region region, String namespace) {
    this.region = region;
    this.namespace = namespace;
    byte[] stats = region.get(STATS_KEY);
    if (stats != null) {
      Document d = BsonCodec.decode(stats);
      count = ((Number) d.get("count")).longValue();
      dataSize = ((Number) d.get("size")).longValue();
    }
    byte[] meta = region.get(COLLECTION_KEY);
    nextIndexId = meta == null ? 1 : ((Number) BsonCodec.decode(meta).get("nextIndexId")).intValue();
  }

  String namespace() {
    return namespace;
  }

  // ---- documents -----------------------------------------------------------------------------

  Document get(RecordKey key) {
    byte[] bson = region.get(key.key());
    return bson == null ? null : BsonCodec.decode(bson);
  }

  /**
   * Reads the record and drops it: its index leaves and value are in memory afterwards (values
   * are written with direct I/O, so a record not read since it was written is on the device).
   */
  void readAhead(RecordKey key) {
    region.get(key.key());
  }

  boolean exists(RecordKey key) {
    return region.exists(key.key());
  }

  Snapshot snapshot() {
    return region.snapshot();
  }

  /** A scanner over the current state of the keys in {@code [from, to)}. */
  Scanner scan(byte[] from, byte[] to) {
    return region.scanner(range(from, to));
  }

  static ScanOptions range(byte[] from, byte[] to) {
    return range(from, to, 0);
  }

  /** The keys in {@code [from, to)}, about {@code readahead} of them to be read (0: unknown). */
  static ScanOptions range(byte[] from, byte[] to, int readahead) {
    return ScanOptions.builder().lowerBound(from, true).upperBound(to, false)
        .readahead(readahead).build();
  }

  static ScanOptions records() {
    return range(new byte[] {KeyLayout.RECORD}, new byte[] {KeyLayout.RECORD + 1});
  }

  // ---- writes --------------------------------------------------------------------------------

  /**
   * Applies {@code batch} with the counter changes added to it, atomically. Durability is the
   * engine's group commit; {@link #sync()} waits for it (a {@code j:true} write concern).
   */
  void write(WriteBatch batch, long countDelta, long sizeDelta) {
    if (countDelta != 0 || sizeDelta != 0) {
      batch.put(STATS_KEY, BsonCodec.encode(new Document("count", count + countDelta)
          .append("size", dataSize + sizeDelta)));
    }
    region.write(batch, WriteOptions.DEFAULT);
    count += countDelta;
    dataSize += sizeDelta;
  }

  /** Makes every write to this collection acknowledged so far durable. */
  void sync() {
    region.sync();
  }

  long count() {
    return count;
  }

  long dataSize() {
    return dataSize;
  }

  // ---- index catalog -------------------------------------------------------------------------

  /** The stored definitions of the secondary indexes, each {@code {id, multikey, spec}}. */
  List<Document> indexDefinitions() {
    List<Document> out = new ArrayList<>();
    byte[] from = KeyLayout.meta(INDEX_META_PREFIX);
    try (Scanner s = scan(from, KeyLayout.successor(from))) {
      for (; s.isValid(); s.next()) out.add(BsonCodec.decode(s.value()));
    }
    return out;
  }

  /** An index id never used in this collection (persisted with the index's definition). */
  int allocateIndexId() {
    return nextIndexId++;
  }

  /** Adds to {@code batch} the definition of an index (and the id counter past it). */
  void putIndexDefinition(WriteBatch batch, String name, Document definition) {
    batch.put(KeyLayout.meta(INDEX_META_PREFIX + name), BsonCodec.encode(definition));
    batch.put(COLLECTION_KEY, BsonCodec.encode(new Document("ns", namespace)
        .append("nextIndexId", nextIndexId)));
  }

  /**
   * The collection is being dropped: its region goes as a whole, so the library's index drops
   * that come first leave the region alone. Deleting their entries one by one would only cost
   * time, and a crash in the middle would leave a collection with some of its indexes gone.
   */
  void beginDrop() {
    dropping = true;
  }

  /** Removes an index's definition durably, then its entries (after a crash, see reopen). */
  void dropIndex(String name, int indexId) {
    if (dropping) return;
    try (WriteBatch batch = new WriteBatch()) {
      batch.delete(KeyLayout.meta(INDEX_META_PREFIX + name));
      region.write(batch, WriteOptions.SYNC);
    }
    deleteRange(KeyLayout.indexPrefix(indexId));
  }

  /**
   * Deletes every key starting with {@code prefix}, in batches (not atomic: used for the entries
   * of an index no definition refers to, which no reader looks at).
   */
  void deleteRange(byte[] prefix) {
    byte[] end = KeyLayout.successor(prefix);
    while (true) {
      int n = 0;
      try (WriteBatch batch = new WriteBatch(); Scanner s = scan(prefix, end)) {
        for (; s.isValid() && n < DELETE_CHUNK; s.next(), n++) batch.delete(s.key());
        if (n == 0) return;
        region.write(batch, WriteOptions.DEFAULT);
      }
    }
  }

  /**
   * Deletes index entries whose index has no definition: left by an index build or drop that a
   * crash interrupted. Called when the collection is opened, before any index id is allocated.
   */
  void removeOrphanIndexEntries(java.util.Set<Integer> liveIndexIds) {
    byte[] at = KeyLayout.indexPrefix(0);
    byte[] end = new byte[] {KeyLayout.INDEX + 1};
    while (true) {
      byte[] next;
      try (Scanner s = scan(at, end)) {
        if (!s.isValid()) return;
        next = s.key();
      }
      int id = ((next[1] & 0xff) << 24) | ((next[2] & 0xff) << 16) | ((next[3] & 0xff) << 8)
          | (next[4] & 0xff);
      byte[] prefix = KeyLayout.indexPrefix(id);
      if (!liveIndexIds.contains(id)) deleteRange(prefix);
      at = KeyLayout.successor(prefix);
    }
  }

  @Override
  public void close() {
    region.close();
  }
}
