package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import com.mongodb.client.FindIterable;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoDatabase;
import com.mongodb.client.model.IndexOptions;
import com.mongodb.client.model.Indexes;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Index scans return what a collection scan returns: the same documents, in the same order when
 * sorted. Random documents of mixed types (numbers of every BSON type, strings with NUL, null,
 * missing fields, arrays, sub-documents, dates) go into a collection with single, compound,
 * descending and multikey indexes and into one without; many queries run on both.
 */
class IndexedQueryTest {
  @TempDir Path dir;

  @Test
  void indexScansMatchCollectionScans() {
    long seed = Long.getLong("indexedQuery.seed", System.nanoTime());
    Random random = new Random(seed);
    try (MongoFixture f = new MongoFixture(dir)) {
      MongoDatabase db = f.client.getDatabase("q");
      MongoCollection<Document> indexed = db.getCollection("indexed");
      MongoCollection<Document> plain = db.getCollection("plain");
      indexed.createIndex(Indexes.ascending("a"));
      indexed.createIndex(Indexes.compoundIndex(Indexes.descending("c"), Indexes.ascending("a")));
      indexed.createIndex(Indexes.ascending("b"));
      indexed.createIndex(Indexes.ascending("d"));
      indexed.createIndex(Indexes.ascending("e"), new IndexOptions().sparse(true));
      List<Document> docs = new ArrayList<>();
      for (int i = 0; i < 600; i++) docs.add(randomDocument(i, random));
      indexed.insertMany(docs);
      plain.insertMany(docs);

      List<Document> filters = new ArrayList<>();
      for (Object v : values()) {
        filters.add(new Document("a", v));
        filters.add(new Document("a", new Document("$gt", v)));
        filters.add(new Document("a", new Document("$lte", v)));
        filters.add(new Document("c", v));
        filters.add(new Document("c", new Document("$gte", v)).append("a", new Document("$lt", 3)));
        filters.add(new Document("b", v));
        filters.add(new Document("e", v));
      }
      filters.add(new Document("a", new Document("$in", List.of(1, 2.0, "s2", 1L << 60))));
      filters.add(new Document("a", new Document("$in", java.util.Arrays.asList(null, -3))));
      filters.add(new Document("a", new Document("$gte", -2).append("$lt", 3)));
      filters.add(new Document("a", new Document("$gt", 2).append("$lt", -1)));
      filters.add(new Document("b", new Document("$gt", 0).append("$lt", 2)));
      filters.add(new Document("b", new Document("$in", List.of(0, 3))));
      filters.add(new Document("c", "a").append("a", new Document("$gte", 0)));
      filters.add(new Document("c", new Document("$in", List.of("a", "x\u0000y"))).append("a", 2));
      filters.add(new Document("d", new Document("k", 1)));
      filters.add(new Document("d.k", 1));
      filters.add(new Document("$and", List.of(new Document("a", new Document("$gt", 0)),
          new Document("a", new Document("$lt", 4)))));
      filters.add(new Document("$or", List.of(new Document("a", 1), new Document("c", "b"))));

      for (Document filter : filters) {
        assertEquals(ids(plain.find(filter)), ids(indexed.find(filter)),
            "filter " + filter.toJson() + " (seed " + seed + ")");
        // countDocuments is an aggregate whose leading $match reads through the planner.
        assertEquals(plain.countDocuments(filter), indexed.countDocuments(filter),
            "count " + filter.toJson() + " (seed " + seed + ")");
      }
      // Not the multikey "b": its order is the library's in-memory sort, whose comparator does
      // not order empty arrays, nulls and missing fields consistently (results depend on input
      // order, whatever the storage).
      List<Document> sorts = List.of(new Document("a", 1), new Document("a", -1),
          new Document("c", -1).append("a", 1), new Document("c", 1), new Document("c", -1),
          new Document("e", 1));
      for (Document sort : sorts) {
        for (Document filter : List.of(new Document(), new Document("c", "a"),
            new Document("a", new Document("$gt", 0)))) {
          assertEquals(sortedIds(plain.find(filter).sort(sort)), sortedIds(indexed.find(filter).sort(sort)),
              "filter " + filter.toJson() + " sort " + sort.toJson() + " (seed " + seed + ")");
        }
      }
      // The plan did use indexes (else this test proves nothing).
      Document plan = indexed.find(new Document("a", 1)).explain();
      assertNotEquals("COLLSCAN", plan.get("queryPlanner", Document.class)
          .get("winningPlan", Document.class).getString("stage"));
      Document valid = db.runCommand(new Document("validate", "indexed"));
      assertEquals(Boolean.TRUE, valid.getBoolean("valid"), valid.toJson());
    }
  }

  private static List<Object> values() {
    return java.util.Arrays.asList(null, -3, 0, 1, 2.0, 2.5, 1L << 60, (1L << 60) + 1, "a", "b",
        "s2", "x", "x\u0000y", "", true, new Date(1000), new Document("k", 1));
  }

  private static Document randomDocument(int id, Random r) {
    Document d = new Document("_id", id);
    List<Object> values = values();
    if (r.nextInt(8) != 0) d.append("a", values.get(r.nextInt(values.size())));
    int kind = r.nextInt(4);
    if (kind == 0) d.append("b", r.nextInt(4));
    if (kind == 1) {
      List<Object> arr = new ArrayList<>();
      for (int i = r.nextInt(4); i > 0; i--) arr.add(r.nextInt(4));
      d.append("b", arr);
    }
    if (kind == 2) d.append("b", List.of(new Document("x", 1), 2));
    d.append("c", List.of("a", "b", "x", "x\u0000y", "", "x\u0000").get(r.nextInt(6)));
    if (r.nextBoolean()) d.append("d", new Document("k", r.nextInt(3)));
    if (r.nextInt(3) == 0) d.append("e", values.get(r.nextInt(values.size())));
    return d;
  }

  private static HashSet<Object> ids(FindIterable<Document> docs) {
    return sortedIds(docs).stream().collect(java.util.stream.Collectors.toCollection(HashSet::new));
  }

  private static List<Object> sortedIds(FindIterable<Document> docs) {
    List<Object> out = new ArrayList<>();
    for (Document d : docs) out.add(d.get("_id"));
    return out;
  }
}
