package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.mongodb.client.MongoCollection;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.bson.BsonDocument;
import org.bson.BsonInt32;
import org.bson.BsonString;
import org.bson.RawBsonDocument;
import org.bson.codecs.BsonDocumentCodec;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Malformed, oversized and invalid-BSON messages over a raw socket get an error reply or a
 * closed connection, never a hang or a dead server: the driver works afterwards. Mutated valid
 * messages (a seeded fuzz of the wire decoder) likewise.
 */
class BadInputTest {
  private static final int OP_MSG = 2013;

  @TempDir Path dir;

  @Test
  void garbageDoesNotHurtOtherClients() throws Exception {
    Random random = new Random(42);
    byte[] noise = new byte[4096];
    random.nextBytes(noise);
    Map<String, byte[]> messages = new LinkedHashMap<>();
    messages.put("random bytes", noise);
    messages.put("1 GB length", header(1_000_000_000, OP_MSG));
    messages.put("negative length", header(-100, OP_MSG));
    messages.put("length below the header", header(5, OP_MSG));
    messages.put("unknown opcode", frame(9999, new byte[16]));
    messages.put("BSON longer than the message", opMsg(new byte[] {(byte) 0xe8, 3, 0, 0, 2, 'a', 0}));
    messages.put("unknown BSON type", opMsg(new byte[] {12, 0, 0, 0, 0x42, 'a', 0, 1, 2, 3, 4, 0}));
    messages.put("unterminated BSON", opMsg(new byte[] {8, 0, 0, 0, 0x10, 'a', 0, 1}));
    messages.put("deeply nested BSON", opMsg(nested(20_000)));
    messages.put("command of wrong types", opMsg(bson(new BsonDocument("insert", new BsonInt32(5))
        .append("documents", new BsonString("x")).append("$db", new BsonString("app")))));
    messages.put("unknown command", opMsg(bson(new BsonDocument("noSuchCommand", new BsonInt32(1))
        .append("$db", new BsonString("app")))));

    try (MongoFixture f = new MongoFixture(dir)) {
      MongoCollection<Document> c = f.client.getDatabase("app").getCollection("c");
      c.insertOne(new Document("_id", 0));
      for (Map.Entry<String, byte[]> m : messages.entrySet()) {
        String outcome = send(f.server.port(), m.getValue());
        assertTrue(outcome.equals("closed") || outcome.startsWith("reply"),
            m.getKey() + ": " + outcome);
        c.insertOne(new Document("_id", m.getKey()));
      }
      assertEquals(messages.size() + 1, c.countDocuments(), "the server kept serving");
    }
  }

  /**
   * A fuzz of the wire decoder: valid messages (an OP_MSG insert and find, a legacy OP_QUERY
   * isMaster) with 1 to 4 random bytes changed after the length, each on its own connection and
   * followed by a valid ping (a changed flag may mean moreToCome, which gets no reply): every one
   * gets a reply or a closed connection, and afterwards the server serves and its indexes are
   * consistent with its documents.
   */
  @Test
  void mutatedMessagesGetAReplyOrAClose() throws Exception {
    BsonDocument document = new BsonDocument("_id", new BsonInt32(1))
        .append("a", new BsonString("fuzz")).append("n", new BsonInt32(7))
        .append("tags", new org.bson.BsonArray(List.of(new BsonString("x"), new BsonInt32(2))));
    List<byte[]> valid = List.of(
        opMsg(bson(new BsonDocument("insert", new BsonString("c"))
            .append("documents", new org.bson.BsonArray(List.of(document)))
            .append("$db", new BsonString("app")))),
        opMsg(bson(new BsonDocument("find", new BsonString("c"))
            .append("filter", new BsonDocument("a", new BsonString("fuzz")))
            .append("$db", new BsonString("app")))),
        opQuery("admin.$cmd", bson(new BsonDocument("isMaster", new BsonInt32(1)))));
    byte[] ping = opMsg(bson(new BsonDocument("ping", new BsonInt32(1))
        .append("$db", new BsonString("admin"))));
    Random random = new Random(7);
    try (MongoFixture f = new MongoFixture(dir)) {
      MongoCollection<Document> c = f.client.getDatabase("app").getCollection("c");
      c.createIndex(new Document("a", 1));
      c.createIndex(new Document("tags", 1).append("n", -1));
      for (int i = 0; i < 300; i++) {
        byte[] message = valid.get(random.nextInt(valid.size())).clone();
        for (int flips = 1 + random.nextInt(4); flips > 0; flips--) {
          message[4 + random.nextInt(message.length - 4)] = (byte) random.nextInt(256);
        }
        byte[] both = new byte[message.length + ping.length];
        System.arraycopy(message, 0, both, 0, message.length);
        System.arraycopy(ping, 0, both, message.length, ping.length);
        String outcome = send(f.server.port(), both);
        assertTrue(outcome.equals("closed") || outcome.startsWith("reply"),
            "mutation " + i + ": " + outcome);
      }
      c.insertOne(new Document("_id", "after"));
      assertEquals("after", c.find(new Document("_id", "after")).first().get("_id"));
      Document valid1 = f.client.getDatabase("app").runCommand(new Document("validate", "c"));
      assertEquals(Boolean.TRUE, valid1.getBoolean("valid"), valid1.toJson());
    }
  }

  /** A legacy OP_QUERY of {@code namespace} with {@code bson} as its query. */
  private static byte[] opQuery(String namespace, byte[] bson) {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.writeBytes(new byte[4]); // flags
    body.writeBytes(namespace.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    body.write(0);
    body.writeBytes(new byte[] {0, 0, 0, 0, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff});
    body.writeBytes(bson);
    return frame(2004, body.toByteArray());
  }

  /** Sends {@code message}; "closed" if the server closed the connection, else its reply. */
  private static String send(int port, byte[] message) throws IOException {
    try (Socket s = new Socket("127.0.0.1", port)) {
      s.setSoTimeout(10_000);
      try {
        s.getOutputStream().write(message);
        s.getOutputStream().flush();
      } catch (IOException e) {
        return "closed"; // closed while we were still writing
      }
      InputStream in = s.getInputStream();
      byte[] head = in.readNBytes(16);
      if (head.length < 16) return "closed";
      int length = ByteBuffer.wrap(head).order(ByteOrder.LITTLE_ENDIAN).getInt();
      byte[] rest = in.readNBytes(length - 16);
      return "reply of " + (16 + rest.length) + " bytes";
    } catch (SocketTimeoutException e) {
      return "no reply and not closed in 10 s";
    } catch (IOException e) {
      return "closed"; // reset
    }
  }

  private static byte[] header(int length, int opCode) {
    return ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN)
        .putInt(length).putInt(1).putInt(0).putInt(opCode).array();
  }

  private static byte[] frame(int opCode, byte[] body) {
    ByteBuffer b = ByteBuffer.allocate(16 + body.length).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(16 + body.length).putInt(1).putInt(0).putInt(opCode).put(body);
    return b.array();
  }

  /** An OP_MSG with flags 0 and one body section holding {@code bson}. */
  private static byte[] opMsg(byte[] bson) {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.writeBytes(new byte[] {0, 0, 0, 0, 0}); // flag bits, section kind 0
    body.writeBytes(bson);
    return frame(OP_MSG, body.toByteArray());
  }

  private static byte[] bson(BsonDocument d) {
    ByteBuffer b = new RawBsonDocument(d, new BsonDocumentCodec()).getByteBuffer().asNIO();
    byte[] out = new byte[b.remaining()];
    b.get(out);
    return out;
  }

  /** {a: {a: {a: ... }}} nested {@code depth} times, as raw BSON. */
  private static byte[] nested(int depth) {
    byte[] doc = {5, 0, 0, 0, 0};
    for (int i = 0; i < depth; i++) {
      int len = 4 + 1 + 2 + doc.length + 1;
      ByteBuffer b = ByteBuffer.allocate(len).order(ByteOrder.LITTLE_ENDIAN);
      b.putInt(len).put((byte) 3).put((byte) 'a').put((byte) 0).put(doc).put((byte) 0);
      doc = b.array();
    }
    return doc;
  }
}
