package io.parallaxkv.mongo;

import static com.mongodb.client.model.Filters.and;
import static com.mongodb.client.model.Filters.eq;
import static com.mongodb.client.model.Filters.in;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Indexes;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Filters that pin {@code _id} are record lookups (MongoDB's IDHACK): one get per value, no scan,
 * and, because they read no secondary index, no wait for the collection's lock that a writer
 * holds for a whole document change.
 */
class IdLookupTest {
  @TempDir Path dir;

  @Test
  void pinnedIdsAreLookedUpAndExplainedSo() {
    try (MongoFixture f = new MongoFixture(dir)) {
      MongoCollection<Document> c = f.client.getDatabase("ids").getCollection("c");
      List<Document> docs = new ArrayList<>();
      for (int i = 0; i < 100; i++) docs.add(new Document("_id", i).append("v", i % 3));
      c.insertMany(docs);

      assertEquals(7, c.find(eq("_id", 7)).first().getInteger("_id"));
      assertNull(c.find(eq("_id", 1000)).first());
      assertNull(c.find(and(eq("_id", 7), eq("v", 2))).first(), "7 % 3 is 1: the rest of the filter applies");
      assertEquals(List.of(99, 42, 3), ids(c.find(in("_id", 3, 42, 99, 1000)).sort(Indexes.descending("_id"))));
      assertEquals(List.of(3, 42, 99), ids(c.find(in("_id", 99, 3, 42)).sort(Indexes.ascending("_id"))));
      assertEquals(List.of(42, 99), ids(c.find(and(in("_id", 99, 4, 42), eq("v", 0)))));

      Document one = stats(c.find(eq("_id", 7)).explain());
      assertEquals("IDHACK", winningStage(c.find(eq("_id", 7)).explain()));
      assertEquals(1, one.get("totalKeysExamined", Number.class).intValue());
      assertEquals(1, one.get("totalDocsExamined", Number.class).intValue());
      Document missing = stats(c.find(eq("_id", 1000)).explain());
      assertEquals(0, missing.get("nReturned", Number.class).intValue());
      assertEquals(0, missing.get("totalDocsExamined", Number.class).intValue());
      Document several = stats(c.find(in("_id", 3, 42, 1000)).explain());
      assertEquals(3, several.get("totalKeysExamined", Number.class).intValue());
      assertEquals(2, several.get("totalDocsExamined", Number.class).intValue());
    }
  }

  @Test
  void idLookupsDoNotWaitForAWriterButIndexReadsDo() throws Exception {
    try (MongoFixture f = new MongoFixture(dir)) {
      MongoCollection<Document> c = f.client.getDatabase("ids").getCollection("c");
      c.createIndex(Indexes.ascending("v"));
      c.insertOne(new Document("_id", 1).append("v", 5));
      Object collection = f.server.backend().resolveDatabase("ids").resolveCollection("c", true);
      ExecutorService pool = Executors.newFixedThreadPool(2);
      CountDownLatch held = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      try {
        // Stands for a writer in the middle of a document change.
        Future<?> writer = pool.submit(() -> {
          synchronized (collection) {
            held.countDown();
            release.await();
          }
          return null;
        });
        assertTrue(held.await(10, TimeUnit.SECONDS));
        Future<Document> byId = pool.submit(() -> c.find(eq("_id", 1)).first());
        assertEquals(5, byId.get(30, TimeUnit.SECONDS).getInteger("v"));
        Future<Document> byIndex = pool.submit(() -> c.find(eq("v", 5)).first());
        boolean waited;
        try {
          byIndex.get(500, TimeUnit.MILLISECONDS);
          waited = false;
        } catch (TimeoutException expected) {
          waited = true;
        }
        assertTrue(waited, "a plan over a secondary index is made under the collection's lock");
        release.countDown();
        writer.get(10, TimeUnit.SECONDS);
        assertEquals(1, byIndex.get(30, TimeUnit.SECONDS).getInteger("_id"));
      } finally {
        release.countDown();
        pool.shutdownNow();
      }
      assertFalse(c.find(eq("_id", 2)).iterator().hasNext());
    }
  }

  private static List<Integer> ids(Iterable<Document> docs) {
    List<Integer> out = new ArrayList<>();
    for (Document d : docs) out.add(d.getInteger("_id"));
    return out;
  }

  private static String winningStage(Document explain) {
    return explain.get("queryPlanner", Document.class).get("winningPlan", Document.class).getString("stage");
  }

  private static Document stats(Document explain) {
    return explain.get("executionStats", Document.class);
  }
}
