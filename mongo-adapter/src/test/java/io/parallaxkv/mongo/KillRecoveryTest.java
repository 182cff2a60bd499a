package io.parallaxkv.mongo;

import static com.mongodb.client.model.Filters.and;
import static com.mongodb.client.model.Filters.eq;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.mongodb.WriteConcern;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoDatabase;
import com.mongodb.client.model.IndexOptions;
import com.mongodb.client.model.Indexes;
import com.mongodb.client.model.Updates;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kill -9} of the server while clients write: after a restart every {@code j:true}
 * acknowledged insert, update and delete is there, and {@code validate} finds every index entry
 * matching its document and the counters matching the documents. A second client writes with
 * {@code w:1} meanwhile: those may be lost, but never leave the indexes inconsistent.
 */
class KillRecoveryTest {
  private static final int CYCLES = Integer.getInteger("mongo.kill.cycles", 4);

  @TempDir Path dir;

  /** One acknowledged operation's effect on a document: its value, or null when deleted. */
  private record Op(int id, Integer before, Integer after) {}

  @Test
  void journaledWritesSurviveKill9() throws Exception {
    long seed = Long.getLong("mongo.kill.seed", System.nanoTime());
    Random random = new Random(seed);
    Map<Integer, Integer> acknowledged = new HashMap<>(); // id -> v; absent: never or deleted
    for (int cycle = 0; cycle < CYCLES; cycle++) {
      Op[] inFlight = new Op[1];
      try (ServerProcess server = new ServerProcess(dir);
           MongoClient client = MongoFixture.client(server.uri())) {
        MongoCollection<Document> journaled = client.getDatabase("kill").getCollection("docs")
            .withWriteConcern(WriteConcern.JOURNALED);
        verify(client.getDatabase("kill"), acknowledged, null, seed);
        journaled.createIndex(Indexes.ascending("v"));
        journaled.createIndex(Indexes.ascending("tag"), new IndexOptions().unique(true).sparse(true));

        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong unacknowledged = new AtomicLong();
        Thread background = new Thread(() -> {
          MongoCollection<Document> w1 = client.getDatabase("kill").getCollection("docs")
              .withWriteConcern(WriteConcern.W1);
          try {
            for (long i = 0; !stop.get(); i++) {
              w1.insertOne(new Document("_id", "w1-" + Thread.currentThread().getId() + "-" + i)
                  .append("v", (int) (i % 100)).append("pad", "x".repeat((int) (i % 300))));
              unacknowledged.incrementAndGet();
            }
          } catch (RuntimeException killed) {
            // the server died under us
          }
        }, "w1-writer");
        background.start();

        long killAt = System.nanoTime() + (300 + random.nextInt(900)) * 1_000_000L;
        int nextId = acknowledged.keySet().stream().mapToInt(Integer::intValue).max().orElse(0) + 1;
        try {
          while (System.nanoTime() < killAt) {
            int kind = random.nextInt(10);
            if (kind < 5 || acknowledged.isEmpty()) {
              int id = nextId++;
              int v = random.nextInt(1000);
              inFlight[0] = new Op(id, null, v);
              journaled.insertOne(new Document("_id", id).append("v", v).append("tag", "t" + id));
            } else {
              int id = acknowledged.keySet().stream().skip(random.nextInt(acknowledged.size()))
                  .findFirst().orElseThrow();
              if (kind < 9) {
                int v = random.nextInt(1000);
                inFlight[0] = new Op(id, acknowledged.get(id), v);
                journaled.updateOne(eq("_id", id), Updates.set("v", v));
              } else {
                inFlight[0] = new Op(id, acknowledged.get(id), null);
                journaled.deleteOne(eq("_id", id));
              }
            }
            Op done = inFlight[0];
            if (done.after() == null) acknowledged.remove(done.id()); else acknowledged.put(done.id(), done.after());
            inFlight[0] = null;
          }
          server.kill(); // between operations or (usually) during the w:1 writer's
        } finally {
          stop.set(true);
          server.kill();
          background.join();
        }
        assertTrue(unacknowledged.get() > 0, "the w:1 writer ran");
      }
      try (ServerProcess server = new ServerProcess(dir);
           MongoClient client = MongoFixture.client(server.uri())) {
        verify(client.getDatabase("kill"), acknowledged, inFlight[0], seed);
      }
    }
  }

  /**
   * The acknowledged state is there (the op in flight at the kill: before or after), and
   * {@code validate} finds the indexes and counters consistent with the documents.
   */
  private static void verify(MongoDatabase db, Map<Integer, Integer> acknowledged, Op inFlight,
      long seed) {
    String where = " (seed " + seed + ")";
    MongoCollection<Document> docs = db.getCollection("docs");
    for (Map.Entry<Integer, Integer> e : acknowledged.entrySet()) {
      if (inFlight != null && inFlight.id() == e.getKey()) continue;
      Document d = docs.find(eq("_id", e.getKey())).first();
      assertTrue(d != null, "acknowledged document " + e.getKey() + " is missing" + where);
      assertEquals(e.getValue(), d.getInteger("v"), "document " + e.getKey() + where);
      // Found through the secondary indexes too.
      assertTrue(docs.countDocuments(and(eq("v", e.getValue()), eq("_id", e.getKey()))) == 1,
          "index on v misses " + e.getKey() + where);
      assertEquals(1, docs.countDocuments(eq("tag", "t" + e.getKey())), "index on tag" + where);
    }
    if (inFlight != null) {
      Document d = docs.find(eq("_id", inFlight.id())).first();
      Integer v = d == null ? null : d.getInteger("v");
      assertTrue(Objects.equals(v, inFlight.before()) || Objects.equals(v, inFlight.after()),
          "in-flight op on " + inFlight.id() + " left v=" + v + where);
    }
    if (db.listCollectionNames().into(new java.util.ArrayList<>()).contains("docs")) {
      Document valid = db.runCommand(new Document("validate", "docs"));
      assertEquals(Boolean.TRUE, valid.getBoolean("valid"), valid.toJson() + where);
    }
  }
}
