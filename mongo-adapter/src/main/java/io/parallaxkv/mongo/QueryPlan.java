package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.bson.Document;
import io.parallaxkv.Scanner;
import io.parallaxkv.Snapshot;
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
  private final boolean providesSort;
  private final Document bounds;
  private final int score;

  private QueryPlan(StoredIndex index, List<byte[][]> intervals, boolean providesSort,
      Document bounds, int score) {
    this.index = index;
    this.intervals = intervals;
    this.providesSort = providesSort;
    this.bounds = bounds;
    this.score = score;
  }

  static QueryPlan collectionScan(boolean providesSort) {
    byte[][] all = {{KeyLayout.RECORD}, {KeyLayout.RECORD + 1}};
    return new QueryPlan(null, List.<byte[][]>of(all), providesSort, null, -1);
  }

  static QueryPlan indexScan(StoredIndex index, List<byte[][]> intervals, boolean providesSort,
      Document bounds, int score) {
    return new QueryPlan(index, intervals, providesSort, bounds, score);
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
    Snapshot snapshot = store.snapshot();
    Candidates it = new Candidates(snapshot, counters);
    return StreamSupport.stream(Spliterators.spliteratorUnknownSize(it,
        Spliterator.ORDERED | Spliterator.NONNULL), false).onClose(() -> {
          it.closeScanner();
          snapshot.close();
        });
  }

  /** Walks the intervals one scanner at a time, yielding each document once. */
  private final class Candidates implements Iterator<Document> {
    private final Snapshot snapshot;
    private final Counters counters;
    private final Set<RecordKey> seen = new HashSet<>(); // multikey and overlapping intervals
    private int interval;
    private Scanner scanner;
    private Document next;

    Candidates(Snapshot snapshot, Counters counters) {
      this.snapshot = snapshot;
      this.counters = counters;
    }

    @Override
    public boolean hasNext() {
      while (next == null) {
        if (scanner == null) {
          if (interval == intervals.size()) return false;
          byte[][] range = intervals.get(interval++);
          scanner = snapshot.scanner(CollectionStore.range(range[0], range[1]));
        } else if (!scanner.isValid()) {
          closeScanner();
        } else {
          next = fetch(scanner.key(), scanner);
          scanner.next();
        }
      }
      return true;
    }

    private Document fetch(byte[] key, Scanner s) {
      if (!(index instanceof SecondaryIndex)) {
        if (index != null) counters.keysExamined++;
        counters.docsExamined++;
        return BsonCodec.decode(s.value());
      }
      counters.keysExamined++;
      RecordKey record = KeyLayout.recordOfEntry(key);
      if (!seen.add(record)) return null;
      byte[] bson = snapshot.get(record.key());
      if (bson == null) return null; // never for a consistent index; validate reports it
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

  /** The plan as {@code explain} shows it (MongoDB's stage names). */
  Document describe() {
    if (index == null) return new Document("stage", "COLLSCAN").append("direction", "forward");
    Document key = new Document();
    for (IndexKey k : index.getKeys()) key.put(k.getKey(), k.isAscending() ? 1 : -1);
    Document scan = new Document("stage", "IXSCAN")
        .append("keyPattern", key)
        .append("indexName", index.getName())
        .append("isMultiKey", index.isMultikey())
        .append("isUnique", index.isUnique())
        .append("isSparse", index.isSparse())
        .append("direction", "forward")
        .append("indexBounds", bounds)
        .append("intervals", intervals.size());
    return new Document("stage", "FETCH").append("inputStage", scan);
  }
}
