package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.AbstractSynchronizedMongoDatabase;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.DatabaseResolver;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.backend.Utils;
import de.bwaldvogel.mongo.backend.aggregation.Aggregation;
import de.bwaldvogel.mongo.backend.memory.MemoryCollection;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.MongoServerError;
import de.bwaldvogel.mongo.oplog.Oplog;
import de.bwaldvogel.mongo.wire.message.MongoQuery;
import io.netty.channel.Channel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * A database: the collections whose regions are named {@code mongo/<name>.*}.
 *
 * <p>The library keeps its catalog in two collections, {@code system.namespaces} and
 * {@code system.indexes}. Here the catalog's truth is in each collection's own region (so that a
 * collection, its indexes and their definitions change atomically together); those two are
 * in-memory views, filled from the regions when the database is opened and kept current by the
 * library as collections and indexes come and go.
 */
final class ParallaxDatabase extends AbstractSynchronizedMongoDatabase<RecordKey> {
  private static final String NAMESPACES = "system.namespaces";
  private static final String INDEXES = "system.indexes";
  private static final Set<String> INDEX_OPTIONS =
      Set.of("key", "name", "ns", "v", "unique", "sparse", "background");
  private static final Set<String> WRITE_COMMANDS = Set.of("insert", "update", "delete",
      "findandmodify", "create", "createindexes", "dropindexes");
  private static final int CANNOT_CREATE_INDEX = 67;

  private final MongoVolume volume;
  private final CursorReaper cursors;
  private final Authenticator authenticator;

  ParallaxDatabase(String databaseName, MongoVolume volume, CursorRegistry cursorRegistry,
      CursorReaper cursors, Authenticator authenticator) {
    super(databaseName, cursorRegistry);
    this.volume = volume;
    this.cursors = cursors;
    this.authenticator = authenticator;
    initializeNamespacesAndIndexes();
  }

  MongoVolume volume() {
    return volume;
  }

  private List<String> storedNamespaces() {
    List<String> out = new ArrayList<>();
    for (String ns : volume.namespaces()) {
      if (ns.startsWith(databaseName + ".")) out.add(ns);
    }
    return out;
  }

  @Override
  protected MongoCollection<RecordKey> openOrCreateCollection(String collectionName,
      CollectionOptions options) {
    if (collectionName.equals(NAMESPACES)) {
      List<Document> names = new ArrayList<>();
      for (String ns : storedNamespaces()) names.add(new Document("name", ns));
      return catalogView(NAMESPACES, CollectionOptions.withIdField("name"), names);
    }
    if (collectionName.equals(INDEXES)) {
      return catalogView(INDEXES, CollectionOptions.withoutIdField(), storedIndexDescriptions());
    }
    String namespace = getFullCollectionNamespace(collectionName);
    if (namespace.getBytes(StandardCharsets.UTF_8).length > MongoVolume.MAX_NAMESPACE_BYTES) {
      throw new MongoServerError(73, "InvalidNamespace", "namespace " + namespace
          + " is longer than " + MongoVolume.MAX_NAMESPACE_BYTES + " bytes");
    }
    CollectionStore store = volume.openOrCreate(namespace);
    Set<Integer> live = new java.util.HashSet<>();
    for (Document d : store.indexDefinitions()) live.add(((Number) d.get("id")).intValue());
    store.removeOrphanIndexEntries(live);
    return new ParallaxCollection(this, collectionName, options, cursorRegistry, store);
  }

  private List<Document> storedIndexDescriptions() {
    List<Document> out = new ArrayList<>();
    for (String ns : storedNamespaces()) {
      out.add(new Document("v", 2).append("key", new Document("_id", 1))
          .append("name", IdIndex.NAME).append("ns", ns));
      for (Document definition : volume.openOrCreate(ns).indexDefinitions()) {
        Document spec = ((Document) definition.get("spec")).clone();
        spec.put("ns", ns);
        out.add(spec);
      }
    }
    return out;
  }

  /**
   * An in-memory catalog view. The library types every collection of a database by one
   * position type; these views never receive an index, so their positions stay inside
   * MemoryCollection and the cast cannot fail.
   */
  @SuppressWarnings("unchecked")
  private MongoCollection<RecordKey> catalogView(String name, CollectionOptions options,
      List<Document> documents) {
    MemoryCollection view = new MemoryCollection(this, name, options, cursorRegistry);
    for (Document d : documents) view.addDocument(d);
    return (MongoCollection<RecordKey>) (MongoCollection<?>) view;
  }

  @Override
  protected Index<RecordKey> openOrCreateUniqueIndex(String collectionName, String indexName,
      List<IndexKey> keys, boolean sparse) {
    ParallaxCollection collection = collection(collectionName);
    if (indexName.equals(IdIndex.NAME)) return new IdIndex(collection.store());
    return collection.secondaryIndex(indexName, keys, true, sparse);
  }

  @Override
  protected Index<RecordKey> openOrCreateSecondaryIndex(String collectionName, String indexName,
      List<IndexKey> keys, boolean sparse) {
    return collection(collectionName).secondaryIndex(indexName, keys, false, sparse);
  }

  private ParallaxCollection collection(String collectionName) {
    return (ParallaxCollection) resolveCollection(collectionName, true);
  }

  /** Refuses index kinds and options this storage engine does not implement. */
  @Override
  protected synchronized void addIndex(Document indexDescription) {
    for (String option : indexDescription.keySet()) {
      if (!INDEX_OPTIONS.contains(option)) {
        throw new MongoServerError(CANNOT_CREATE_INDEX, "CannotCreateIndex",
            "index option '" + option + "' is not supported by the Parallax storage engine");
      }
    }
    for (Map.Entry<String, Object> field : ((Document) indexDescription.get("key")).entrySet()) {
      if (Arrays.stream(field.getKey().split("\\.")).anyMatch(p -> p.matches("\\d+"))) {
        // MongoDB indexes "a.0" positionally; IndexKeyExtractor does not.
        throw new MongoServerError(CANNOT_CREATE_INDEX, "CannotCreateIndex", "index field '"
            + field.getKey() + "' has a positional (numeric) path component: not supported");
      }
      Object direction = field.getValue();
      if (!(direction instanceof Number n) || Math.abs(n.doubleValue()) != 1.0) {
        throw new MongoServerError(CANNOT_CREATE_INDEX, "CannotCreateIndex", "index type "
            + direction + " on '" + field.getKey() + "' is not supported (only 1 and -1)");
      }
    }
    super.addIndex(indexDescription);
  }

  @Override
  public Document handleCommand(Channel channel, String command, Document query,
      DatabaseResolver databaseResolver, Oplog oplog) {
    String name = command.toLowerCase(Locale.ROOT);
    if (name.equals("explain")) return explain(query);
    if (name.equals("find")
        && resolveCollection(String.valueOf(query.get(command)), false) instanceof ParallaxCollection c) {
      return c.find(query, cursors, authenticator.cursorOwner(channel));
    }
    if (name.equals("aggregate")) {
      Document streamed = streamingAggregate(query, databaseResolver, oplog,
          authenticator.cursorOwner(channel));
      if (streamed != null) return streamed;
      Document pushedDown = aggregateFromIndex(query, databaseResolver, oplog);
      if (pushedDown != null) return pushedDown;
    }
    if (name.equals("dropindexes") && dropsIdIndex(query.get("index"))) {
      // The library would unregister it, and with it the check that keeps _id unique.
      throw new MongoServerError(72, "InvalidOptions", "cannot drop _id index");
    }
    Document response = super.handleCommand(channel, command, query, databaseResolver, oplog);
    if (name.equals("insert")) countInserted(query, response);
    if (WRITE_COMMANDS.contains(name) && WriteConcerns.journaled(query)) {
      MongoCollection<RecordKey> target = resolveCollection(String.valueOf(query.get(command)), false);
      if (target instanceof ParallaxCollection c) c.store().sync();
    }
    return response;
  }

  private static boolean dropsIdIndex(Object index) {
    return IdIndex.NAME.equals(index)
        || index instanceof Document key && key.keySet().equals(Set.of("_id"));
  }

  /**
   * How a pipeline reads its input: its leading {@code $match} (empty if none) and the {@code
   * $sort} right after it (null if none) go to the query planner; {@code rest} are the stages
   * after them, and {@code streams} says whether each of those passes documents on one at a time.
   */
  private record PipelineInput(Document filter, Document sort, List<Document> rest,
      boolean streams) {
    /** Stages that need no more than the current document to produce their output. */
    private static final Set<String> STREAMING_STAGES =
        Set.of("$match", "$project", "$limit", "$skip", "$addFields", "$set", "$unset");

    /** The split of {@code pipeline}; null if it is not a list of one-key stage documents. */
    static PipelineInput of(Object pipeline) {
      if (!(pipeline instanceof List<?> list)) return null;
      List<Document> stages = new ArrayList<>();
      for (Object stage : list) {
        if (!(stage instanceof Document d) || d.size() != 1) return null;
        stages.add(d);
      }
      int next = 0;
      Document filter = new Document();
      if (next < stages.size() && stages.get(next).get("$match") instanceof Document m) {
        filter = m;
        next++;
      }
      Document sort = null;
      if (next < stages.size() && stages.get(next).get("$sort") instanceof Document o) {
        sort = o;
        next++;
      }
      List<Document> rest = stages.subList(next, stages.size());
      boolean streams = rest.stream()
          .allMatch(stage -> STREAMING_STAGES.contains(stage.keySet().iterator().next()));
      return new PipelineInput(filter, sort, rest, streams);
    }
  }

  /**
   * An aggregation whose stages after its leading {@code $match} and {@code $sort} all stream
   * ({@link PipelineInput}) runs on a streaming cursor: the match and sort through the query
   * planner (an index scan in the sort's order needs no memory for the sort), the other stages
   * per document as the batches are read, the first batch ({@code cursor.batchSize}, else 101)
   * now and the rest on each getMore. Null for any other pipeline, or a collection not stored
   * here. The cursor belongs to {@code owner}.
   */
  private Document streamingAggregate(Document query, DatabaseResolver databaseResolver,
      Oplog oplog, String owner) {
    PipelineInput input = PipelineInput.of(query.get("pipeline"));
    if (input == null || !input.streams() || query.containsKey("let")
        || Utils.isTrue(query.get("explain"))) {
      return null;
    }
    String collectionName = String.valueOf(query.get("aggregate"));
    if (!(resolveCollection(collectionName, false) instanceof ParallaxCollection collection)) {
      return null;
    }
    Aggregation.fromPipeline(query.get("pipeline"), databaseResolver, this, collection, oplog)
        .validate(query);
    Aggregation rest = Aggregation.fromPipeline(input.rest(), databaseResolver, this, collection,
        oplog);
    int firstBatch = StreamingCursor.DEFAULT_FIRST_BATCH;
    if (query.get("cursor") instanceof Document cursor && cursor.get("batchSize") != null) {
      if (!(cursor.get("batchSize") instanceof Number n) || n.intValue() < 0) {
        throw new MongoServerError(2, "BadValue", "cursor.batchSize must be a number >= 0");
      }
      firstBatch = n.intValue();
    }
    return collection.aggregate(input.filter(), input.sort(), rest, firstBatch, cursors, owner);
  }

  /**
   * A pipeline that starts with {@code $match} (as the drivers' countDocuments does) reads its
   * input through the query planner, so the match can use an index, streaming from one snapshot;
   * the library would scan and collect the whole collection. The stages, {@code $match}
   * included, then run as the library runs them.
   * Null when the pipeline does not start with a match on a stored collection.
   */
  private Document aggregateFromIndex(Document query, DatabaseResolver databaseResolver,
      Oplog oplog) {
    if (!(query.get("pipeline") instanceof List<?> stages) || stages.isEmpty()
        || !(stages.get(0) instanceof Document first) || !(first.get("$match") instanceof Document match)) {
      return null;
    }
    String collectionName = String.valueOf(query.get("aggregate"));
    if (!(resolveCollection(collectionName, false) instanceof ParallaxCollection collection)) {
      return null;
    }
    Aggregation aggregation = Aggregation.fromPipeline(stages, databaseResolver, this, collection,
        oplog);
    aggregation.validate(query);
    List<Document> result;
    // The input streams from the plan: memory is what the stages keep ($group its groups).
    try (Stream<Document> input = collection.matching(match)) {
      result = aggregation.runStages(input);
    }
    // The whole result in the first batch, as the library answers an aggregate.
    Document cursor = new Document("id", 0L)
        .append("ns", getFullCollectionNamespace(collectionName))
        .append("firstBatch", result);
    Document response = new Document("cursor", cursor);
    Utils.markOkay(response);
    return response;
  }

  /**
   * A legacy OP_QUERY find on a stored collection streams as the find command does ({@link
   * ParallaxCollection#legacyFind}); the library would collect every match first.
   */
  @Override
  public QueryResult handleQuery(MongoQuery query) {
    if (resolveCollection(query.getCollectionName(), false) instanceof ParallaxCollection c) {
      clearLastStatus(query.getChannel());
      return c.legacyFind(query, cursors, authenticator.cursorOwner(query.getChannel()));
    }
    return super.handleQuery(query);
  }

  /** Dropping a collection drops its region: see CollectionStore#beginDrop. */
  @Override
  public void dropCollection(String collectionName, Oplog oplog) {
    if (resolveCollection(collectionName, false) instanceof ParallaxCollection c) {
      c.store().beginDrop();
    }
    super.dropCollection(collectionName, oplog);
  }

  /**
   * The library answers an insert with {@code n} = every document sent, even those that failed;
   * drivers report that as the inserted count. An ordered insert stops at its first error.
   */
  private static void countInserted(Document query, Document response) {
    if (!(response.get("writeErrors") instanceof List<?> errors) || errors.isEmpty()) return;
    int sent = ((List<?>) query.get("documents")).size();
    int firstError = ((Number) ((Document) errors.get(0)).get("index")).intValue();
    response.put("n", Utils.isTrue(query.get("ordered")) ? firstError : sent - errors.size());
  }

  private Document explain(Document query) {
    Document explained = (Document) query.get("explain");
    String verb = explained.keySet().iterator().next();
    if (verb.equalsIgnoreCase("aggregate")) return explainAggregate(explained);
    if (verb.equalsIgnoreCase("count") || verb.equalsIgnoreCase("distinct")) {
      return explainCountOrDistinct(verb, explained);
    }
    if (!verb.equalsIgnoreCase("find")) {
      throw new MongoServerError(115, "CommandNotSupported",
          "explain is implemented for find, aggregate, count and distinct only, not " + verb);
    }
    String collectionName = String.valueOf(explained.get(verb));
    MongoCollection<RecordKey> collection = resolveCollection(collectionName, false);
    int skip = ((Number) explained.getOrDefault("skip", 0)).intValue();
    int limit = Math.abs(((Number) explained.getOrDefault("limit", 0)).intValue());
    if (collection instanceof ParallaxCollection c) {
      return c.explainFind((Document) explained.get("filter"), (Document) explained.get("sort"),
          skip, limit);
    }
    Document eof = new Document("stage", "EOF");
    Document response = new Document("queryPlanner",
        new Document("namespace", getFullCollectionNamespace(collectionName)).append("winningPlan", eof))
        .append("executionStats", new Document("nReturned", 0).append("totalKeysExamined", 0)
            .append("totalDocsExamined", 0).append("executionStages", eof));
    Utils.markOkay(response);
    return response;
  }

  /**
   * The explain of a count or distinct: the plan that reads the documents matching its {@code
   * query} and what running it examined. A count is a {@code COUNT} stage (with {@code
   * nCounted}) over that plan, or over {@code RECORD_STORE_FAST_COUNT} — the collection's
   * counter, no document read — when it has no query.
   */
  private Document explainCountOrDistinct(String verb, Document explained) {
    Document filter = explained.get("query") instanceof Document q ? q : new Document();
    boolean count = verb.equalsIgnoreCase("count");
    int skip = count ? ((Number) explained.getOrDefault("skip", 0)).intValue() : 0;
    int limit = count ? Math.abs(((Number) explained.getOrDefault("limit", 0)).intValue()) : 0;
    String collectionName = String.valueOf(explained.get(verb));
    if (!(resolveCollection(collectionName, false) instanceof ParallaxCollection c)) {
      return explain(new Document("explain", new Document("find", collectionName)));
    }
    if (!count) return c.explainFind(filter, null, 0, 0);
    if (filter.isEmpty()) {
      Document fast = new Document("stage", "COUNT").append("nCounted", c.count(filter, skip, limit))
          .append("inputStage", new Document("stage", "RECORD_STORE_FAST_COUNT"));
      Document response = new Document("queryPlanner", new Document("namespace", c.getFullName())
          .append("winningPlan", fast)).append("executionStats", new Document("nReturned", 0)
          .append("totalKeysExamined", 0).append("totalDocsExamined", 0)
          .append("executionStages", fast));
      Utils.markOkay(response);
      return response;
    }
    Document response = c.explainFind(filter, null, skip, limit);
    Document execution = (Document) response.get("executionStats");
    Document counted = new Document("stage", "COUNT").append("nCounted", execution.get("nReturned"))
        .append("inputStage", execution.get("executionStages"));
    ((Document) response.get("queryPlanner")).put("winningPlan", counted);
    execution.put("executionStages", counted);
    execution.put("nReturned", 0);
    return response;
  }

  /**
   * The explain of an aggregate, in MongoDB's form for a pipeline that is not pushed down
   * entirely: {@code stages}, the first a {@code $cursor} with the plan that produces the input
   * (the leading {@code $match} through the query planner, else a collection scan) and what
   * running it examined, then the remaining stages as the library runs them.
   */
  private Document explainAggregate(Document explained) {
    if (!(explained.get("pipeline") instanceof List<?> pipeline)) {
      throw new MongoServerError(14, "TypeMismatch", "'pipeline' must be an array");
    }
    List<Object> rest = new ArrayList<>(pipeline);
    Document match = new Document();
    Document sort = null;
    PipelineInput split = PipelineInput.of(pipeline);
    if (split != null && split.streams()) {
      // The streaming path pushes the $sort into the plan as well.
      match = split.filter();
      sort = split.sort();
      rest = new ArrayList<>(split.rest());
    } else if (!rest.isEmpty() && rest.get(0) instanceof Document first
        && first.get("$match") instanceof Document m) {
      match = m;
      rest.remove(0);
    }
    String collectionName = String.valueOf(explained.get("aggregate"));
    Document input;
    if (resolveCollection(collectionName, false) instanceof ParallaxCollection c) {
      input = c.explainFind(match, sort, 0, 0);
      input.remove("ok");
    } else {
      input = new Document("queryPlanner", new Document("namespace",
          getFullCollectionNamespace(collectionName)).append("winningPlan", new Document("stage", "EOF")));
    }
    List<Object> stages = new ArrayList<>();
    stages.add(new Document("$cursor", input));
    stages.addAll(rest);
    Document response = new Document("stages", stages);
    Utils.markOkay(response);
    return response;
  }

  @Override
  protected long getFileSize() {
    return volume.fileBytes();
  }

  @Override
  protected long getStorageSize() {
    return volume.storageBytes();
  }
}
