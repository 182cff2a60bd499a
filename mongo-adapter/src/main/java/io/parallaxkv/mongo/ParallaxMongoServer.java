package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.MongoThreadFactory;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.wire.MongoExceptionHandler;
import de.bwaldvogel.mongo.wire.MongoWireMessageEncoder;
import de.bwaldvogel.mongo.wire.MongoWireProtocolHandler;
import de.bwaldvogel.mongo.wire.MongoWireReplyEncoder;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.ssl.SslContext;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A MongoDB-compatible server whose storage is a Parallax volume in {@code dbPath}.
 *
 * <pre>{@code
 * try (ParallaxMongoServer server = ParallaxMongoServer.start(Path.of("data"), 27017)) {
 *   // mongodb://127.0.0.1:27017
 * }
 * }</pre>
 *
 * With {@code auth}, every connection must authenticate (SCRAM-SHA-256) before it runs anything
 * but the handshake. Without it the server listens on the loopback interface only, unless
 * {@code insecureNoAuth} says the caller accepts that anyone who can reach the port can read and
 * write everything.
 *
 * <p>The Netty pipeline is the library's ({@code MongoServer}'s) with two additions: OP_MSG's
 * {@code moreToCome} for unacknowledged writes ({@link UnacknowledgedWrites}) and the
 * authentication check ({@link AuthenticatingHandler}); with TLS, Netty's SslHandler first.
 */
public final class ParallaxMongoServer implements AutoCloseable {
  private final ParallaxBackend backend;
  private final EventLoopGroup boss;
  private final EventLoopGroup workers;
  private final ChannelGroup clients;
  private final Channel listener;

  private ParallaxMongoServer(ParallaxBackend backend, EventLoopGroup boss, EventLoopGroup workers,
      ChannelGroup clients, Channel listener) {
    this.backend = backend;
    this.boss = boss;
    this.workers = workers;
    this.clients = clients;
    this.listener = listener;
  }

  /**
   * Starts a server without authentication on 127.0.0.1:{@code port} ({@code 0}: a free port, see
   * {@link #port()}).
   */
  public static ParallaxMongoServer start(Path dbPath, int port) {
    return start(dbPath, "127.0.0.1", port, false, false);
  }

  /**
   * Starts a server on {@code bindIp}:{@code port}.
   *
   * @param auth whether connections must authenticate
   * @throws IllegalArgumentException if {@code bindIp} is not a loopback address and neither
   *     {@code auth} nor {@code insecureNoAuth} is set
   */
  public static ParallaxMongoServer start(Path dbPath, String bindIp, int port, boolean auth,
      boolean insecureNoAuth) {
    return start(dbPath, bindIp, port, auth, insecureNoAuth, (Tls) null);
  }

  /**
   * TLS settings, as mongod's options name them.
   *
   * @param certificateKeyFile the server's certificate chain and PKCS#8 private key, in PEM
   *     ({@code --tlsCertificateKeyFile}; see {@link TlsCertificateKeyFile})
   * @param caFile null, or the PEM certificates of the authorities whose certificates clients
   *     must present ({@code --tlsCAFile}); a client without one, or with one they did not sign,
   *     fails the handshake
   * @param allowConnectionsWithoutCertificates with {@code caFile}: a client that presents no
   *     certificate is let in, one that presents a certificate must still present a valid one
   *     ({@code --tlsAllowConnectionsWithoutCertificates})
   */
  public record Tls(Path certificateKeyFile, Path caFile,
      boolean allowConnectionsWithoutCertificates) {
    public Tls {
      if (certificateKeyFile == null) {
        throw new IllegalArgumentException("TLS needs --tlsCertificateKeyFile");
      }
      if (caFile == null && allowConnectionsWithoutCertificates) {
        throw new IllegalArgumentException(
            "--tlsAllowConnectionsWithoutCertificates needs --tlsCAFile");
      }
    }
  }

  /**
   * Starts a server on {@code bindIp}:{@code port} that speaks TLS only, with the certificate
   * and key in {@code tlsCertificateKeyFile} (PEM; see {@link TlsCertificateKeyFile}), or
   * plaintext only when it is null.
   *
   * @param auth whether connections must authenticate
   * @throws IllegalArgumentException if {@code bindIp} is not a loopback address and neither
   *     {@code auth} nor {@code insecureNoAuth} is set, or the TLS file is not usable
   */
  public static ParallaxMongoServer start(Path dbPath, String bindIp, int port, boolean auth,
      boolean insecureNoAuth, Path tlsCertificateKeyFile) {
    return start(dbPath, bindIp, port, auth, insecureNoAuth,
        tlsCertificateKeyFile == null ? null : new Tls(tlsCertificateKeyFile, null, false));
  }

  /**
   * Starts a server on {@code bindIp}:{@code port} that speaks TLS only, as {@code tls} says
   * (verifying client certificates when it names a CA file), or plaintext only when it is null.
   *
   * @param auth whether connections must authenticate
   * @throws IllegalArgumentException if {@code bindIp} is not a loopback address and neither
   *     {@code auth} nor {@code insecureNoAuth} is set, or a TLS file is not usable
   */
  public static ParallaxMongoServer start(Path dbPath, String bindIp, int port, boolean auth,
      boolean insecureNoAuth, Tls tlsSettings) {
    InetAddress ip;
    try {
      ip = InetAddress.getByName(bindIp);
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("cannot resolve --bind_ip " + bindIp, e);
    }
    if (!ip.isLoopbackAddress() && !auth && !insecureNoAuth) {
      throw new IllegalArgumentException("refusing to listen on " + bindIp + " without "
          + "authentication: anyone who reaches it could read and write every database. "
          + "Pass --auth (and create a user), bind to 127.0.0.1, or pass --insecure-no-auth "
          + "to accept that.");
    }
    SslContext tls = tlsSettings == null ? null : TlsCertificateKeyFile.serverContext(
        tlsSettings.certificateKeyFile(), tlsSettings.caFile(),
        tlsSettings.allowConnectionsWithoutCertificates());
    ParallaxBackend backend = new ParallaxBackend(dbPath, auth);
    EventLoopGroup boss = new NioEventLoopGroup(1, new MongoThreadFactory("mongo-server-boss"));
    EventLoopGroup workers = new NioEventLoopGroup(0, new MongoThreadFactory("mongo-server-worker"));
    ChannelGroup clients = new DefaultChannelGroup("mongodb-channels", workers.next());
    Authenticator authenticator = backend.authenticator();
    try {
      Channel listener = new ServerBootstrap()
          .group(boss, workers)
          .channel(NioServerSocketChannel.class)
          .option(ChannelOption.SO_BACKLOG, 100)
          .localAddress(new InetSocketAddress(ip, port))
          .childOption(ChannelOption.TCP_NODELAY, Boolean.TRUE)
          .childHandler(new ChannelInitializer<SocketChannel>() {
            @Override
            protected void initChannel(SocketChannel ch) {
              // A client that does not speak TLS, or lacks a certificate the CA file asks for,
              // fails the handshake and is disconnected.
              if (tls != null) ch.pipeline().addLast(tls.newHandler(ch.alloc()));
              // Outbound messages pass Replies before the encoders turn them into bytes.
              ch.pipeline().addLast(new MongoWireReplyEncoder(), new MongoWireMessageEncoder(),
                  new UnacknowledgedWrites.Frames(), new MongoWireProtocolHandler(),
                  new UnacknowledgedWrites.Replies(),
                  new AuthenticatingHandler(backend, clients, authenticator),
                  new MongoExceptionHandler());
            }
          })
          .bind().syncUninterruptibly().channel();
      return new ParallaxMongoServer(backend, boss, workers, clients, listener);
    } catch (RuntimeException e) {
      shutdown(boss, workers);
      backend.close();
      throw e;
    }
  }

  /**
   * Creates a user of database {@code db} with the {@code root} role if it does not exist (as the
   * {@code createUser} command would); false if it exists.
   */
  public boolean createUser(String db, String user, String password) {
    return backend.authenticator().users().create(db, user, password,
        Roles.parse(db, List.of(new Document("role", "root").append("db", "admin"))));
  }

  ParallaxBackend backend() {
    return backend;
  }

  /** The port the server listens on. */
  public int port() {
    return ((InetSocketAddress) listener.localAddress()).getPort();
  }

  /** A connection string for the drivers. */
  public String connectionString() {
    InetSocketAddress address = (InetSocketAddress) listener.localAddress();
    return "mongodb://" + address.getAddress().getHostAddress() + ":" + address.getPort();
  }

  /** Closes client connections, then the volume (which makes every write durable). */
  @Override
  public void close() {
    listener.close().syncUninterruptibly();
    clients.close().syncUninterruptibly();
    shutdown(boss, workers);
    backend.close();
  }

  private static void shutdown(EventLoopGroup boss, EventLoopGroup workers) {
    boss.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
    workers.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
  }
}
