package io.parallaxkv.replication;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
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
import io.netty.handler.flush.FlushConsolidationHandler;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** {@link Transport} over TCP: length-prefixed {@link Frame}s, requests matched by id. */
public final class NettyTransport implements Transport {
  private static final Logger LOG = LoggerFactory.getLogger(NettyTransport.class);
  private final EventLoopGroup group = new NioEventLoopGroup(2);

  /*
   * Flushes consolidated: answers written while a read is in progress leave in one system call
   * when the read completes, not one each.
   */
  private static void pipeline(SocketChannel ch, SimpleChannelInboundHandler<ByteBuf> handler) {
    ch.pipeline().addLast(new FlushConsolidationHandler(FlushConsolidationHandler.DEFAULT_EXPLICIT_FLUSH_AFTER_FLUSHES, true),
        new LengthFieldBasedFrameDecoder(Frame.MAX_SIZE, 0, 4, 0, 4), handler);
  }

  /** Frames up to this size are copied into one buffer; larger ones (shipped segments) are wrapped. */
  private static final int COPY_MAX = 64 << 10;

  /** f with its length in front (what the decoder strips): its parts wrapped, or small ones copied into one buffer. */
  private static ByteBuf encode(ByteBufAllocator alloc, Frame f) {
    ByteBuffer[] parts = f.encode();
    int len = 0;
    for (ByteBuffer p : parts) len += p.remaining();
    ByteBuf out = alloc.ioBuffer(4 + (len <= COPY_MAX ? len : 0)).writeInt(len);
    if (len > COPY_MAX) return Unpooled.wrappedBuffer(parts.length + 1, prepend(out, parts));
    for (ByteBuffer p : parts) out.writeBytes(p);
    return out;
  }

  private static ByteBuf[] prepend(ByteBuf first, ByteBuffer[] rest) {
    ByteBuf[] all = new ByteBuf[rest.length + 1];
    all[0] = first;
    for (int i = 0; i < rest.length; i++) all[i + 1] = Unpooled.wrappedBuffer(rest[i]);
    return all;
  }

  /**
   * The frames to write on one channel, from any thread. The first frame queued after a drain
   * schedules the next drain on the channel's event loop, which writes every queued frame and
   * flushes once: frames sent at about the same time by many threads (a client's writers, the
   * answers to the writes one acknowledgement completes) cost one event-loop task and one system
   * call, not one each. Frames from one thread keep their order.
   */
  private static final class Outbox implements Runnable {
    private final Channel ch;
    private final Queue<Frame> queue = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean scheduled = new AtomicBoolean();

    Outbox(Channel ch) {
      this.ch = ch;
    }

    void send(Frame f) {
      queue.add(f);
      if (!scheduled.get() && scheduled.compareAndSet(false, true)) ch.eventLoop().execute(this);
    }

    @Override
    public void run() {
      scheduled.set(false); // before polling: a frame queued from here on schedules a drain of its own
      for (Frame f; (f = queue.poll()) != null; ) ch.write(encode(ch.alloc(), f), ch.voidPromise());
      ch.flush();
    }
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
            Outbox out = new Outbox(ch);
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
                  else if (ctx.channel().isActive()) out.send(resp.withId(req.id()));
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

  /** How often a connection fails the calls whose deadline passed. */
  private static final long SWEEP_MS = 50;

  private final class NettyConnection implements Connection {
    private final String host;
    private final int port;
    private final AtomicLong ids = new AtomicLong();
    private final Map<Long, Call> pending = new ConcurrentHashMap<>();
    /* Deadlines are checked by one periodic sweep, not a timer task per call. */
    private final ScheduledFuture<?> sweeper;
    /** The open channel's outbox (and through it the channel), or null before the first call. */
    private volatile Outbox outbox;
    private volatile boolean closed;

    private record Call(CompletableFuture<Frame> answer, long deadlineNanos) {}

    NettyConnection(String host, int port) {
      this.host = host;
      this.port = port;
      this.sweeper = group.scheduleAtFixedRate(this::sweep, SWEEP_MS, SWEEP_MS, TimeUnit.MILLISECONDS);
    }

    private void sweep() {
      long now = System.nanoTime();
      for (var e : pending.entrySet()) {
        if (now - e.getValue().deadlineNanos() >= 0 && pending.remove(e.getKey(), e.getValue())) {
          e.getValue().answer().completeExceptionally(new TimeoutException("no answer from " + host + ":" + port));
        }
      }
    }

    /** The outbox of the open channel, opening one if there is none. */
    private Outbox outbox() throws IOException {
      Outbox o = outbox;
      return o != null && o.ch.isActive() ? o : connect();
    }

    private synchronized Outbox connect() throws IOException {
      Outbox o = outbox;
      if (o != null && o.ch.isActive()) return o;
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
                  Call w = pending.remove(resp.id());
                  if (w != null) w.answer().complete(resp);
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
      outbox = new Outbox(f.channel());
      return outbox;
    }

    private void failAll(Throwable t) {
      for (Long id : pending.keySet()) {
        Call w = pending.remove(id);
        if (w != null) w.answer().completeExceptionally(t);
      }
    }

    @Override
    public CompletableFuture<Frame> call(Frame request, long timeoutMillis) {
      long id = ids.incrementAndGet();
      CompletableFuture<Frame> w = new CompletableFuture<>();
      try {
        if (Faults.callsCut()) throw new IOException("partitioned (fault injection)");
        Outbox o = outbox();
        pending.put(id, new Call(w, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis)));
        o.send(request.withId(id));
      } catch (IOException | RuntimeException e) {
        pending.remove(id);
        w.completeExceptionally(e);
      }
      return w;
    }

    @Override
    public void close() {
      closed = true;
      sweeper.cancel(false);
      Outbox o = outbox;
      if (o != null) o.ch.close();
      failAll(new IOException("connection closed"));
    }
  }
}
