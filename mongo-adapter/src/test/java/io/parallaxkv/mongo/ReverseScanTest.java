package io.parallaxkv.mongo;

import static com.mongodb.client.model.Filters.and;
import static com.mongodb.client.model.Filters.eq;
import static com.mongodb.client.model.Filters.gte;
import static com.mongodb.client.model.Filters.in;
import static com.mongodb.client.model.Filters.lt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.mongodb.client.FindIterable;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoDatabase;
import com.mongodb.client.model.Indexes;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.bson.Document;
import org.bson.conversions.Bson;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sorts opposite to an index's order run as backward scans (the engine's reverse iteration):
 * explain shows an IXSCAN (or COLLSCAN) with {@code direction: "backward"} and no SORT stage, and
 * the results — ties included — equal those of the same query on an unindexed collection, which
 * the library sorts in memory.
 */
class ReverseScanTest {
  @TempDir Path dir;

  @Test
  void oppositeSortsScanBackward() {
    try (MongoFixture f = new MongoFixture(dir)) {
      MongoDatabase db = f.client.getDatabase("rev");
      MongoCollection<Document> indexed = db.getCollection("indexed");
      MongoCollection<Document> plain = db.getCollection("plain");
      indexed.createIndex(Indexes.compoundIndex(Indexes.ascending("a"), Indexes.descending("b")));
      indexed.createIndex(Indexes.ascending("u"));
      Random random = new Random(14);
      List<Document> docs = new ArrayList<>();
      for (int i = 0; i < 600; i++) {
        // Few distinct a and b values: many ties, which must keep _id order either way.
        docs.add(new Document("_id", random.nextInt(1_000_000) * 1000 + i)
            .append("a", random.nextInt(12)).append("b", random.nextInt(5) - 2)
            .append("u", i * 7 % 601));
      }
      indexed.insertMany(docs);
      plain.insertMany(docs);

      List<Bson> filters = List.of(new Document(), and(gte("a", 3), lt("a", 9)), eq("a", 4),
          in("a", 1, 5, 7), and(eq("a", 2), gte("b", 0)), and(in("a", 2, 6), lt("b", 1)));
      List<Document> backwardSorts = List.of(new Document("a", -1), new Document("a", -1).append("b", 1));
      for (Bson filter : filters) {
        for (Document sort : backwardSorts) {
          assertBackward(indexed.find(filter).sort(sort), "a_1_b_-1");
          assertEquals(ids(plain.find(filter).sort(sort)), ids(indexed.find(filter).sort(sort)),
              filter + " sort " + sort.toJson());
          assertEquals(ids(plain.find(filter).sort(sort).skip(3).limit(17)),
              ids(indexed.find(filter).sort(sort).skip(3).limit(17)), filter + " " + sort.toJson());
        }
      }
      // b alone is sorted backward once a is pinned to one value.
      assertBackward(indexed.find(eq("a", 4)).sort(new Document("b", 1)), "a_1_b_-1");
      assertEquals(ids(plain.find(eq("a", 4)).sort(new Document("b", 1))),
          ids(indexed.find(eq("a", 4)).sort(new Document("b", 1))));

      // A limit stops a backward scan early: the five largest u, five documents read.
      FindIterable<Document> top = indexed.find().sort(new Document("u", -1)).limit(5);
      Document plan = assertBackward(top, "u_1");
      assertEquals(5, ((Number) plan.get("executionStats", Document.class)
          .get("totalDocsExamined")).intValue(), plan.toJson());
      assertEquals(List.of(600, 599, 598, 597, 596),
          top.map(d -> d.getInteger("u")).into(new ArrayList<>()));

      // _id descending is a backward scan of the records.
      Document idPlan = indexed.find().sort(new Document("_id", -1)).limit(3).explain();
      assertFalse(idPlan.toJson().contains("\"SORT\""), idPlan.toJson());
      assertEquals("backward", idPlan.toJson().contains("COLLSCAN")
          ? stage(idPlan, "COLLSCAN").getString("direction")
          : stage(idPlan, "IXSCAN").getString("direction"));
      assertEquals(ids(plain.find().sort(new Document("_id", -1))),
          ids(indexed.find().sort(new Document("_id", -1))));
    }
  }

  private static Document assertBackward(FindIterable<Document> query, String index) {
    Document plan = query.explain();
    assertFalse(plan.toJson().contains("\"SORT\""), plan.toJson());
    Document scan = stage(plan, "IXSCAN");
    assertEquals(index, scan.getString("indexName"), plan.toJson());
    assertEquals("backward", scan.getString("direction"), plan.toJson());
    return plan;
  }

  private static Document stage(Document explain, String name) {
    Document stage = explain.get("queryPlanner", Document.class).get("winningPlan", Document.class);
    while (!stage.getString("stage").equals(name)) stage = stage.get("inputStage", Document.class);
    return stage;
  }

  private static List<Object> ids(FindIterable<Document> docs) {
    return docs.map(d -> d.get("_id")).into(new ArrayList<>());
  }
}
