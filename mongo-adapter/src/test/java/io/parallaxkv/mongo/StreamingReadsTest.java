package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoDatabase;
import java.net.Socket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.bson.BsonDocument;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * count, distinct, the drivers' countDocuments and legacy OP_QUERY finds read through the query
 * planner and stream from one snapshot: a legacy find's cursor has read no more than the batches
 * handed out (an index range read only its matches); count and distinct use an index when their
 * query allows (explain); and all of them answer over a collection several times larger than the
 * server's heap, which holding the matches would not survive.
 */
class StreamingReadsTest {
  private static final int DOCS = 20_000;

  @TempDir Path dir;

  @Test
  void legacyFindsStreamAndUseIndexes() throws Exception {
    try (MongoFixture f = new MongoFixture(dir)) {
      MongoCollection<Document> c = f.client.getDatabase("legacy").getCollection("c");
      fill(c);
      c.createIndex(new Document("v", 1));
      CursorReaper cursors = f.server.backend().cursors();
      try (Socket socket = new Socket("127.0.0.1", f.server.port())) {
        socket.setSoTimeout(30_000);
        // The whole collection, 50 at a time.
        LegacyOpQuery.Reply first = LegacyOpQuery.send(socket, "legacy.c", new BsonDocument(), 0, 50);
        assertEquals(50, first.documents().size());
        assertNotEquals(0, first.cursorId());
        StreamingCursor cursor = cursors.get(first.cursorId());
        assertTrue(cursor.documentsRead() <= 51, "read ahead: " + cursor.documentsRead());
        Document more = f.client.getDatabase("legacy").runCommand(new Document("getMore",
            first.cursorId()).append("collection", "c").append("batchSize", 100));
        assertEquals(100, more.get("cursor", Document.class).getList("nextBatch", Document.class)
            .size());
        assertTrue(cursor.documentsRead() <= 151, "read ahead: " + cursor.documentsRead());
        f.client.getDatabase("legacy").runCommand(new Document("killCursors", "c")
            .append("cursors", List.of(first.cursorId())));

        // $query/$orderby on the index, with a skip: only the range's entries are read.
        BsonDocument ranged = BsonDocument.parse("{$query: {v: {$gte: 1000, $lt: 2000}},"
            + " $orderby: {v: -1}}");
        LegacyOpQuery.Reply page = LegacyOpQuery.send(socket, "legacy.c", ranged, 10, 40);
        assertEquals(40, page.documents().size());
        for (int i = 0; i < 40; i++) {
          assertEquals(1989 - i, page.documents().get(i).getInt32("v").getValue());
        }
        assertTrue(cursors.get(page.cursorId()).documentsRead() <= 51,
            "an index range reads its matches only: " + cursors.get(page.cursorId()).documentsRead());
        // numberToReturn -n: one batch and no cursor.
        LegacyOpQuery.Reply single = LegacyOpQuery.send(socket, "legacy.c", ranged, 0, -5);
        assertEquals(5, single.documents().size());
        assertEquals(0, single.cursorId());
        f.client.getDatabase("legacy").runCommand(new Document("killCursors", "c")
            .append("cursors", List.of(page.cursorId())));
      }
      assertEquals(0, cursors.openCount());
    }
  }

  @Test
  void countAndDistinctUseIndexes() {
    try (MongoFixture f = new MongoFixture(dir)) {
      MongoDatabase db = f.client.getDatabase("plans");
      MongoCollection<Document> c = db.getCollection("c");
      fill(c);
      c.createIndex(new Document("v", 1));
      Document range = new Document("v", new Document("$gte", 1000).append("$lt", 1100));

      assertEquals(100, db.runCommand(new Document("count", "c").append("query", range))
          .getInteger("n"));
      assertEquals(100, c.countDocuments(range));
      assertEquals(30, c.countDocuments(range, new com.mongodb.client.model.CountOptions()
          .skip(10).limit(30)));
      Document count = db.runCommand(new Document("explain", new Document("count", "c")
          .append("query", range)).append("verbosity", "executionStats"));
      Document stages = count.get("executionStats", Document.class);
      assertEquals(100L, ((Number) stages.get("totalDocsExamined")).longValue(), count.toJson());
      assertTrue(count.toJson().contains("IXSCAN") && count.toJson().contains("\"COUNT\""),
          count.toJson());
      Document fast = db.runCommand(new Document("explain", new Document("count", "c")));
      assertEquals(0L, ((Number) fast.get("executionStats", Document.class)
          .get("totalDocsExamined")).longValue(), fast.toJson());

      List<Integer> groups = c.distinct("g", range, Integer.class).into(new ArrayList<>());
      assertEquals(List.of(0, 1, 2, 3, 4, 5, 6), groups);
      Document distinct = db.runCommand(new Document("explain", new Document("distinct", "c")
          .append("key", "g").append("query", range)));
      assertEquals(100L, ((Number) distinct.get("executionStats", Document.class)
          .get("totalDocsExamined")).longValue(), distinct.toJson());
      assertTrue(distinct.toJson().contains("IXSCAN"), distinct.toJson());
      // Multikey values are spread, as MongoDB's distinct does.
      c.insertOne(new Document("_id", -1).append("v", 1000).append("g", List.of(40, 41)));
      assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 40, 41),
          c.distinct("g", range, Integer.class).into(new ArrayList<>()));
    }
  }

  /**
   * The server as a child JVM with a 48 MB heap, over ~145 MB of documents whose {@code _id}s
   * alone are ~45 MB (900-byte strings): count, distinct, countDocuments and a full find answer,
   * which they could not if they held the matching documents, or even their ids (as the
   * library's count did).
   */
  @Test
  void readsOfMoreThanTheHeapAnswer() throws Exception {
    int docs = 50_000;
    String pad = "p".repeat(2000);
    String longId = "k".repeat(900);
    try (ServerProcess server = new ServerProcess(dir, List.of("-Xmx48m",
            "-XX:MaxDirectMemorySize=256m"));
         MongoClient client = MongoFixture.client(server.uri())) {
      MongoCollection<Document> c = client.getDatabase("big").getCollection("c");
      List<Document> batch = new ArrayList<>();
      for (int i = 0; i < docs; i++) {
        batch.add(new Document("_id", longId + i).append("g", i % 5).append("pad", pad));
        if (batch.size() == 500) {
          c.insertMany(batch);
          batch.clear();
        }
      }
      Document everything = new Document("pad", new Document("$exists", true));
      assertEquals(docs, client.getDatabase("big").runCommand(new Document("count", "c")
          .append("query", everything)).getInteger("n"), server.output());
      assertEquals(docs, c.countDocuments(everything), server.output());
      assertEquals(List.of(0, 1, 2, 3, 4), c.distinct("g", everything, Integer.class)
          .into(new ArrayList<>()), server.output());
      long found = 0;
      for (Document d : c.find(everything).batchSize(200)) found++;
      assertEquals(docs, found, server.output());
    }
  }

  private static void fill(MongoCollection<Document> c) {
    List<Document> docs = new ArrayList<>();
    for (int i = 0; i < DOCS; i++) {
      docs.add(new Document("_id", i).append("v", (i * 7919) % DOCS).append("g", i % 7));
      if (docs.size() == 1000) {
        c.insertMany(docs);
        docs.clear();
      }
    }
  }
}
