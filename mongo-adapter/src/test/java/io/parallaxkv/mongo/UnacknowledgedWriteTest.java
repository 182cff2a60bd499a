package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.mongodb.WriteConcern;
import com.mongodb.client.MongoCollection;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.bson.BsonDocument;
import org.bson.BsonInt32;
import org.bson.BsonString;
import org.bson.RawBsonDocument;
import org.bson.Document;
import org.bson.codecs.BsonDocumentCodec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code w:0} as MongoDB: the driver sends the write with OP_MSG's moreToCome flag, the server
 * applies it and sends no reply (not even for a failing write), and the connection goes on.
 */
class UnacknowledgedWriteTest {
  private static final int OP_MSG = 2013;

  @TempDir Path dir;

  @Test
  void unacknowledgedWritesApplyWithoutReply() throws Exception {
    try (MongoFixture f = new MongoFixture(dir)) {
      MongoCollection<Document> c = f.client.getDatabase("w0").getCollection("c");
      MongoCollection<Document> w0 = c.withWriteConcern(WriteConcern.UNACKNOWLEDGED);
      assertFalse(w0.insertOne(new Document("_id", 1)).wasAcknowledged());
      List<Document> many = new ArrayList<>();
      for (int i = 2; i <= 500; i++) many.add(new Document("_id", i));
      w0.insertMany(many);
      w0.insertOne(new Document("_id", 1)); // a duplicate: silently refused
      w0.updateOne(new Document("_id", 2), new Document("$set", new Document("x", 1)));
      awaitCount(c, 500);
      assertEquals(500, c.countDocuments());
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (c.find(new Document("x", 1)).first() == null && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertEquals(2, c.find(new Document("x", 1)).first().getInteger("_id"));

      // On the wire: no reply to the moreToCome insert; the next command's reply comes first.
      try (Socket s = new Socket("127.0.0.1", f.server.port())) {
        s.setSoTimeout(10_000);
        BsonDocument insert = new BsonDocument("insert", new BsonString("c"))
            .append("documents", new org.bson.BsonArray(List.of(new BsonDocument("_id",
                new BsonInt32(9000)))))
            .append("$db", new BsonString("w0"));
        BsonDocument ping = new BsonDocument("ping", new BsonInt32(1))
            .append("$db", new BsonString("admin"));
        s.getOutputStream().write(opMsg(41, 2, insert));
        s.getOutputStream().write(opMsg(42, 0, ping));
        InputStream in = s.getInputStream();
        ByteBuffer head = ByteBuffer.wrap(in.readNBytes(16)).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(42, head.getInt(8), "the first reply answers the ping");
        in.readNBytes(head.getInt(0) - 16);
      }
      awaitCount(c, 501);
      assertEquals(501, c.countDocuments());
    }
  }

  private static void awaitCount(MongoCollection<Document> c, long n) throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (c.countDocuments() < n && System.nanoTime() < deadline) Thread.sleep(20);
  }

  private static byte[] opMsg(int requestId, int flags, BsonDocument body) {
    ByteBuffer raw = new RawBsonDocument(body, new BsonDocumentCodec()).getByteBuffer().asNIO();
    byte[] bson = new byte[raw.remaining()];
    raw.get(bson);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(ByteBuffer.allocate(21).order(ByteOrder.LITTLE_ENDIAN)
        .putInt(21 + bson.length).putInt(requestId).putInt(0).putInt(OP_MSG).putInt(flags)
        .put((byte) 0).array());
    out.writeBytes(bson);
    return out.toByteArray();
  }
}
