package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.backend.AbstractCursor;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.CursorNotFoundException;
import de.bwaldvogel.mongo.exception.MongoServerError;
import io.parallaxkv.ParallaxException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

/**
 * A find's cursor that produces its batches lazily from the query's stream — an engine snapshot
 * and scanner under it — instead of holding the whole result. Memory is one batch (at most
 * {@link #BATCH_BYTES} of documents, whatever the batch size asked) plus what the plan itself
 * keeps: nothing for an index or collection scan in the sort's order, the matching documents for
 * an in-memory sort, one run of ties for a sort on an index's leading fields.
 *
 * <p>It holds its snapshot until it is exhausted, killed ({@code killCursors}) or idle longer
 * than the cursor timeout ({@link CursorReaper}); then the snapshot is released. Methods are
 * synchronized: a getMore, a kill and the reaper may meet.
 */
final class StreamingCursor extends AbstractCursor {
  /** MongoDB's default first batch when the find names no batch size. */
  static final int DEFAULT_FIRST_BATCH = 101;
  /** A batch stops growing past this many bytes of BSON (MongoDB's 16 MiB reply limit). */
  static final int BATCH_BYTES = 16 << 20;

  private final String namespace;
  private final String owner;
  private final Stream<Document> results;
  private final Iterator<Document> iterator;
  private final UnaryOperator<List<Document>> projection;
  private final QueryPlan.Counters counters;
  private final CursorReaper reaper;
  private long lastUsedNanos = System.nanoTime();
  private boolean closed;

  /**
   * @param owner the user who opened it ({@link Authenticator#cursorOwner}), null for anyone
   * @param results the query's documents in their final order, skip and limit applied; closing
   *     it releases the snapshot
   * @param projection applied to each batch (the library's projection)
   */
  StreamingCursor(long id, String namespace, String owner, Stream<Document> results,
      UnaryOperator<List<Document>> projection, QueryPlan.Counters counters, CursorReaper reaper) {
    super(id);
    this.namespace = namespace;
    this.owner = owner;
    this.results = results;
    this.iterator = results.iterator();
    this.projection = projection;
    this.counters = counters;
    this.reaper = reaper;
  }

  /** The collection it reads, {@code db.collection}. */
  String namespace() {
    return namespace;
  }

  /** The user who opened it, who alone may read it on; null when anyone may. */
  String owner() {
    return owner;
  }

  /** Documents the plan has read so far (for tests: a cursor does not read ahead of its batches). */
  synchronized long documentsRead() {
    return counters.docsExamined;
  }

  synchronized long idleNanos(long now) {
    return now - lastUsedNanos;
  }

  @Override
  public synchronized boolean isEmpty() {
    return closed || !hasNext();
  }

  /**
   * The next batch: up to {@code count} documents ({@code <= 0}: as many as fit in
   * {@link #BATCH_BYTES}), never more than that many bytes but at least one document. Closes the
   * cursor when the results run out.
   */
  @Override
  public synchronized List<Document> takeDocuments(int count) {
    if (closed) throw new CursorNotFoundException(getId());
    lastUsedNanos = System.nanoTime();
    List<Document> batch = new ArrayList<>();
    long bytes = 0;
    while ((count <= 0 || batch.size() < count) && bytes < BATCH_BYTES && hasNext()) {
      Document d = next();
      bytes += BsonCodec.size(d);
      batch.add(d);
    }
    List<Document> projected = projection.apply(batch);
    if (!hasNext()) close();
    return projected;
  }

  /** Releases the snapshot; a later getMore gets CursorNotFound (43). */
  synchronized void close() {
    if (closed) return;
    closed = true;
    results.close();
    reaper.forget(this);
  }

  private boolean hasNext() {
    try {
      return !closed && iterator.hasNext();
    } catch (ParallaxException | IllegalStateException e) {
      throw killed(e);
    }
  }

  private Document next() {
    try {
      return iterator.next();
    } catch (ParallaxException | IllegalStateException e) {
      throw killed(e);
    }
  }

  /** The engine refused to read on: the collection was dropped or the server is closing. */
  private MongoServerError killed(RuntimeException cause) {
    close();
    return new MongoServerError(175, "QueryPlanKilled",
        "cursor " + getId() + " on " + namespace + " was killed: " + cause.getMessage());
  }
}
