package io.parallaxkv.mongo;

import static com.mongodb.client.model.Filters.and;
import static com.mongodb.client.model.Filters.eq;
import static com.mongodb.client.model.Filters.gt;
import static com.mongodb.client.model.Filters.gte;
import static com.mongodb.client.model.Filters.in;
import static com.mongodb.client.model.Filters.lt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.mongodb.MongoBulkWriteException;
import com.mongodb.MongoCommandException;
import com.mongodb.MongoException;
import com.mongodb.MongoWriteException;
import com.mongodb.WriteConcern;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoCursor;
import com.mongodb.client.MongoDatabase;
import com.mongodb.client.model.Accumulators;
import com.mongodb.client.model.Aggregates;
import com.mongodb.client.model.BulkWriteOptions;
import com.mongodb.client.model.DeleteOneModel;
import com.mongodb.client.model.FindOneAndUpdateOptions;
import com.mongodb.client.model.IndexModel;
import com.mongodb.client.model.IndexOptions;
import com.mongodb.client.model.Indexes;
import com.mongodb.client.model.InsertOneModel;
import com.mongodb.client.model.Projections;
import com.mongodb.client.model.ReplaceOptions;
import com.mongodb.client.model.ReturnDocument;
import com.mongodb.client.model.Sorts;
import com.mongodb.client.model.UpdateManyModel;
import com.mongodb.client.model.UpdateOneModel;
import com.mongodb.client.model.UpdateOptions;
import com.mongodb.client.model.Updates;
import com.mongodb.client.result.DeleteResult;
import com.mongodb.client.result.UpdateResult;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.bson.Document;
import org.bson.conversions.Bson;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The MongoDB Java sync driver, unmodified, against the server on a fresh volume per test. */
class JavaDriverTest {
  @TempDir Path dir;
  private MongoFixture fixture;
  private MongoDatabase db;

  @BeforeEach
  void start() {
    fixture = new MongoFixture(dir);
    db = fixture.client.getDatabase("app");
  }

  @AfterEach
  void stop() {
    fixture.close();
  }

  private MongoCollection<Document> people(int n) {
    MongoCollection<Document> c = db.getCollection("people");
    List<Document> docs = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      docs.add(new Document("_id", i).append("age", i % 50).append("city", "c" + (i % 7))
          .append("name", "person" + i));
    }
    if (n > 0) c.insertMany(docs);
    return c;
  }

  @Test
  void crudAndUpserts() {
    MongoCollection<Document> c = people(20);
    assertEquals(20, c.countDocuments());
    assertEquals("person7", c.find(eq("_id", 7)).first().getString("name"));

    UpdateResult one = c.updateOne(eq("_id", 7), Updates.combine(Updates.set("name", "seven"),
        Updates.inc("age", 100)));
    assertEquals(1, one.getMatchedCount());
    assertEquals(1, one.getModifiedCount());
    assertEquals(107, c.find(eq("_id", 7)).first().getInteger("age"));

    UpdateResult many = c.updateMany(eq("city", "c1"), Updates.set("flag", true));
    assertEquals(3, many.getModifiedCount()); // ids 1, 8, 15
    assertEquals(3, c.countDocuments(eq("flag", true)));

    c.replaceOne(eq("_id", 3), new Document("name", "three"));
    Document three = c.find(eq("_id", 3)).first();
    assertEquals("three", three.getString("name"));
    assertFalse(three.containsKey("age"));

    UpdateResult upsert = c.updateOne(eq("_id", 500), Updates.set("name", "new"),
        new UpdateOptions().upsert(true));
    assertEquals(500, upsert.getUpsertedId().asInt32().getValue());
    UpdateResult upsertNoId = c.replaceOne(eq("name", "fresh"), new Document("name", "fresh").append("x", 1),
        new ReplaceOptions().upsert(true));
    assertTrue(upsertNoId.getUpsertedId().isObjectId());
    assertEquals(22, c.countDocuments());

    DeleteResult del = c.deleteOne(eq("_id", 0));
    assertEquals(1, del.getDeletedCount());
    assertEquals(3, c.deleteMany(eq("flag", true)).getDeletedCount());
    assertEquals(18, c.countDocuments());
    assertNull(c.find(eq("_id", 1)).first());
    assertValid("people");
  }

  @Test
  void bulkWritesOrderedAndUnordered() {
    MongoCollection<Document> c = db.getCollection("bulk");
    c.createIndex(Indexes.ascending("sku"), new IndexOptions().unique(true));
    c.bulkWrite(List.of(
        new InsertOneModel<>(new Document("_id", 1).append("sku", "a").append("qty", 1)),
        new InsertOneModel<>(new Document("_id", 2).append("sku", "b").append("qty", 2)),
        new UpdateOneModel<>(eq("_id", 1), Updates.inc("qty", 10)),
        new UpdateManyModel<>(gte("qty", 0), Updates.set("seen", true)),
        new DeleteOneModel<>(eq("_id", 2))));
    assertEquals(List.of(new Document("_id", 1).append("sku", "a").append("qty", 11).append("seen", true)),
        c.find().into(new ArrayList<>()));

    MongoBulkWriteException e = assertThrows(MongoBulkWriteException.class, () -> c.bulkWrite(List.of(
        new InsertOneModel<>(new Document("_id", 3).append("sku", "a")), // duplicate sku
        new InsertOneModel<>(new Document("_id", 4).append("sku", "d"))),
        new BulkWriteOptions().ordered(false)));
    assertEquals(11000, e.getWriteErrors().get(0).getCode());
    assertEquals(0, e.getWriteErrors().get(0).getIndex());
    assertEquals(1, e.getWriteResult().getInsertedCount());
    assertEquals(2, c.countDocuments()); // the unordered batch went on past the error
    assertValid("bulk");
  }

  @Test
  void findAndModify() {
    MongoCollection<Document> c = people(10);
    Document after = c.findOneAndUpdate(eq("_id", 4), Updates.inc("age", 1),
        new FindOneAndUpdateOptions().returnDocument(ReturnDocument.AFTER));
    assertEquals(5, after.getInteger("age"));
    Document before = c.findOneAndUpdate(eq("_id", 4), Updates.inc("age", 1));
    assertEquals(5, before.getInteger("age"));
    Document upserted = c.findOneAndUpdate(eq("_id", 99), Updates.set("name", "x"),
        new FindOneAndUpdateOptions().upsert(true).returnDocument(ReturnDocument.AFTER));
    assertEquals("x", upserted.getString("name"));
    Document removed = c.findOneAndDelete(eq("_id", 2));
    assertEquals("person2", removed.getString("name"));
    Document replaced = c.findOneAndReplace(eq("_id", 3), new Document("name", "r"));
    assertEquals("person3", replaced.getString("name"));
    assertEquals(10, c.countDocuments());
    assertValid("people");
  }

  @Test
  void cursorsSpanGetMore() {
    MongoCollection<Document> c = people(1000);
    List<Integer> ids = new ArrayList<>();
    try (MongoCursor<Document> cursor = c.find().sort(Sorts.ascending("_id")).batchSize(64).iterator()) {
      while (cursor.hasNext()) ids.add(cursor.next().getInteger("_id"));
    }
    assertEquals(1000, ids.size());
    for (int i = 0; i < 1000; i++) assertEquals(i, ids.get(i));
    assertEquals(980, c.find(gte("_id", 20)).batchSize(7).into(new ArrayList<>()).size());
  }

  @Test
  void createListAndDropIndexes() {
    MongoCollection<Document> c = people(100);
    c.createIndexes(List.of(
        new IndexModel(Indexes.ascending("age")),
        new IndexModel(Indexes.compoundIndex(Indexes.ascending("city"), Indexes.descending("age"))),
        new IndexModel(Indexes.ascending("name"), new IndexOptions().unique(true).name("by_name")),
        new IndexModel(Indexes.ascending("nick"), new IndexOptions().sparse(true))));
    Set<String> names = indexNames(c);
    assertEquals(Set.of("_id_", "age_1", "city_1_age_-1", "by_name", "nick_1"), names);
    Document byName = c.listIndexes().into(new ArrayList<>()).stream()
        .filter(d -> d.getString("name").equals("by_name")).findFirst().orElseThrow();
    assertEquals(Boolean.TRUE, byName.getBoolean("unique"));
    assertEquals(new Document("name", 1), byName.get("key", Document.class));

    c.dropIndex("age_1");
    assertEquals(Set.of("_id_", "city_1_age_-1", "by_name", "nick_1"), indexNames(c));
    c.dropIndex(Indexes.compoundIndex(Indexes.ascending("city"), Indexes.descending("age")));
    assertEquals(Set.of("_id_", "by_name", "nick_1"), indexNames(c));
    MongoCommandException noId = assertThrows(MongoCommandException.class, () -> c.dropIndex("_id_"));
    assertEquals(72, noId.getErrorCode());
    assertEquals(72, assertThrows(MongoCommandException.class,
        () -> c.dropIndex(Indexes.ascending("_id"))).getErrorCode());
    c.dropIndexes();
    assertEquals(Set.of("_id_"), indexNames(c));
    assertValid("people");

    MongoCommandException text = assertThrows(MongoCommandException.class,
        () -> c.createIndex(Indexes.text("name")));
    assertEquals(67, text.getErrorCode());
    assertEquals(67, assertThrows(MongoCommandException.class,
        () -> c.createIndex(Indexes.ascending("tags.0"))).getErrorCode());
    assertEquals(67, assertThrows(MongoCommandException.class,
        () -> c.createIndex(Indexes.ascending("age"), new IndexOptions().expireAfter(10L,
            java.util.concurrent.TimeUnit.SECONDS))).getErrorCode());
  }

  private static Set<String> indexNames(MongoCollection<Document> c) {
    Set<String> names = new HashSet<>();
    for (Document d : c.listIndexes()) names.add(d.getString("name"));
    return names;
  }

  @Test
  void uniqueViolationsAreError11000() {
    MongoCollection<Document> c = people(10);
    MongoWriteException dupId = assertThrows(MongoWriteException.class,
        () -> c.insertOne(new Document("_id", 3)));
    assertEquals(11000, dupId.getError().getCode());

    c.createIndex(Indexes.ascending("name"), new IndexOptions().unique(true));
    MongoWriteException dupInsert = assertThrows(MongoWriteException.class,
        () -> c.insertOne(new Document("_id", 50).append("name", "person1")));
    assertEquals(11000, dupInsert.getError().getCode());
    MongoWriteException dupUpdate = assertThrows(MongoWriteException.class,
        () -> c.updateOne(eq("_id", 2), Updates.set("name", "person1")));
    assertEquals(11000, dupUpdate.getError().getCode());
    assertEquals("person2", c.find(eq("_id", 2)).first().getString("name"));
    c.updateOne(eq("_id", 2), Updates.set("name", "person2")); // its own key is no conflict

    // Multikey unique: an element already present elsewhere.
    c.createIndex(Indexes.ascending("tags"), new IndexOptions().unique(true).sparse(true));
    c.updateOne(eq("_id", 1), Updates.set("tags", List.of("x", "y")));
    MongoWriteException dupElement = assertThrows(MongoWriteException.class,
        () -> c.updateOne(eq("_id", 4), Updates.set("tags", List.of("z", "y"))));
    assertEquals(11000, dupElement.getError().getCode());

    // A unique index over duplicates is refused and leaves nothing behind.
    MongoException build = assertThrows(MongoException.class,
        () -> c.createIndex(Indexes.ascending("city"), new IndexOptions().unique(true)));
    assertEquals(11000, build.getCode());
    assertFalse(indexNames(c).contains("city_1"));
    assertEquals(10, c.countDocuments());
    assertValid("people");
  }

  @Test
  void aggregation() {
    MongoCollection<Document> c = people(70);
    List<Document> byCity = c.aggregate(List.of(
        Aggregates.match(lt("age", 20)),
        Aggregates.group("$city", Accumulators.sum("n", 1), Accumulators.max("oldest", "$age")),
        Aggregates.sort(Sorts.ascending("_id")),
        Aggregates.project(Projections.fields(Projections.include("n", "oldest"))),
        Aggregates.limit(3))).into(new ArrayList<>());
    assertEquals(3, byCity.size());
    assertEquals("c0", byCity.get(0).getString("_id"));
    int expected = 0;
    int oldest = -1;
    for (int i = 0; i < 70; i++) {
      if (i % 50 < 20 && i % 7 == 0) {
        expected++;
        oldest = Math.max(oldest, i % 50);
      }
    }
    assertEquals(expected, byCity.get(0).getInteger("n"));
    assertEquals(oldest, byCity.get(0).getInteger("oldest"));
    assertEquals(28, c.countDocuments(lt("age", 14)));
    assertEquals(70, c.estimatedDocumentCount());
    assertEquals(7, c.distinct("city", String.class).into(new ArrayList<>()).size());
  }

  @Test
  void collectionsAndDatabases() {
    people(5);
    db.getCollection("other").insertOne(new Document("x", 1));
    db.getCollection("other").createIndex(Indexes.ascending("x"));
    db.createCollection("empty");
    Set<String> collections = db.listCollectionNames().into(new HashSet<>());
    assertEquals(Set.of("people", "other", "empty"), collections);
    assertTrue(fixture.client.listDatabaseNames().into(new ArrayList<>()).contains("app"));

    db.getCollection("other").drop();
    assertEquals(Set.of("people", "empty"), db.listCollectionNames().into(new HashSet<>()));
    assertEquals(0, db.getCollection("other").countDocuments());
    db.getCollection("other").insertOne(new Document("x", 2)); // a new, empty collection
    assertEquals(Set.of("_id_"), indexNames(db.getCollection("other")));
    assertEquals(1, db.getCollection("other").countDocuments());

    db.drop();
    assertTrue(db.listCollectionNames().into(new HashSet<>()).isEmpty());
    assertFalse(fixture.client.listDatabaseNames().into(new ArrayList<>()).contains("app"));
    // The name is free again, empty.
    db.getCollection("people").insertOne(new Document("_id", 1));
    assertEquals(1, db.getCollection("people").countDocuments());
  }

  @Test
  void restartKeepsDocumentsAndIndexes() {
    MongoCollection<Document> c = people(300);
    c.createIndex(Indexes.compoundIndex(Indexes.ascending("city"), Indexes.descending("age")));
    c.createIndex(Indexes.ascending("name"), new IndexOptions().unique(true));
    c.withWriteConcern(WriteConcern.JOURNALED).updateOne(eq("_id", 5), Updates.set("age", 1000));
    fixture.close();

    fixture = new MongoFixture(dir);
    db = fixture.client.getDatabase("app");
    MongoCollection<Document> again = db.getCollection("people");
    assertEquals(300, again.countDocuments());
    assertEquals(1000, again.find(eq("_id", 5)).first().getInteger("age"));
    assertEquals(Set.of("_id_", "city_1_age_-1", "name_1"), indexNames(again));
    Document plan = again.find(and(eq("city", "c3"), gt("age", 10))).explain();
    assertEquals("city_1_age_-1", inputStage(plan).getString("indexName"));
    MongoWriteException dup = assertThrows(MongoWriteException.class,
        () -> again.insertOne(new Document("name", "person9")));
    assertEquals(11000, dup.getError().getCode());
    assertValid("people");
  }

  @Test
  void queriesUseIndexesAndExplainSaysSo() {
    MongoCollection<Document> c = people(1000);
    c.createIndex(Indexes.ascending("age"));
    c.createIndex(Indexes.compoundIndex(Indexes.ascending("city"), Indexes.descending("age")));

    assertIndexScan(c, eq("age", 7), "age_1", 20);
    assertIndexScan(c, and(gt("age", 40), lt("age", 43)), "age_1", 40);
    assertIndexScan(c, in("age", 1, 2, 3), "age_1", 60);
    assertIndexScan(c, eq("city", "c2"), "city_1_age_-1", 143);
    assertIndexScan(c, and(eq("city", "c2"), gte("age", 45)), "city_1_age_-1", 14);
    Document byId = c.find(eq("_id", 17)).explain(); // a record lookup (IdLookupTest)
    assertEquals("IDHACK", byId.get("queryPlanner", Document.class)
        .get("winningPlan", Document.class).getString("stage"), byId.toJson());

    // A sort on the index's order needs no SORT stage; descending comes from the stored order.
    Document sorted = c.find(eq("city", "c4")).sort(Sorts.descending("age")).limit(5).explain();
    assertFalse(sorted.toJson().contains("\"SORT\""), sorted.toJson());
    List<Document> top = c.find(eq("city", "c4")).sort(Sorts.descending("age")).limit(5)
        .into(new ArrayList<>());
    assertEquals(49, top.get(0).getInteger("age"));
    for (int i = 1; i < top.size(); i++) {
      assertTrue(top.get(i - 1).getInteger("age") >= top.get(i).getInteger("age"));
    }
    // The opposite direction is a backward scan of the same index (ReverseScanTest has more).
    Document reversed = c.find(eq("city", "c4")).sort(Sorts.ascending("age")).explain();
    assertFalse(reversed.toJson().contains("\"SORT\""), reversed.toJson());
    assertEquals("backward", inputStage(reversed).getString("direction"));
    // A sort the index cannot give either way is sorted in memory, and says so.
    Document resorted = c.find(eq("city", "c4")).sort(Sorts.ascending("name")).explain();
    assertTrue(resorted.toJson().contains("\"SORT\""), resorted.toJson());

    // An aggregate's explain: the leading $match's plan as the $cursor stage, then the rest.
    Document aggregate = c.aggregate(List.of(Aggregates.match(eq("city", "c2")),
        Aggregates.group("$age", Accumulators.sum("n", 1)))).explain();
    List<Document> stages = aggregate.getList("stages", Document.class);
    Document cursorStage = stages.get(0).get("$cursor", Document.class);
    assertEquals("city_1_age_-1", inputStage(cursorStage).getString("indexName"), aggregate.toJson());
    assertEquals(143, ((Number) cursorStage.get("executionStats", Document.class)
        .get("totalDocsExamined")).intValue(), aggregate.toJson());
    assertTrue(stages.get(1).containsKey("$group"), aggregate.toJson());
    Document unfiltered = c.aggregate(List.of(Aggregates.limit(3))).explain();
    assertEquals("COLLSCAN", unfiltered.getList("stages", Document.class).get(0)
        .get("$cursor", Document.class).get("queryPlanner", Document.class)
        .get("winningPlan", Document.class).getString("stage"), unfiltered.toJson());

    Document scan = c.find(eq("name", "person3")).explain();
    assertEquals("COLLSCAN", scan.get("queryPlanner", Document.class)
        .get("winningPlan", Document.class).getString("stage"));
  }

  @Test
  void multikeyIndex() {
    MongoCollection<Document> c = db.getCollection("posts");
    c.createIndex(Indexes.ascending("tags"));
    c.insertMany(List.of(
        new Document("_id", 1).append("tags", List.of("a", "b")),
        new Document("_id", 2).append("tags", List.of("b", "c")),
        new Document("_id", 3).append("tags", "a"),
        new Document("_id", 4).append("tags", List.of()),
        new Document("_id", 5)));
    Document plan = c.find(eq("tags", "b")).explain();
    assertEquals(Boolean.TRUE, inputStage(plan).getBoolean("isMultiKey"));
    assertEquals(Set.of(1, 2), ids(c.find(eq("tags", "b"))));
    assertEquals(Set.of(1, 3), ids(c.find(eq("tags", "a"))));
    assertEquals(Set.of(1, 2, 3), ids(c.find(in("tags", "a", "c"))));
    assertEquals(Set.of(5), ids(c.find(eq("tags", null))));
    assertEquals(5, c.countDocuments(new Document("tags", new Document("$exists", false)))
        + c.countDocuments(new Document("tags", new Document("$exists", true))));
    c.updateOne(eq("_id", 1), Updates.pull("tags", "b"));
    assertEquals(Set.of(2), ids(c.find(eq("tags", "b"))));
    assertValid("posts");
  }

  private static Set<Object> ids(Iterable<Document> docs) {
    Set<Object> out = new HashSet<>();
    for (Document d : docs) out.add(d.get("_id"));
    return out;
  }

  private static void assertIndexScan(MongoCollection<Document> c, Bson filter, String index,
      int expected) {
    Document plan = c.find(filter).explain();
    assertEquals(index, inputStage(plan).getString("indexName"), plan.toJson());
    Document stats = plan.get("executionStats", Document.class);
    assertEquals(expected, ((Number) stats.get("nReturned")).intValue(), plan.toJson());
    // No collection scan: every document fetched was a match.
    assertEquals(expected, ((Number) stats.get("totalDocsExamined")).intValue(), plan.toJson());
    assertEquals(expected, c.countDocuments(filter));
  }

  private static Document inputStage(Document explain) {
    Document stage = explain.get("queryPlanner", Document.class).get("winningPlan", Document.class);
    while (!stage.getString("stage").equals("IXSCAN")) stage = stage.get("inputStage", Document.class);
    return stage;
  }

  @Test
  void documentsTooLargeForOneBatchAreRefused() {
    MongoCollection<Document> c = db.getCollection("big");
    byte[] payload = new byte[ParallaxCollection.MAX_DOCUMENT_BYTES];
    MongoWriteException e = assertThrows(MongoWriteException.class,
        () -> c.insertOne(new Document("_id", 1).append("p", payload)));
    assertEquals(10334, e.getError().getCode());
    c.insertOne(new Document("_id", 2).append("p", new byte[ParallaxCollection.MAX_DOCUMENT_BYTES / 2]));
    assertEquals(1, c.countDocuments());
  }

  private void assertValid(String collection) {
    Document result = db.runCommand(new Document("validate", collection));
    assertEquals(Boolean.TRUE, result.getBoolean("valid"), result.toJson());
  }
}
