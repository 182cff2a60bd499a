package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.bson.Document;
import io.parallaxkv.Scanner;
import io.parallaxkv.Snapshot;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * A chosen way to produce a query's candidate documents: a collection scan (records in
 * {@code _id} order) or a scan of one index's intervals, fetching each entry's document. It runs
 * on one engine snapshot, so index entries and documents are seen at the same instant, and
 * counts what it examined for {@code explain}.
 */
final class QueryPlan {
  private final StoredIndex index; // null: a collection scan
  private final List<byte[][]> intervals;
  /** Each interval holds one record key, its first: {@code _id} pinned (MongoDB's IDHACK). */
  private final boolean idPoints;
  private final boolean providesSort;
  private final boolean backward;
  private final boolean tiesFollowIndex;
  private final Document bounds;
  private final int score;

  private QueryPlan(StoredIndex index, List<byte[][]> intervals, boolean idPoints,
      boolean providesSort, boolean backward, boolean tiesFollowIndex, Document bounds,
      int score) {
    assert providesSort || !backward : "a backward scan is chosen only for its order";
    assert !idPoints || index instanceof IdIndex : "only records are looked up by key";
    this.index = index;
    this.intervals = intervals;
    this.idPoints = idPoints;
    this.providesSort = providesSort;
    this.backward = backward;
    this.tiesFollowIndex = tiesFollowIndex;
    this.bounds = bounds;
    this.score = score;
  }

  /** Records in {@code _id} order, or in reverse {@code _id} order if {@code backward}. */
  static QueryPlan collectionScan(boolean providesSort, boolean backward) {
    byte[][] all = {{KeyLayout.RECORD}, {KeyLayout.RECORD + 1}};
    return new QueryPlan(null, List.<byte[][]>of(all), false, providesSort, backward, false, null,
        -1);
  }

  /**
   * A scan of {@code intervals} (disjoint, in key order) of {@code index}; {@code backward} scans
   * them last to first with the engine's reverse iteration, for a sort opposite to the index;
   * {@code tiesFollowIndex} when the sort is on leading fields only, so documents tied on it come
   * out in the order of the index's further fields (see {@link TieOrder}).
   */
  static QueryPlan indexScan(StoredIndex index, List<byte[][]> intervals, boolean providesSort,
      boolean backward, boolean tiesFollowIndex, Document bounds, int score) {
    return new QueryPlan(index, intervals, false, providesSort, backward, tiesFollowIndex, bounds,
        score);
  }

  /**
   * Lookups of the records whose keys are the first keys of {@code intervals} (in key order,
   * each interval holding just that key): a filter that pins {@code _id} to values.
   */
  static QueryPlan idLookups(IdIndex index, List<byte[][]> intervals, boolean providesSort,
      boolean backward, Document bounds, int score) {
    return new QueryPlan(index, intervals, true, providesSort, backward, false, bounds, score);
  }

  /** The one record the plan looks up, or null if it is not a single {@code _id} lookup. */
  RecordKey singleRecord() {
    return idPoints && intervals.size() == 1 ? RecordKey.ofKey(intervals.get(0)[0]) : null;
  }

  /**
   * Whether running the plan reads a secondary index, whose entries and multikey flag must be
   * seen at the instant the plan was made (ParallaxCollection#planned).
   */
  boolean readsSecondaryIndex() {
    return index instanceof SecondaryIndex;
  }

  /** Whether documents that tie on the sort come out in index order rather than {@code _id} order. */
  boolean tiesFollowIndex() {
    return tiesFollowIndex;
  }

  int score() {
    return score;
  }

  /** Whether documents come out in the requested sort order (no in-memory sort needed). */
  boolean providesSort() {
    return providesSort;
  }

  /** Keys and documents a run looked at. */
  static final class Counters {
    long keysExamined;
    long docsExamined;
  }

  /**
   * The candidate documents, lazily (a limit stops the scan early). Close the stream: it holds
   * an engine snapshot and scanner.
   */
  Stream<Document> execute(CollectionStore store, Counters counters) {
    return execute(store, counters, 0);
  }

  /**
   * As {@link #execute(CollectionStore, Counters)}, for a caller that expects to read about
   * {@code readahead} candidates ({@code 0}: unknown): each scanner is told so
   * ({@link io.parallaxkv.ScanOptions.Builder#readahead}), so that on data larger than memory
   * its first seek asks the device for all of them at once instead of a few entries at a time.
   */
  Stream<Document> execute(CollectionStore store, Counters counters, int readahead) {
    RecordKey single = singleRecord();
    if (single != null) {
      // One get is atomic by itself: no snapshot to take.
      counters.keysExamined++;
      Document document = store.get(single);
      if (document == null) return Stream.empty();
      counters.docsExamined++;
      return Stream.of(document);
    }
    Snapshot snapshot = store.snapshot();
    Candidates it = new Candidates(snapshot, counters, readahead);
    return StreamSupport.stream(Spliterators.spliteratorUnknownSize(it,
        Spliterator.ORDERED | Spliterator.NONNULL), false).onClose(() -> {
          it.closeScanner();
          snapshot.close();
        });
  }

  /**
   * Walks the intervals one scanner at a time, yielding each document once. Backward, entries
   * of equal field values come out in ascending {@code _id} order all the same (a run of them is
   * read backward, then handed out from its end), so that ties keep the order of a forward scan
   * and of the in-memory sort, whatever the plan.
   */
  private final class Candidates implements Iterator<Document> {
    private final Snapshot snapshot;
    private final Counters counters;
    private final int readahead;
    /**
     * Records already returned, for a multikey index (a document has several entries); taken
     * under the collection's lock with the snapshot, so the flag matches what the snapshot holds.
     */
    private final boolean multikey = index != null && index.isMultikey();
    private final Set<RecordKey> seen = new HashSet<>();
    /** Backward: entry keys of one run of equal field values, smallest {@code _id} first. */
    private final ArrayDeque<byte[]> tieRun = new ArrayDeque<>();
    private int interval;
    private Scanner scanner;
    private Document next;

    Candidates(Snapshot snapshot, Counters counters, int readahead) {
      this.snapshot = snapshot;
      this.counters = counters;
      this.readahead = readahead;
    }

    @Override
    public boolean hasNext() {
      while (next == null) {
        if (!tieRun.isEmpty()) {
          next = fetchEntry(tieRun.pop());
        } else if (idPoints) {
          if (interval == intervals.size()) return false;
          byte[][] point = intervals.get(backward ? intervals.size() - 1 - interval : interval);
          interval++;
          next = fetch(RecordKey.ofKey(point[0]));
        } else if (scanner == null) {
          if (interval == intervals.size()) return false;
          byte[][] range = intervals.get(backward ? intervals.size() - 1 - interval : interval);
          interval++;
          scanner = snapshot.scanner(CollectionStore.range(range[0], range[1], readahead));
          if (backward) scanner.seekToLast();
        } else if (!scanner.isValid()) {
          closeScanner();
        } else if (!(index instanceof SecondaryIndex)) {
          if (index != null) counters.keysExamined++;
          counters.docsExamined++;
          next = BsonCodec.decode(scanner.value());
          if (backward) scanner.prev();
          else scanner.next();
        } else if (backward) {
          byte[] fields = KeyLayout.fieldsOfEntry(scanner.key());
          do {
            tieRun.push(scanner.key());
          } while (scanner.prev() && Arrays.equals(fields, KeyLayout.fieldsOfEntry(scanner.key())));
        } else {
          next = fetchEntry(scanner.key());
          scanner.next();
        }
      }
      return true;
    }

    /** The document of an index entry, or null if it was returned already. */
    private Document fetchEntry(byte[] key) {
      RecordKey record = KeyLayout.recordOfEntry(key);
      // Intervals are disjoint, so only a multikey index reaches a document twice.
      if (multikey && !seen.add(record)) {
        counters.keysExamined++;
        return null;
      }
      return fetch(record); // null: never for a consistent index; validate reports it
    }

    /** The record's document in the snapshot, or null if it has none. */
    private Document fetch(RecordKey record) {
      counters.keysExamined++;
      byte[] bson = snapshot.get(record.key());
      if (bson == null) return null;
      counters.docsExamined++;
      return BsonCodec.decode(bson);
    }

    @Override
    public Document next() {
      if (!hasNext()) throw new NoSuchElementException();
      Document d = next;
      next = null;
      return d;
    }

    void closeScanner() {
      if (scanner != null) scanner.close();
      scanner = null;
    }
  }

  /**
   * The plan as {@code explain} shows it (MongoDB's stage names), run with {@code readahead}
   * (see {@link #execute(CollectionStore, Counters, int)}): a scan stage that passes it on says
   * so in a field of ours, {@code readahead}.
   */
  Document describe(int readahead) {
    String direction = backward ? "backward" : "forward";
    if (index == null) {
      return withReadahead(new Document("stage", "COLLSCAN").append("direction", direction), readahead);
    }
    if (singleRecord() != null) return new Document("stage", "IDHACK");
    Document key = new Document();
    for (IndexKey k : index.getKeys()) key.put(k.getKey(), k.isAscending() ? 1 : -1);
    Document scan = new Document("stage", "IXSCAN")
        .append("keyPattern", key)
        .append("indexName", index.getName())
        .append("isMultiKey", index.isMultikey())
        .append("isUnique", index.isUnique())
        .append("isSparse", index.isSparse())
        .append("direction", direction)
        .append("indexBounds", bounds)
        .append("intervals", intervals.size());
    return new Document("stage", "FETCH").append("inputStage", withReadahead(scan, readahead));
  }

  private static Document withReadahead(Document stage, int readahead) {
    return readahead > 0 ? stage.append("readahead", readahead) : stage;
  }
}
