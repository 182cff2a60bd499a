package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import com.mongodb.client.MongoCollection;
import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import java.nio.file.Path;
import java.util.List;
import org.bson.RawBsonDocument;
import org.bson.Document;
import org.bson.types.ObjectId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the server stores is the documents' BSON, in a region named after the collection; and the
 * engine binding is the one the run asked for (the suite runs on JNI and on FFM).
 */
class StorageFormatTest {
  @TempDir Path dir;

  @Test
  void runsOnTheRequestedBackend() {
    String requested = System.getProperty("parallax.backend");
    assertNotNull(requested, "the pom names the backend of each run");
    assertEquals(requested, Parallax.backend());
  }

  @Test
  void storedValueIsTheDocumentsBson() {
    Document doc = new Document("_id", 42).append("name", "ada").append("oid", new ObjectId())
        .append("tags", List.of("x", "y")).append("nested", new Document("n", 1.5));
    try (MongoFixture f = new MongoFixture(dir)) {
      MongoCollection<Document> c = f.client.getDatabase("app").getCollection("format");
      c.insertOne(doc);
    }
    try (Parallax volume = Parallax.open(dir.resolve(MongoVolume.VOLUME_FILE));
         Region region = volume.openRegion("mongo/app.format")) {
      byte[] bson = region.get(RecordKey.ofId(42).key());
      assertNotNull(bson, "document keyed by the KeyString of its _id");
      assertEquals(doc, Document.parse(new RawBsonDocument(bson).toJson()));
    }
  }
}
