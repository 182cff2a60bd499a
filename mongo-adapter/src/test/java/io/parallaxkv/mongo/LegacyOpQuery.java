package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.bson.BsonDocument;
import org.bson.RawBsonDocument;
import org.bson.codecs.BsonDocumentCodec;

/** The legacy OP_QUERY on a raw socket, as drivers before OP_MSG sent it, and its OP_REPLY. */
final class LegacyOpQuery {
  private static final int OP_REPLY = 1;
  private static final int OP_QUERY = 2004;
  private static final int REQUEST_ID = 7;

  private LegacyOpQuery() {}

  /** An OP_REPLY: its cursor id and documents. */
  record Reply(long cursorId, List<BsonDocument> documents) {}

  /** Sends an OP_QUERY on {@code namespace} and reads the OP_REPLY to it. */
  static Reply send(Socket socket, String namespace, BsonDocument query, int skip,
      int numberToReturn) throws Exception {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.writeBytes(new byte[4]); // flags
    body.writeBytes(namespace.getBytes(StandardCharsets.UTF_8));
    body.write(0);
    body.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putInt(skip)
        .putInt(numberToReturn).array());
    ByteBuffer raw = new RawBsonDocument(query, new BsonDocumentCodec()).getByteBuffer().asNIO();
    byte[] bson = new byte[raw.remaining()];
    raw.get(bson);
    body.writeBytes(bson);
    byte[] payload = body.toByteArray();
    ByteBuffer message = ByteBuffer.allocate(16 + payload.length).order(ByteOrder.LITTLE_ENDIAN);
    message.putInt(16 + payload.length).putInt(REQUEST_ID).putInt(0).putInt(OP_QUERY).put(payload);
    socket.getOutputStream().write(message.array());
    InputStream in = socket.getInputStream();
    ByteBuffer head = ByteBuffer.wrap(in.readNBytes(16)).order(ByteOrder.LITTLE_ENDIAN);
    int length = head.getInt();
    assertEquals(REQUEST_ID, head.getInt(8), "a reply to our request");
    assertEquals(OP_REPLY, head.getInt(12), "OP_REPLY");
    ByteBuffer rest = ByteBuffer.wrap(in.readNBytes(length - 16)).order(ByteOrder.LITTLE_ENDIAN);
    rest.getInt(); // responseFlags
    long cursorId = rest.getLong();
    rest.getInt(); // startingFrom
    int returned = rest.getInt();
    List<BsonDocument> documents = new ArrayList<>();
    for (int i = 0; i < returned; i++) {
      byte[] document = new byte[rest.getInt(rest.position())];
      rest.get(document);
      documents.add(new RawBsonDocument(document));
    }
    return new Reply(cursorId, documents);
  }
}
