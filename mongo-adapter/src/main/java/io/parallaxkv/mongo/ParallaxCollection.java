package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.AbstractSynchronizedMongoCollection;
import de.bwaldvogel.mongo.backend.ArrayFilters;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.DefaultQueryMatcher;
import de.bwaldvogel.mongo.backend.DocumentComparator;
import de.bwaldvogel.mongo.backend.DocumentWithPosition;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.backend.Missing;
import de.bwaldvogel.mongo.backend.QueryMatcher;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.backend.Utils;
import de.bwaldvogel.mongo.backend.ValueComparator;
import de.bwaldvogel.mongo.backend.aggregation.Aggregation;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.bson.ObjectId;
import de.bwaldvogel.mongo.exception.DuplicateKeyError;
import de.bwaldvogel.mongo.exception.IndexBuildFailedException;
import de.bwaldvogel.mongo.exception.IndexKeySpecsConflictException;
import de.bwaldvogel.mongo.exception.InvalidIdFieldError;
import de.bwaldvogel.mongo.exception.MongoServerError;
import de.bwaldvogel.mongo.oplog.Oplog;
import de.bwaldvogel.mongo.wire.message.MongoQuery;
import io.parallaxkv.Parallax;
import io.parallaxkv.Scanner;
import io.parallaxkv.WriteBatch;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

/**
 * A collection stored in its own engine region ({@link CollectionStore}). The library provides
 * the semantics (query matching, update operators, upserts, findAndModify); this class provides
 * storage: every document change is one atomic engine batch holding the document, all of its
 * index entries and the collection's counters, and queries run the plan {@link QueryPlanner}
 * chooses. Writes are synchronized (one writer per collection, see
 * AbstractSynchronizedMongoCollection), which makes read-modify-write updates and unique checks
 * race-free. The find and aggregate commands take the lock only to plan over a secondary index
 * and take their snapshot, and read outside it ({@link #planned}).
 */
final class ParallaxCollection extends AbstractSynchronizedMongoCollection<RecordKey> {
  /** Documents over this size cannot go in one engine batch with their index entries. */
  static final int MAX_DOCUMENT_BYTES = Parallax.MAX_BATCH_SIZE - 256 * 1024;
  private static final int BUILD_BATCH_BYTES = 512 * 1024;
  /** MongoDB's BSONObjectTooLarge. */
  private static final int OBJECT_TOO_LARGE = 10334;
  /** MongoDB's KeyTooLong, for an _id over the engine's key limit. */
  private static final int KEY_TOO_LONG = 17280;

  private final CollectionStore store;

  ParallaxCollection(MongoDatabase database, String collectionName, CollectionOptions options,
      CursorRegistry cursorRegistry, CollectionStore store) {
    super(database, collectionName, options, cursorRegistry);
    this.store = store;
  }

  CollectionStore store() {
    return store;
  }

  /** The stored index named {@code name}, or a new, not yet built one with a fresh id. */
  synchronized SecondaryIndex secondaryIndex(String name,
      List<IndexKey> keys, boolean unique, boolean sparse) {
    for (Document definition : store.indexDefinitions()) {
      SecondaryIndex stored = SecondaryIndex.fromDefinition(store, definition);
      if (stored.getName().equals(name)) return stored;
    }
    return new SecondaryIndex(store, store.allocateIndexId(), name, keys, unique, sparse, false,
        false);
  }

  private List<SecondaryIndex> secondaryIndexes() {
    List<SecondaryIndex> out = new ArrayList<>();
    for (Index<RecordKey> i : getIndexes()) {
      if (i instanceof SecondaryIndex s) out.add(s);
    }
    return out;
  }

  /** The indexes readers plan with: a copy, replaced under the lock by addIndex and dropIndex. */
  private volatile List<StoredIndex> readableIndexes = List.of();

  private List<StoredIndex> storedIndexes() {
    return readableIndexes;
  }

  /** Called under the lock after each change to the library's index list. */
  private void publishIndexes() {
    readableIndexes = getIndexes().stream().map(i -> (StoredIndex) i).toList();
  }

  // ---- writes: one engine batch per document change -------------------------------------------

  @Override
  public synchronized void addDocument(Document document) {
    if (document.get("_id") instanceof Collection) {
      throw new InvalidIdFieldError("The '_id' value cannot be of type array");
    }
    document.putIfAbsent("_id", new ObjectId());
    for (Index<RecordKey> index : getIndexes()) index.checkAdd(document, this);
    addDocumentInternal(document);
  }

  @Override
  protected RecordKey addDocumentInternal(Document document) {
    RecordKey record = recordKey(document);
    byte[] bson = encode(document);
    try (WriteBatch batch = new WriteBatch()) {
      batch.put(record.key(), bson);
      for (SecondaryIndex index : secondaryIndexes()) {
        SecondaryIndex.Entries entries = index.entries(document, record);
        for (ByteBuffer key : entries.keys().keySet()) batch.put(key.array(), CollectionStore.EMPTY);
        noteMultikey(batch, index, entries);
      }
      store.write(batch, 1, bson.length);
    }
    return record;
  }

  @Override
  protected void handleUpdate(RecordKey record, Document oldDocument, Document newDocument) {
    byte[] bson = encode(newDocument);
    try (WriteBatch batch = new WriteBatch()) {
      batch.put(record.key(), bson);
      for (SecondaryIndex index : secondaryIndexes()) {
        Set<ByteBuffer> before = index.entries(oldDocument, record).keys().keySet();
        SecondaryIndex.Entries after = index.entries(newDocument, record);
        for (ByteBuffer key : before) {
          if (!after.keys().containsKey(key)) batch.delete(key.array());
        }
        for (ByteBuffer key : after.keys().keySet()) {
          if (!before.contains(key)) batch.put(key.array(), CollectionStore.EMPTY);
        }
        noteMultikey(batch, index, after);
      }
      store.write(batch, 0, bson.length - BsonCodec.size(oldDocument));
    }
  }

  // The library runs these read-modify-writes under the collection's lock. When the selector
  // pins one _id, the record is read first, outside it: the read under the lock then finds the
  // record in memory instead of waiting for the device with the collection's other writers
  // waiting behind it.

  @Override
  public Document updateDocuments(Document selector, Document update, ArrayFilters arrayFilters,
      boolean isMulti, boolean isUpsert, Oplog oplog) {
    readAhead(selector);
    return super.updateDocuments(selector, update, arrayFilters, isMulti, isUpsert, oplog);
  }

  @Override
  public int deleteDocuments(Document selector, int limit, Oplog oplog) {
    readAhead(selector);
    return super.deleteDocuments(selector, limit, oplog);
  }

  @Override
  public Document findAndModify(Document command) {
    if (command.get("query") instanceof Document query) readAhead(query);
    return super.findAndModify(command);
  }

  private void readAhead(Document selector) {
    RecordKey record = QueryPlanner.plan(selector, null, storedIndexes()).singleRecord();
    if (record != null) store.readAhead(record);
  }

  @Override
  public synchronized void removeDocument(Document document) {
    removeDocument(RecordKey.of(document));
  }

  @Override
  protected void removeDocument(RecordKey record) {
    Document stored = store.get(record);
    if (stored == null) return;
    try (WriteBatch batch = new WriteBatch()) {
      batch.delete(record.key());
      for (SecondaryIndex index : secondaryIndexes()) {
        for (ByteBuffer key : index.entries(stored, record).keys().keySet()) batch.delete(key.array());
      }
      store.write(batch, -1, -BsonCodec.size(stored));
    }
  }

  /** An index becomes multikey in the batch that first writes an array into it. */
  private void noteMultikey(WriteBatch batch, SecondaryIndex index, SecondaryIndex.Entries entries) {
    if (entries.multikey() && !index.isMultikey()) {
      index.markMultikey();
      store.putIndexDefinition(batch, index.getName(), index.definition());
    }
  }

  private static RecordKey recordKey(Document document) {
    RecordKey record = RecordKey.of(document);
    if (record.key().length > Parallax.MAX_KEY_SIZE) {
      throw new MongoServerError(KEY_TOO_LONG, "KeyTooLong",
          "_id too large to index: " + record.key().length + " bytes (limit "
              + Parallax.MAX_KEY_SIZE + ")");
    }
    return record;
  }

  private static byte[] encode(Document document) {
    byte[] bson = BsonCodec.encode(document);
    if (bson.length > MAX_DOCUMENT_BYTES) {
      throw new MongoServerError(OBJECT_TOO_LARGE, "BSONObjectTooLarge", "document of "
          + bson.length + " bytes is larger than this server's limit of " + MAX_DOCUMENT_BYTES
          + " bytes");
    }
    return bson;
  }

  @Override
  protected boolean tracksDataSize() {
    return false; // the counters change in each document's batch (CollectionStore.write)
  }

  @Override
  protected void updateDataSize(int sizeDelta) {
    throw new UnsupportedOperationException("counters change in the document's batch");
  }

  @Override
  protected int getDataSize() {
    return (int) Math.min(Integer.MAX_VALUE, store.dataSize());
  }

  @Override
  public synchronized int count() {
    return (int) Math.min(Integer.MAX_VALUE, store.count());
  }

  // The library leaves it unsynchronized; it reads the index list that addIndex changes.

  @Override
  public synchronized Document getStats() {
    return super.getStats();
  }

  // ---- indexes -----------------------------------------------------------------------------

  /**
   * Registers an index; a new secondary index is first built from every document. Its entries
   * are written in batches and its definition last, durably: until then no reader uses the index,
   * and entries of a build a crash interrupted are removed when the collection is reopened.
   */
  @Override
  public synchronized void addIndex(Index<RecordKey> index) {
    for (Index<RecordKey> existing : getIndexes()) {
      if (existing.getName().equals(index.getName())) {
        if (!existing.hasSameOptions(index)) throw new IndexKeySpecsConflictException(index, existing);
        return;
      }
    }
    if (index instanceof SecondaryIndex s && !s.isBuilt()) build(s);
    getIndexes().add(index);
    publishIndexes();
  }

  private void build(SecondaryIndex index) {
    Map<ByteBuffer, RecordKey> uniqueKeys = index.isUnique() ? new HashMap<>() : null;
    try (WriteBatch batch = new WriteBatch(); Stream<Document> docs = allDocuments()) {
      long bytes = 0;
      for (Iterator<Document> it = docs.iterator(); it.hasNext(); ) {
        Document document = it.next();
        RecordKey record = RecordKey.of(document);
        SecondaryIndex.Entries entries = index.entries(document, record);
        if (entries.multikey()) index.markMultikey();
        for (Map.Entry<ByteBuffer, List<Object>> e : entries.keys().entrySet()) {
          if (uniqueKeys != null) {
            ByteBuffer fields = ByteBuffer.wrap(KeyLayout.fieldsOfEntry(e.getKey().array()));
            if (uniqueKeys.putIfAbsent(fields, record) != null) {
              throw new IndexBuildFailedException(new DuplicateKeyError(index, this,
                  index.getKeys(), new KeyValue(e.getValue())), this);
            }
          }
          batch.put(e.getKey().array(), CollectionStore.EMPTY);
          bytes += e.getKey().capacity();
        }
        if (bytes >= BUILD_BATCH_BYTES) {
          store.write(batch, 0, 0);
          batch.clear();
          bytes = 0;
        }
      }
      store.putIndexDefinition(batch, index.getName(), index.definition());
      store.write(batch, 0, 0);
      store.sync();
    } catch (MongoServerError e) {
      store.deleteRange(KeyLayout.indexPrefix(index.id()));
      throw e;
    }
    index.markBuilt();
  }

  /** Serialized with the writers, which write the entries of every registered index. */
  @Override
  public synchronized void dropIndex(String indexName) {
    super.dropIndex(indexName);
    publishIndexes();
  }

  // ---- reads -------------------------------------------------------------------------------

  @Override
  protected QueryResult queryDocuments(Document query, Document orderBy, int numberToSkip,
      int limit, int batchSize, Document fieldSelector) {
    QueryPlan plan = QueryPlanner.plan(query, orderBy, storedIndexes());
    return run(plan, query, orderBy, numberToSkip, limit, batchSize, fieldSelector);
  }

  @Override
  protected QueryResult matchDocuments(Document query, Document orderBy, int numberToSkip,
      int limit, int batchSize, Document fieldSelector) {
    QueryPlan scan = QueryPlan.collectionScan(false, false);
    return run(scan, query, orderBy, numberToSkip, limit, batchSize, fieldSelector);
  }

  private QueryResult run(QueryPlan plan, Document query, Document orderBy, int skip, int limit,
      int batchSize, Document fieldSelector) {
    try (Stream<Document> candidates = plan.execute(store, new QueryPlan.Counters())) {
      Comparator<Document> order = plan.providesSort() ? null : sortOrder(orderBy);
      return matchDocumentsFromStream(query, tiesInIdOrder(plan, candidates, orderBy), skip,
          limit, batchSize, order, fieldSelector);
    }
  }

  /**
   * The {@code find} command, with a cursor that streams ({@link StreamingCursor}): the first
   * batch is read now and the rest on each getMore, from the snapshot taken here; the cursor
   * belongs to {@code owner} ({@link StreamingCursor#owner}). Returns the command's reply.
   */
  Document find(Document command, CursorReaper cursors, String owner) {
    Document filter = command.get("filter") instanceof Document f ? f : new Document();
    Document sort = command.get("sort") instanceof Document o && !o.isEmpty() ? o : null;
    Document projection = command.get("projection") instanceof Document p ? p : null;
    int skip = intOption(command, "skip", 0);
    int limit = intOption(command, "limit", 0);
    Object batchOption = command.get("batchSize");
    int firstBatch = batchOption == null
        ? StreamingCursor.DEFAULT_FIRST_BATCH : intOption(command, "batchSize", 0);
    boolean singleBatch = Utils.isTrue(command.get("singleBatch")) || limit < 0;
    QueryResult first = streamingFind(filter, sort, projection, skip, Math.abs(limit),
        firstBatch, singleBatch, cursors, owner);
    return cursorReply(first);
  }

  /**
   * A legacy OP_QUERY find, on a cursor that streams as the find command's does. The selector is
   * the filter, or wraps it with its modifiers ({@code $query}/{@code query} and {@code
   * $orderby}/{@code orderby}, as the library reads them; other modifiers are ignored).
   * numberToReturn is MongoDB's: 0 the default first batch, {@code n > 1} a batch of n, 1 or
   * {@code -n} a single batch. The reply's cursor id is 0 when no more remain; the rest is read
   * with the getMore command (the library does not take OP_GET_MORE).
   */
  QueryResult legacyFind(MongoQuery query, CursorReaper cursors, String owner) {
    Document selector = query.getQuery();
    Document filter = selector;
    Document sort = null;
    for (String wrapper : List.of("$query", "query")) {
      if (selector.get(wrapper) instanceof Document wrapped) {
        filter = wrapped;
        String orderBy = wrapper.equals("$query") ? "$orderby" : "orderby";
        if (selector.get(orderBy) instanceof Document o && !o.isEmpty()) sort = o;
        break;
      }
    }
    int toReturn = query.getNumberToReturn();
    boolean singleBatch = toReturn < 0 || toReturn == 1;
    int firstBatch = toReturn == 0 ? StreamingCursor.DEFAULT_FIRST_BATCH : Math.abs(toReturn);
    if (query.getNumberToSkip() < 0) {
      throw new MongoServerError(2, "BadValue", "numberToSkip must be >= 0");
    }
    return streamingFind(filter, sort, query.getReturnFieldSelector(), query.getNumberToSkip(),
        0, firstBatch, singleBatch, cursors, owner);
  }

  /**
   * The documents matching {@code filter} in {@code sort}'s order, after {@code skip}, at most
   * {@code limit} ({@code 0}: no limit), projected: the first {@code firstBatch} now, the rest
   * on a {@link StreamingCursor} of {@code owner} unless {@code singleBatch}.
   */
  private QueryResult streamingFind(Document filter, Document sort, Document projection,
      int skip, int limit, int firstBatch, boolean singleBatch, CursorReaper cursors,
      String owner) {
    QueryPlan.Counters counters = new QueryPlan.Counters();
    int wanted = (int) Math.min(Integer.MAX_VALUE, (long) skip + (limit > 0 ? limit : firstBatch));
    Stream<Document> results = planned(filter, sort, wanted, counters);
    if (skip > 0) results = results.skip(skip);
    if (limit > 0) results = results.limit(limit);
    UnaryOperator<List<Document>> project = projection == null || projection.isEmpty()
        ? UnaryOperator.identity()
        : batch -> matchDocumentsFromStream(new Document(), batch.stream(), 0, 0, 0, null,
            projection).collectDocuments();
    return openCursor(results, project, counters, firstBatch, singleBatch, cursors, owner);
  }

  /**
   * An {@code aggregate} whose pipeline is {@code filter}, then {@code sort} (null for none),
   * then {@code stages} that each pass documents on one at a time, with a cursor that streams
   * as find's does: {@code firstBatch} documents now, the rest on each getMore. Memory is what
   * a find with the same filter and sort needs, plus one batch.
   */
  Document aggregate(Document filter, Document sort, Aggregation stages,
      int firstBatch, CursorReaper cursors, String owner) {
    QueryPlan.Counters counters = new QueryPlan.Counters();
    Stream<Document> results = stages.runStagesAsStream(planned(filter, sort, 0, counters));
    QueryResult first = openCursor(results, UnaryOperator.identity(), counters, firstBatch,
        false, cursors, owner);
    return cursorReply(first);
  }

  /**
   * The count command with a filter: the matches are counted as the plan streams them from one
   * snapshot (an index when the filter allows), holding none; the library would collect them.
   * An empty filter reads the collection's counter.
   */
  @Override
  public int count(Document query, int skip, int limit) {
    if (query == null || query.isEmpty()) return super.count(query, skip, limit);
    try (Stream<Document> matches = matching(query)) {
      Stream<Document> counted = skip > 0 ? matches.skip(skip) : matches;
      return (int) Math.min(Integer.MAX_VALUE, (limit > 0 ? counted.limit(limit) : counted).count());
    }
  }

  /**
   * The documents matching {@code filter} as the plan reads them, lazily, from a snapshot taken
   * now (close the stream).
   */
  Stream<Document> matching(Document filter) {
    return planned(filter, null, 0, new QueryPlan.Counters());
  }

  /**
   * The distinct command: the values of {@code key} among the documents matching {@code query},
   * read as the plan streams them from one snapshot (an index when the query allows); memory is
   * the set of distinct values, as in MongoDB (the library would collect the documents first).
   */
  @Override
  public Document handleDistinct(Document query) {
    if (!(query.get("key") instanceof String key)) {
      throw new MongoServerError(14, "TypeMismatch", "distinct's 'key' must be a string");
    }
    Document filter = query.get("query") instanceof Document q ? q : new Document();
    Set<Object> values = new TreeSet<>(ValueComparator.ascWithoutListHandling());
    try (Stream<Document> matches = matching(filter)) {
      matches.forEach(document -> {
        Object value = Utils.getSubdocumentValueCollectionAware(document, key);
        if (value instanceof Missing) return;
        if (value instanceof Collection<?> elements) {
          values.addAll(elements);
        } else {
          values.add(value);
        }
      });
    }
    Document response = new Document("values", values);
    Utils.markOkay(response);
    return response;
  }

  /**
   * The documents matching {@code filter} in {@code sort}'s order (ties by {@code _id}), read
   * lazily through the plan the planner picks, on a snapshot taken now (close the stream).
   *
   * <p>A plan that reads a secondary index is made and its snapshot taken under the collection's
   * lock: a writer holds it for a whole document change, so the plan's view of the indexes (which
   * exist, which are multikey) matches what the snapshot holds. A plan that reads only records
   * (a collection scan, {@code _id} lookups) depends on no index state and takes neither. The
   * reading runs outside the lock, concurrently with the writers and other readers, with a
   * matcher of its own (the library's keeps the last array position matched, which a writer's
   * positional update reads).
   *
   * <p>{@code wanted}: the documents the caller means to read (its skip and limit, or first
   * batch; {@code 0}: unknown), passed on to the plan's scanners ({@link #readahead}).
   */
  private Stream<Document> planned(Document filter, Document sort, int wanted,
      QueryPlan.Counters counters) {
    QueryPlan plan = QueryPlanner.plan(filter, sort, storedIndexes());
    Stream<Document> candidates;
    if (plan.readsSecondaryIndex()) {
      synchronized (this) {
        plan = QueryPlanner.plan(filter, sort, storedIndexes());
        candidates = plan.execute(store, counters, readahead(plan, sort, wanted));
      }
    } else {
      candidates = plan.execute(store, counters, readahead(plan, sort, wanted));
    }
    QueryMatcher matcher = new DefaultQueryMatcher();
    Stream<Document> results = tiesInIdOrder(plan, candidates, sort)
        .filter(d -> matcher.matches(d, filter));
    Comparator<Document> order = plan.providesSort() ? null : sortOrder(sort);
    return order == null ? results : results.sorted(order);
  }

  /**
   * The candidates a plan's scanners are told to expect: {@code wanted} when the documents come
   * out of the plan in the order asked for, so that the caller's skip and limit stop the scan;
   * none when they are sorted in memory, which reads every candidate anyway. Candidates the filter
   * rejects make it an underestimate, which costs a later device read, never a needless one.
   */
  private static int readahead(QueryPlan plan, Document sort, int wanted) {
    return plan.providesSort() || deriveComparator(sort) == null ? wanted : 0;
  }

  /** The reply of a command that opened a cursor: its id and first batch. */
  private Document cursorReply(QueryResult first) {
    Document reply = new Document("cursor", new Document("id", first.getCursorId())
        .append("ns", getFullName()).append("firstBatch", first.collectDocuments()));
    Utils.markOkay(reply);
    return reply;
  }

  /** A cursor over {@code results}: its first batch, and its id (0 if it ended with it). */
  private QueryResult openCursor(Stream<Document> results, UnaryOperator<List<Document>> project,
      QueryPlan.Counters counters, int firstBatch, boolean singleBatch, CursorReaper cursors,
      String owner) {
    StreamingCursor cursor = new StreamingCursor(cursorRegistry.generateCursorId(), getFullName(),
        owner, results, project, counters, cursors);
    List<Document> batch;
    try {
      batch = firstBatch == 0 ? List.of() : cursor.takeDocuments(firstBatch);
    } catch (RuntimeException e) {
      cursor.close();
      throw e;
    }
    long cursorId = 0;
    if (singleBatch || cursor.isEmpty()) {
      cursor.close();
    } else {
      cursors.add(cursor);
      cursorId = cursor.getId();
    }
    return new QueryResult(batch, cursorId);
  }

  private static int intOption(Document command, String name, int otherwise) {
    Object value = command.get(name);
    if (value == null) return otherwise;
    if (!(value instanceof Number n)) {
      throw new MongoServerError(14, "TypeMismatch", "'" + name + "' must be a number");
    }
    if (n.intValue() < 0 && !name.equals("limit")) {
      throw new MongoServerError(51024, "Location51024", "'" + name + "' must be >= 0");
    }
    return n.intValue();
  }

  /** A plan's candidates, with documents that tie on an index-given sort in {@code _id} order. */
  private Stream<Document> tiesInIdOrder(QueryPlan plan, Stream<Document> candidates,
      Document orderBy) {
    Comparator<Document> sort = deriveComparator(orderBy);
    if (!plan.providesSort() || !plan.tiesFollowIndex() || sort == null) return candidates;
    return TieOrder.byId(candidates, sort, BY_ID);
  }

  /**
   * An in-memory sort, ties in {@code _id} order: the order of a collection scan and of index
   * entries, so a query's order does not depend on the plan that ran it.
   */
  private static Comparator<Document> sortOrder(Document orderBy) {
    Comparator<Document> order = deriveComparator(orderBy);
    return order == null ? null : order.thenComparing(BY_ID);
  }

  private static final Comparator<Document> BY_ID = new DocumentComparator(new Document("_id", 1));

  /**
   * The {@code explain} of a find: the plan and what running it examined (the documents
   * themselves are not returned).
   */
  Document explainFind(Document filter, Document sort, int skip, int limit) {
    Document query = filter == null ? new Document() : filter;
    QueryPlan plan = QueryPlanner.plan(query, sort, storedIndexes());
    QueryPlan.Counters counters = new QueryPlan.Counters();
    long started = System.nanoTime();
    long returned;
    int wanted = limit > 0 ? (int) Math.min(Integer.MAX_VALUE, (long) skip + limit) : 0;
    try (Stream<Document> planned = planned(query, sort, wanted, counters)) {
      Stream<Document> matched = planned;
      if (skip > 0) matched = matched.skip(skip);
      if (limit > 0) matched = matched.limit(limit);
      returned = matched.count();
    }
    Document stages = plan.describe(readahead(plan, sort, wanted));
    if (!plan.providesSort() && deriveComparator(sort) != null) {
      stages = new Document("stage", "SORT").append("sortPattern", sort).append("inputStage", stages);
    }
    if (skip > 0) stages = new Document("stage", "SKIP").append("skipAmount", skip).append("inputStage", stages);
    if (limit > 0) stages = new Document("stage", "LIMIT").append("limitAmount", limit).append("inputStage", stages);
    Document planner = new Document("namespace", getFullName())
        .append("indexFilterSet", false)
        .append("parsedQuery", query)
        .append("winningPlan", stages)
        .append("rejectedPlans", List.of());
    Document execution = new Document("executionSuccess", true)
        .append("nReturned", returned)
        .append("executionTimeMillis", (System.nanoTime() - started) / 1_000_000)
        .append("totalKeysExamined", counters.keysExamined)
        .append("totalDocsExamined", counters.docsExamined)
        .append("executionStages", stages);
    Document result = new Document("queryPlanner", planner).append("executionStats", execution);
    Utils.markOkay(result);
    return result;
  }

  @Override
  protected Document getDocument(RecordKey record) {
    return store.get(record);
  }

  @Override
  protected Stream<DocumentWithPosition<RecordKey>> streamAllDocumentsWithPosition() {
    return allDocuments().map(d -> new DocumentWithPosition<>(d, RecordKey.of(d)));
  }

  /** Every document in {@code _id} order, from one snapshot (close the stream). */
  private Stream<Document> allDocuments() {
    return QueryPlan.collectionScan(true, false).execute(store, new QueryPlan.Counters());
  }

  // ---- validate ----------------------------------------------------------------------------

  /**
   * MongoDB's {@code validate}, for real: on one snapshot, every document has exactly the index
   * entries its fields call for, every index entry points to a document that calls for it, and
   * the counters match the documents.
   */
  @Override
  public synchronized Document validate() {
    List<String> errors = new ArrayList<>();
    Map<String, Long> keysPerIndex = new HashMap<>();
    long records = 0;
    long bytes = 0;
    try (io.parallaxkv.Snapshot snapshot = store.snapshot()) {
      Map<Integer, Set<ByteBuffer>> expected = new HashMap<>();
      try (Scanner s = snapshot.scanner(CollectionStore.records())) {
        for (; s.isValid(); s.next()) {
          byte[] bson = s.value();
          Document document = BsonCodec.decode(bson);
          RecordKey record = RecordKey.ofKey(s.key());
          records++;
          bytes += bson.length;
          if (!record.equals(RecordKey.of(document))) {
            errors.add("document " + document.get("_id") + " is stored under another _id's key");
          }
          for (SecondaryIndex index : secondaryIndexes()) {
            expected.computeIfAbsent(index.id(), k -> new HashSet<>())
                .addAll(index.entries(document, record).keys().keySet());
          }
        }
      }
      for (SecondaryIndex index : secondaryIndexes()) {
        Set<ByteBuffer> want = expected.getOrDefault(index.id(), Set.of());
        long found = 0;
        byte[] prefix = KeyLayout.indexPrefix(index.id());
        try (Scanner s = snapshot.scanner(CollectionStore.range(prefix, KeyLayout.successor(prefix)))) {
          for (; s.isValid(); s.next()) {
            found++;
            if (!want.contains(ByteBuffer.wrap(s.key()))) {
              errors.add("index " + index.getName() + " has an entry for record "
                  + KeyLayout.recordOfEntry(s.key()) + " that its document does not call for");
            }
          }
        }
        keysPerIndex.put(index.getName(), found);
        if (found != want.size()) {
          errors.add("index " + index.getName() + " has " + found + " entries, its documents call for "
              + want.size());
        }
      }
    }
    if (records != store.count() || bytes != store.dataSize()) {
      errors.add("counters say " + store.count() + " documents of " + store.dataSize()
          + " bytes, the collection holds " + records + " of " + bytes);
    }
    keysPerIndex.put(IdIndex.NAME, records);
    Document response = new Document("ns", getFullName())
        .append("nrecords", records)
        .append("datasize", bytes)
        .append("nIndexes", getIndexes().size())
        .append("keysPerIndex", new Document(keysPerIndex))
        .append("valid", errors.isEmpty())
        .append("errors", errors);
    Utils.markOkay(response);
    return response;
  }

  // ---- drop --------------------------------------------------------------------------------

  @Override
  public synchronized void drop() {
    super.drop();
    ((ParallaxDatabase) getDatabase()).volume().drop(store.namespace());
  }
}
