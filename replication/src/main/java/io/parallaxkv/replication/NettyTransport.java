package io.parallaxkv.replication;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
import io.netty.handler.flush.FlushConsolidationHandler;
import java.io.Closeable;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** {@link Transport} over TCP: length-prefixed {@link Frame}s, requests matched by id. */
public final class NettyTransport implements Transport {
  private static final Logger LOG = LoggerFactory.getLogger(NettyTransport.class);
  private final EventLoopGroup group = new NioEventLoopGroup(2);

  /*
   * Flushes consolidated: the answers a primary sends as one acknowledgement completes several
   * writes, and a client's requests from many threads, leave in one system call per event-loop
   * turn, not one each.
   */
  private static void pipeline(SocketChannel ch, SimpleChannelInboundHandler<ByteBuf> handler) {
    ch.pipeline().addLast(new FlushConsolidationHandler(FlushConsolidationHandler.DEFAULT_EXPLICIT_FLUSH_AFTER_FLUSHES, true),
        new LengthFieldBasedFrameDecoder(Frame.MAX_SIZE, 0, 4, 0, 4),
        new LengthFieldPrepender(4), handler);
  }

  /** Writes f's parts as they are (a gathering write): a and b are not copied. */
  private static void send(Channel ch, Frame f) {
    ch.writeAndFlush(Unpooled.wrappedBuffer(f.encode()));
  }

  /** Decodes from the received bytes in place; decode copies out the fields it keeps. */
  private static Frame read(ByteBuf buf) {
    return Frame.decode(buf.nioBuffer());
  }

  @Override
  public Closeable listen(String host, int port, Handler handler) throws InterruptedException {
    Channel server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
        .option(ChannelOption.SO_REUSEADDR, true)
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childHandler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            pipeline(ch, new SimpleChannelInboundHandler<ByteBuf>() {
              @Override
              protected void channelRead0(ChannelHandlerContext ctx, ByteBuf msg) {
                if (Faults.connectionsCut()) {
                  ctx.close();
                  return;
                }
                Frame req;
                try {
                  req = read(msg);
                } catch (IllegalArgumentException e) {
                  LOG.warn("malformed message from {}: {}", ctx.channel().remoteAddress(), e.getMessage());
                  ctx.close(); // the stream cannot be trusted past it
                  return;
                }
                CompletableFuture<Frame> answer;
                try {
                  answer = handler.handle(req);
                } catch (RuntimeException e) {
                  answer = CompletableFuture.completedFuture(req.fail(Frame.Status.ERROR, e.toString()));
                }
                answer.whenComplete((resp, err) -> {
                  if (err != null) ctx.close();
                  else if (ctx.channel().isActive()) send(ctx.channel(), resp.withId(req.id()));
                });
              }

              @Override
              public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                ctx.close();
              }
            });
          }
        }).bind(host, port).sync().channel();
    return () -> server.close().syncUninterruptibly();
  }

  @Override
  public Connection connect(String host, int port) {
    return new NettyConnection(host, port);
  }

  @Override
  public void close() throws IOException {
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
  }

  private final class NettyConnection implements Connection {
    private final String host;
    private final int port;
    private final AtomicLong ids = new AtomicLong();
    private final Map<Long, CompletableFuture<Frame>> pending = new ConcurrentHashMap<>();
    private volatile Channel channel;
    private volatile boolean closed;

    NettyConnection(String host, int port) {
      this.host = host;
      this.port = port;
    }

    private synchronized Channel channel() throws IOException {
      Channel c = channel;
      if (c != null && c.isActive()) return c;
      if (closed) throw new IOException("connection closed");
      ChannelFuture f = new Bootstrap().group(group).channel(NioSocketChannel.class)
          .option(ChannelOption.TCP_NODELAY, true)
          .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 1000)
          .handler(new ChannelInitializer<SocketChannel>() {
            @Override
            protected void initChannel(SocketChannel ch) {
              pipeline(ch, new SimpleChannelInboundHandler<ByteBuf>() {
                @Override
                protected void channelRead0(ChannelHandlerContext ctx, ByteBuf msg) {
                  Frame resp;
                  try {
                    resp = read(msg);
                  } catch (IllegalArgumentException e) {
                    ctx.close();
                    return;
                  }
                  CompletableFuture<Frame> w = pending.remove(resp.id());
                  if (w != null) w.complete(resp);
                }

                @Override
                public void channelInactive(ChannelHandlerContext ctx) {
                  failAll(new IOException("connection to " + host + ":" + port + " lost"));
                }

                @Override
                public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                  ctx.close();
                }
              });
            }
          }).connect(host, port);
      if (!f.awaitUninterruptibly(2000) || !f.isSuccess()) {
        f.channel().close();
        throw new IOException("cannot connect to " + host + ":" + port, f.cause());
      }
      channel = f.channel();
      return channel;
    }

    private void failAll(Throwable t) {
      for (Long id : pending.keySet()) {
        CompletableFuture<Frame> w = pending.remove(id);
        if (w != null) w.completeExceptionally(t);
      }
    }

    @Override
    public CompletableFuture<Frame> call(Frame request, long timeoutMillis) {
      long id = ids.incrementAndGet();
      CompletableFuture<Frame> w = new CompletableFuture<>();
      try {
        if (Faults.callsCut()) throw new IOException("partitioned (fault injection)");
        Channel c = channel();
        pending.put(id, w);
        send(c, request.withId(id));
      } catch (IOException | RuntimeException e) {
        pending.remove(id);
        w.completeExceptionally(e);
        return w;
      }
      return w.orTimeout(timeoutMillis, TimeUnit.MILLISECONDS)
          .whenComplete((r, e) -> pending.remove(id));
    }

    @Override
    public void close() {
      closed = true;
      Channel c = channel;
      if (c != null) c.close();
      failAll(new IOException("connection closed"));
    }
  }
}
