package io.parallaxkv.mongo;

import static com.mongodb.client.model.Filters.eq;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.mongodb.MongoWriteException;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.IndexOptions;
import com.mongodb.client.model.Indexes;
import com.mongodb.client.model.Updates;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Clients writing the same collection at once: read-modify-write updates ({@code $inc}) lose
 * nothing, a unique index admits each key once whatever the interleaving, and the indexes stay
 * consistent with the documents.
 */
class ConcurrentWritersTest {
  private static final int THREADS = 4;
  private static final int OPS = 250;

  @TempDir Path dir;

  @Test
  void concurrentWritersKeepIndexesConsistent() throws Exception {
    try (MongoFixture f = new MongoFixture(dir)) {
      MongoCollection<Document> c = f.client.getDatabase("conc").getCollection("c");
      c.createIndex(Indexes.ascending("email"), new IndexOptions().unique(true).sparse(true));
      c.createIndex(Indexes.ascending("n"));
      c.insertOne(new Document("_id", "counter").append("n", 0));
      AtomicInteger inserted = new AtomicInteger();
      AtomicInteger duplicates = new AtomicInteger();
      ExecutorService pool = Executors.newFixedThreadPool(THREADS);
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        futures.add(pool.submit(() -> {
          for (int i = 0; i < OPS; i++) {
            c.updateOne(eq("_id", "counter"), Updates.inc("n", 1));
            try {
              // Every thread tries the same emails: each gets in exactly once.
              c.insertOne(new Document("email", "user" + i + "@x").append("n", i));
              inserted.incrementAndGet();
            } catch (MongoWriteException e) {
              assertEquals(11000, e.getError().getCode());
              duplicates.incrementAndGet();
            }
          }
          return null;
        }));
      }
      for (Future<?> future : futures) future.get(120, TimeUnit.SECONDS);
      pool.shutdown();
      assertEquals(THREADS * OPS, c.find(eq("_id", "counter")).first().getInteger("n"));
      assertEquals(OPS, inserted.get());
      assertEquals((THREADS - 1) * OPS, duplicates.get());
      assertEquals(OPS + 1, c.countDocuments());
      Document valid = f.client.getDatabase("conc").runCommand(new Document("validate", "c"));
      assertEquals(Boolean.TRUE, valid.getBoolean("valid"), valid.toJson());
    }
  }
}
