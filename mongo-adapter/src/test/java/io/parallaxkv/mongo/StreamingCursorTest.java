package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.mongodb.MongoCursorNotFoundException;
import com.mongodb.MongoException;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoCursor;
import com.mongodb.client.model.Projections;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * find's cursors stream: a large result with a small batch size is read from the engine batch by
 * batch (the server's cursor has read no more than the batches handed out, plus one document of
 * look-ahead), from the snapshot the find took; killCursors and the cursor timeout release it;
 * a dropped collection ends its cursors with an error, not a crash. Aggregations of streaming
 * stages read the same way.
 */
class StreamingCursorTest {
  private static final int DOCS = 20_000;

  @TempDir Path dir;

  @Test
  void batchesAreReadLazilyFromOneSnapshot() {
    try (MongoFixture f = new MongoFixture(dir)) {
      MongoCollection<Document> c = f.client.getDatabase("stream").getCollection("c");
      fill(c);
      CursorReaper cursors = f.server.backend().cursors();
      try (MongoCursor<Document> it = c.find().batchSize(50).iterator()) {
        assertEquals(0, it.next().getInteger("_id"));
        StreamingCursor cursor = cursors.get(it.getServerCursor().getId());
        assertTrue(cursor.documentsRead() <= 51, "read ahead: " + cursor.documentsRead());
        // Writes after the find are not seen by its cursor: it reads the find's snapshot.
        c.deleteMany(new Document("_id", new Document("$gte", DOCS / 2)));
        int seen = 1;
        while (seen < 500) {
          assertEquals(seen, it.next().getInteger("_id"));
          seen++;
        }
        assertTrue(cursor.documentsRead() <= 551, "read ahead: " + cursor.documentsRead());
        while (it.hasNext()) assertEquals(seen++, it.next().getInteger("_id"));
        assertEquals(DOCS, seen, "the whole snapshot, deletes after the find notwithstanding");
      }
      assertEquals(0, cursors.openCount(), "an exhausted cursor released its snapshot");

      // An in-memory sort and a projection across getMore.
      List<Integer> sorted = new ArrayList<>();
      for (Document d : c.find().sort(new Document("v", -1)).projection(Projections.include("v"))
          .batchSize(100)) {
        assertEquals(List.of("_id", "v"), new ArrayList<>(d.keySet()));
        sorted.add(d.getInteger("v"));
      }
      assertEquals(DOCS / 2, sorted.size());
      for (int i = 1; i < sorted.size(); i++) assertTrue(sorted.get(i - 1) >= sorted.get(i));

      // killCursors (the driver's close of an unfinished cursor) releases the snapshot at once.
      MongoCursor<Document> unfinished = c.find().batchSize(10).iterator();
      unfinished.next();
      assertEquals(1, cursors.openCount());
      unfinished.close();
      assertEquals(0, cursors.openCount());

      // A limit ends the cursor; a negative one is a single batch.
      assertEquals(25, c.find().batchSize(10).limit(25).into(new ArrayList<>()).size());
      assertEquals(0, cursors.openCount());

      // Dropping the collection under an open cursor ends it with an error; the server goes on.
      MongoCursor<Document> orphan = c.find().batchSize(10).iterator();
      for (int i = 0; i < 10; i++) orphan.next();
      c.drop();
      MongoException e = assertThrows(MongoException.class, () -> {
        while (orphan.hasNext()) orphan.next();
      });
      assertTrue(e.getCode() == 175 || e.getCode() == 43, e.toString());
      orphan.close();
      assertEquals(0, cursors.openCount());
      c.insertOne(new Document("_id", 1));
      assertEquals(1, c.countDocuments());
    }
  }

  @Test
  void aggregationsStreamInBatches() {
    try (MongoFixture f = new MongoFixture(dir)) {
      MongoCollection<Document> c = f.client.getDatabase("stream").getCollection("a");
      fill(c);
      c.createIndex(new Document("v", 1));
      CursorReaper cursors = f.server.backend().cursors();
      List<Document> pipeline = List.of(
          new Document("$match", new Document("v", new Document("$gte", 1000))),
          new Document("$sort", new Document("v", 1)),
          new Document("$project", new Document("v", 1)
              .append("twice", new Document("$multiply", List.of("$v", 2)))),
          new Document("$skip", 10),
          new Document("$limit", 15_000));

      Document plan = f.client.getDatabase("stream").runCommand(new Document("explain",
          new Document("aggregate", "a").append("pipeline", pipeline).append("cursor", new Document())));
      String winning = plan.toJson();
      assertTrue(winning.contains("IXSCAN") && !winning.contains("\"SORT\""), winning);

      int expected = 1010;
      try (MongoCursor<Document> it = c.aggregate(pipeline).batchSize(50).iterator()) {
        Document first = it.next();
        StreamingCursor cursor = cursors.get(it.getServerCursor().getId());
        // The skip's 10, one batch of 50, one document of look-ahead.
        assertTrue(cursor.documentsRead() <= 61, "read ahead: " + cursor.documentsRead());
        assertEquals(new Document("_id", first.get("_id")).append("v", expected)
            .append("twice", 2 * expected), first);
        expected++;
        while (expected < 1510) {
          Document d = it.next();
          assertEquals(expected, d.getInteger("v"));
          assertEquals(2 * expected, d.getInteger("twice"));
          expected++;
        }
        assertTrue(cursor.documentsRead() <= 561, "read ahead: " + cursor.documentsRead());
        while (it.hasNext()) assertEquals(expected++, it.next().getInteger("v"));
      }
      assertEquals(1010 + 15_000, expected, "the whole result, in order, across getMores");
      assertEquals(0, cursors.openCount(), "an exhausted aggregation released its snapshot");

      // A collection scan (no $match) streams too; $sort on _id descending is a backward scan.
      try (MongoCursor<Document> it = c.aggregate(List.of(
          new Document("$sort", new Document("_id", -1)),
          new Document("$project", new Document("_id", 1)))).batchSize(100).iterator()) {
        assertEquals(DOCS - 1, it.next().getInteger("_id"));
        StreamingCursor cursor = cursors.get(it.getServerCursor().getId());
        assertTrue(cursor.documentsRead() <= 101, "read ahead: " + cursor.documentsRead());
        int next = DOCS - 2;
        while (it.hasNext()) assertEquals(next--, it.next().getInteger("_id"));
        assertEquals(-1, next);
      }
      // A pipeline with a stage that needs all its input ($group) still answers, whole.
      Document group = c.aggregate(List.of(new Document("$match", new Document("v",
          new Document("$lt", 100))), new Document("$group", new Document("_id", null)
          .append("n", new Document("$sum", 1))))).first();
      assertEquals(100, group.getInteger("n"));
      assertEquals(0, cursors.openCount());
    }
  }

  @Test
  void idleCursorsTimeOut() throws InterruptedException {
    System.setProperty(CursorReaper.TIMEOUT_PROPERTY, "300");
    MongoFixture f;
    try {
      f = new MongoFixture(dir);
    } finally {
      System.clearProperty(CursorReaper.TIMEOUT_PROPERTY);
    }
    try (f) {
      MongoCollection<Document> c = f.client.getDatabase("stream").getCollection("t");
      List<Document> docs = new ArrayList<>();
      for (int i = 0; i < 100; i++) docs.add(new Document("_id", i));
      c.insertMany(docs);
      MongoCursor<Document> it = c.find().batchSize(5).iterator();
      it.next();
      long deadline = System.nanoTime() + 30_000_000_000L;
      while (f.server.backend().cursors().openCount() > 0 && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      assertEquals(0, f.server.backend().cursors().openCount(), "the idle cursor timed out");
      MongoCursorNotFoundException gone = assertThrows(MongoCursorNotFoundException.class, () -> {
        while (it.hasNext()) it.next();
      });
      assertEquals(43, gone.getCode());
      it.close();
    }
  }

  private static void fill(MongoCollection<Document> c) {
    List<Document> docs = new ArrayList<>();
    for (int i = 0; i < DOCS; i++) {
      docs.add(new Document("_id", i).append("v", (i * 7919) % DOCS).append("pad", "x".repeat(40)));
      if (docs.size() == 1000) {
        c.insertMany(docs);
        docs.clear();
      }
    }
  }
}
