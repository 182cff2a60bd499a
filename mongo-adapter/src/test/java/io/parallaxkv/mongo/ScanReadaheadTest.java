package io.parallaxkv.mongo;

import static com.mongodb.client.model.Filters.and;
import static com.mongodb.client.model.Filters.gte;
import static com.mongodb.client.model.Filters.lt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.mongodb.client.FindIterable;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Indexes;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A find whose plan yields the order asked for tells the engine's scanners how many entries it
 * will read (its skip plus its limit, or its first batch), so that on data larger than memory a
 * scan asks the device for them at once; explain shows that number as the scan stage's
 * {@code readahead}. A find sorted in memory reads every candidate and tells nothing. The
 * documents returned are the same either way.
 */
class ScanReadaheadTest {
  @TempDir Path dir;

  @Test
  void findsThatStopEarlyTellTheScanHowFarItGoes() {
    try (MongoFixture f = new MongoFixture(dir)) {
      MongoCollection<Document> c = f.client.getDatabase("ra").getCollection("c");
      c.createIndex(Indexes.ascending("a"));
      List<Document> docs = new ArrayList<>();
      for (int i = 0; i < 300; i++) {
        docs.add(new Document("_id", String.format("user%05d", i * 7 % 300))
            .append("a", i % 40).append("b", 300 - i));
      }
      c.insertMany(docs);

      // YCSB's scan: _id from a key on, in _id order, a limit.
      FindIterable<Document> ycsb = c.find(gte("_id", "user00100")).sort(new Document("_id", 1)).limit(50);
      assertEquals(50, readahead(ycsb.explain(), "COLLSCAN", "IXSCAN"));
      assertEquals(ids(100, 150), ycsb.map(d -> d.getString("_id")).into(new ArrayList<>()));

      // skip counts: those entries are read too.
      FindIterable<Document> skipped = c.find().sort(new Document("_id", 1)).skip(5).limit(20);
      assertEquals(25, readahead(skipped.explain(), "COLLSCAN", "IXSCAN"));
      assertEquals(ids(5, 25), skipped.map(d -> d.getString("_id")).into(new ArrayList<>()));

      // Backward, through a secondary index.
      FindIterable<Document> backward = c.find(and(gte("a", 10), lt("a", 20)))
          .sort(new Document("a", -1)).limit(7);
      assertEquals(7, readahead(backward.explain(), "IXSCAN"));
      assertEquals(List.of(19, 19, 19, 19, 19, 19, 19),
          backward.map(d -> d.getInteger("a")).into(new ArrayList<>()));

      // Sorted in memory: every candidate is read, so the scan is told nothing.
      Document inMemory = c.find().sort(new Document("b", 1)).limit(5).explain();
      assertFalse(inMemory.toJson().contains("readahead"), inMemory.toJson());
      assertEquals(List.of(1, 2, 3, 4, 5), c.find().sort(new Document("b", 1)).limit(5)
          .map(d -> d.getInteger("b")).into(new ArrayList<>()));

      // No limit: the stream is read as far as the client asks, every document in order.
      assertEquals(ids(0, 300), c.find().sort(new Document("_id", 1))
          .map(d -> d.getString("_id")).into(new ArrayList<>()));
    }
  }

  private static List<String> ids(int from, int to) {
    return IntStream.range(from, to).mapToObj(i -> String.format("user%05d", i)).toList();
  }

  /** The readahead of the first of {@code stages} in the winning plan. */
  private static int readahead(Document explain, String... stages) {
    Document stage = explain.get("queryPlanner", Document.class).get("winningPlan", Document.class);
    while (!List.of(stages).contains(stage.getString("stage"))) {
      stage = stage.get("inputStage", Document.class);
    }
    return stage.getInteger("readahead", 0);
  }
}
