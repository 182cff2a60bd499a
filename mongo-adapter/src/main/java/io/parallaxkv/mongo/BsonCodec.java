package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.wire.bson.BsonDecoder;
import de.bwaldvogel.mongo.wire.bson.BsonEncoder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

/**
 * Documents as stored: standard BSON (any BSON library reads it), written and read by the codec
 * the server uses on the wire.
 */
final class BsonCodec {
  /**
   * A thread's encoding buffer, reused: a fresh buffer per document grew by doubling from 256
   * bytes and was, in a YCSB run, most of the server's allocation.
   */
  private static final ThreadLocal<ByteBuf> BUFFER = ThreadLocal.withInitial(BsonCodec::newBuffer);
  /** A buffer grown past this by one large document is not kept for the next. */
  private static final int KEPT_CAPACITY = 1 << 20;

  private BsonCodec() {}

  static byte[] encode(Document document) {
    ByteBuf buf = encoded(document);
    byte[] out = new byte[buf.readableBytes()];
    buf.readBytes(out);
    release(buf);
    return out;
  }

  /** The length of the document's BSON. */
  static int size(Document document) {
    ByteBuf buf = encoded(document);
    int size = buf.readableBytes();
    release(buf);
    return size;
  }

  static Document decode(byte[] bson) {
    return BsonDecoder.decodeBson(Unpooled.wrappedBuffer(bson));
  }

  private static ByteBuf encoded(Document document) {
    ByteBuf buf = BUFFER.get().clear();
    BsonEncoder.encodeDocument(document, buf);
    return buf;
  }

  private static void release(ByteBuf buf) {
    if (buf.capacity() > KEPT_CAPACITY) BUFFER.set(newBuffer());
  }

  private static ByteBuf newBuffer() {
    return Unpooled.buffer(4096);
  }
}
