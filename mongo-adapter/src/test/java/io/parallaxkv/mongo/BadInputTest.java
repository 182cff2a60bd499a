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
 * closed connection, never a hang or a dead server: the driver works afterwards.
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
