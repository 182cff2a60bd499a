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
 * a dropped collection ends its cursors with an error, not a crash.
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
