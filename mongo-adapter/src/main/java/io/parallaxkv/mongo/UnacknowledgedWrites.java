package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.wire.MongoWireProtocolHandler;
import de.bwaldvogel.mongo.wire.message.MongoMessage;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.util.AttributeKey;
import java.nio.ByteOrder;
import java.util.HashSet;
import java.util.Set;

/**
 * OP_MSG's {@code moreToCome} flag on requests: the client expects no reply, which is how the
 * drivers send unacknowledged ({@code w:0}) writes. The protocol library refuses the flag (it
 * closes the connection), so {@link Frames} notes the request and clears the flag before the
 * library decodes the message, and {@link Replies} drops the reply the library then produces —
 * errors included, as MongoDB does for {@code w:0}.
 *
 * <p>Both handlers run on the channel's event loop, the thread that also runs the command, so
 * the set of pending request ids needs no lock.
 */
final class UnacknowledgedWrites {
  private static final int OP_MSG = 2013;
  private static final int MORE_TO_COME = 1 << 1;
  /** Header: length, requestID, responseTo, opCode; then OP_MSG's flagBits. */
  private static final int FLAGS_OFFSET = 16;
  private static final AttributeKey<Set<Integer>> SILENT =
      AttributeKey.valueOf("parallax.moreToCome");

  private UnacknowledgedWrites() {}

  /**
   * Cuts the byte stream into messages (refusing one larger than the library's
   * {@code maxMessageSizeBytes} or with a negative length by closing the connection) and clears
   * {@code moreToCome} on OP_MSG requests, remembering their request id.
   */
  static final class Frames extends LengthFieldBasedFrameDecoder {
    Frames() {
      super(ByteOrder.LITTLE_ENDIAN, MongoWireProtocolHandler.MAX_MESSAGE_SIZE_BYTES, 0, 4, -4, 0,
          true);
    }

    @Override
    protected Object decode(ChannelHandlerContext ctx, ByteBuf in) throws Exception {
      Object decoded = super.decode(ctx, in);
      if (decoded instanceof ByteBuf frame && frame.readableBytes() >= FLAGS_OFFSET + 4) {
        int start = frame.readerIndex();
        int flags = frame.getIntLE(start + FLAGS_OFFSET);
        if (frame.getIntLE(start + 12) == OP_MSG && (flags & MORE_TO_COME) != 0) {
          frame.setIntLE(start + FLAGS_OFFSET, flags & ~MORE_TO_COME);
          silent(ctx).add(frame.getIntLE(start + 4));
        }
      }
      return decoded;
    }
  }

  /** Drops the replies to requests that had {@code moreToCome}. */
  static final class Replies extends ChannelOutboundHandlerAdapter {
    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise)
        throws Exception {
      if (msg instanceof MongoMessage reply
          && silent(ctx).remove(reply.getHeader().getResponseTo())) {
        promise.setSuccess();
        return;
      }
      super.write(ctx, msg, promise);
    }
  }

  private static Set<Integer> silent(ChannelHandlerContext ctx) {
    Set<Integer> ids = ctx.channel().attr(SILENT).get();
    if (ids == null) {
      ids = new HashSet<>();
      ctx.channel().attr(SILENT).set(ids);
    }
    return ids;
  }
}
