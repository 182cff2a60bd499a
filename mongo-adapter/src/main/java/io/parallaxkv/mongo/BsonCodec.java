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
  private BsonCodec() {}

  static byte[] encode(Document document) {
    ByteBuf buf = Unpooled.buffer();
    try {
      BsonEncoder.encodeDocument(document, buf);
      byte[] out = new byte[buf.readableBytes()];
      buf.readBytes(out);
      return out;
    } finally {
      buf.release();
    }
  }

  static Document decode(byte[] bson) {
    return BsonDecoder.decodeBson(Unpooled.wrappedBuffer(bson));
  }
}
