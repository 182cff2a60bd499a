package io.parallaxkv.mongo;

import static com.mongodb.client.model.Filters.and;
import static com.mongodb.client.model.Filters.eq;
import static com.mongodb.client.model.Filters.gte;
import static com.mongodb.client.model.Filters.lt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Indexes;
import com.mongodb.client.model.Updates;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Readers of a collection run beside its writers (find and aggregate hold the collection's lock
 * only to plan and take their snapshot): every document a reader gets through an index is whole
 * (two fields a writer changes together agree), matches the filter and comes in the index's
 * order; positional updates ({@code arr.$}) hit the right element while readers match arrays;
 * and the indexes stay consistent. (Readers match with a matcher of their own because the
 * library's keeps the last array position matched, which a positional update reads; a reader
 * sharing it would race in a window of microseconds, which this test does not reliably hit.)
 */
class ConcurrentReadersTest {
  private static final int DOCS = 50;
  private static final int SLOTS = 3;
  private static final int WRITES_PER_WRITER = 300;

  @TempDir Path dir;

  @Test
  void readersBesideWritersSeeWholeDocumentsInIndexOrder() throws Exception {
    try (MongoFixture f = new MongoFixture(dir)) {
      MongoCollection<Document> c = f.client.getDatabase("conc").getCollection("r");
      c.createIndex(Indexes.ascending("a"));
      List<Document> docs = new ArrayList<>();
      for (int i = 0; i < DOCS; i++) {
        List<Document> arr = new ArrayList<>();
        for (int k = 0; k < SLOTS; k++) arr.add(new Document("k", k).append("v", 0));
        docs.add(new Document("_id", i).append("a", 2 * i).append("b", 100 - 2 * i)
            .append("arr", arr));
      }
      c.insertMany(docs);
      AtomicIntegerArray increments = new AtomicIntegerArray(DOCS * SLOTS);
      AtomicBoolean writing = new AtomicBoolean(true);
      AtomicLong documentsRead = new AtomicLong();
      ExecutorService pool = Executors.newFixedThreadPool(4);
      List<Future<?>> writers = new ArrayList<>();
      List<Future<?>> readers = new ArrayList<>();
      for (int w = 0; w < 2; w++) {
        long seed = w;
        writers.add(pool.submit(() -> {
          Random random = new Random(seed);
          for (int i = 0; i < WRITES_PER_WRITER; i++) {
            int id = random.nextInt(DOCS);
            int a = random.nextInt(200);
            c.updateOne(eq("_id", id), Updates.combine(Updates.set("a", a), Updates.set("b", 100 - a)));
            int k = random.nextInt(SLOTS);
            c.updateOne(and(eq("_id", id), eq("arr.k", k)), Updates.inc("arr.$.v", 1));
            increments.incrementAndGet(id * SLOTS + k);
          }
          return null;
        }));
      }
      for (int r = 0; r < 2; r++) {
        long seed = 100 + r;
        readers.add(pool.submit(() -> {
          Random random = new Random(seed);
          while (writing.get()) {
            int lo = random.nextInt(150);
            int previous = Integer.MIN_VALUE;
            for (Document d : c.find(and(gte("a", lo), lt("a", lo + 50))).sort(Indexes.ascending("a"))
                .batchSize(7)) {
              int a = d.getInteger("a");
              assertTrue(a >= lo && a < lo + 50, "outside the filter: " + d.toJson());
              assertEquals(100, a + d.getInteger("b"), "a torn document: " + d.toJson());
              assertTrue(a >= previous, "out of index order: " + d.toJson());
              previous = a;
              documentsRead.incrementAndGet();
            }
            // Array matches on the readers' side, beside the writers' positional updates.
            int k = random.nextInt(SLOTS);
            for (Document d : c.aggregate(List.of(new Document("$match", new Document("arr",
                new Document("$elemMatch", new Document("k", k).append("v", new Document("$gte", 0))))),
                new Document("$project", new Document("arr", 1))))) {
              assertEquals(SLOTS, d.getList("arr", Document.class).size());
              documentsRead.incrementAndGet();
            }
          }
          return null;
        }));
      }
      for (Future<?> w : writers) w.get(120, TimeUnit.SECONDS);
      writing.set(false);
      for (Future<?> r : readers) r.get(120, TimeUnit.SECONDS);
      pool.shutdown();
      assertTrue(documentsRead.get() > 0);

      for (Document d : c.find()) {
        int id = d.getInteger("_id");
        List<Document> arr = d.getList("arr", Document.class);
        for (int k = 0; k < SLOTS; k++) {
          assertEquals(k, arr.get(k).getInteger("k"));
          assertEquals(increments.get(id * SLOTS + k), arr.get(k).getInteger("v"),
              "positional increments of document " + id + " slot " + k + ": " + d.toJson());
        }
      }
      Document valid = f.client.getDatabase("conc").runCommand(new Document("validate", "r"));
      assertEquals(Boolean.TRUE, valid.getBoolean("valid"), valid.toJson());
    }
  }
}
