package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.wire.MongoDatabaseHandler;
import de.bwaldvogel.mongo.wire.message.ClientRequest;
import de.bwaldvogel.mongo.wire.message.MessageHeader;
import de.bwaldvogel.mongo.wire.message.MongoMessage;
import de.bwaldvogel.mongo.wire.message.MongoQuery;
import de.bwaldvogel.mongo.wire.message.MongoReply;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.group.ChannelGroup;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The library's request handler behind {@link Authenticator#refusal}: every request — OP_MSG, or
 * a legacy OP_QUERY command or query — is checked here, in one place, before the library runs
 * it; a refused one gets MongoDB's error 13 (Unauthorized) in the reply form of its request.
 */
final class AuthenticatingHandler extends MongoDatabaseHandler {
  private final Authenticator authenticator;
  private final AtomicInteger replyIds = new AtomicInteger(Integer.MIN_VALUE / 2);

  AuthenticatingHandler(MongoBackend backend, ChannelGroup channels, Authenticator authenticator) {
    super(backend, channels);
    this.authenticator = authenticator;
  }

  @Override
  protected void channelRead0(ChannelHandlerContext ctx, ClientRequest request) {
    Document body = body(request);
    String command = body.isEmpty() ? "" : body.keySet().iterator().next();
    String refusal = authenticator.refusal(ctx.channel(), request.getDatabaseName(), command, body);
    if (refusal == null) {
      super.channelRead0(ctx, request);
      return;
    }
    Document error = new Document("ok", 0).append("errmsg", refusal).append("code", 13)
        .append("codeName", "Unauthorized");
    MessageHeader header = new MessageHeader(replyIds.incrementAndGet(),
        request.getHeader().getRequestID());
    if (request instanceof MongoQuery) {
      ctx.channel().writeAndFlush(new MongoReply(header, error));
    } else {
      ctx.channel().writeAndFlush(new MongoMessage(ctx.channel(), header, error));
    }
  }

  /**
   * The command a request runs, whose first key names it; a legacy query on a collection is a
   * "find".
   */
  private static Document body(ClientRequest request) {
    if (request instanceof MongoMessage message) return message.getDocument();
    if (request instanceof MongoQuery query && query.getCollectionName().startsWith("$cmd")) {
      Document body = query.getQuery();
      return body.get("$query") instanceof Document wrapped ? wrapped : body;
    }
    return new Document("find", request instanceof MongoQuery q ? q.getCollectionName() : "");
  }
}
