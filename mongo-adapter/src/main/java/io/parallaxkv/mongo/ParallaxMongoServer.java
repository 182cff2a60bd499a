package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.MongoServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;

/**
 * A MongoDB-compatible server whose storage is a Parallax volume in {@code dbPath}.
 *
 * <pre>{@code
 * try (ParallaxMongoServer server = ParallaxMongoServer.start(Path.of("data"), 27017)) {
 *   // mongodb://127.0.0.1:27017
 * }
 * }</pre>
 *
 * It has no authentication yet, so it listens on the loopback interface unless told otherwise,
 * and refuses any other address unless {@code insecureNoAuth} says the caller accepts that
 * anyone who can reach the port can read and write everything.
 */
public final class ParallaxMongoServer implements AutoCloseable {
  private final MongoServer server;
  private final InetSocketAddress address;

  private ParallaxMongoServer(MongoServer server, InetSocketAddress address) {
    this.server = server;
    this.address = address;
  }

  /** Starts a server on 127.0.0.1:{@code port} ({@code 0}: a free port, see {@link #port()}). */
  public static ParallaxMongoServer start(Path dbPath, int port) {
    return start(dbPath, "127.0.0.1", port, false);
  }

  /**
   * Starts a server on {@code bindIp}:{@code port}.
   *
   * @throws IllegalArgumentException if {@code bindIp} is not a loopback address and
   *     {@code insecureNoAuth} is false
   */
  public static ParallaxMongoServer start(Path dbPath, String bindIp, int port,
      boolean insecureNoAuth) {
    InetAddress ip;
    try {
      ip = InetAddress.getByName(bindIp);
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("cannot resolve --bind_ip " + bindIp, e);
    }
    if (!ip.isLoopbackAddress() && !insecureNoAuth) {
      throw new IllegalArgumentException("refusing to listen on " + bindIp + ": this server has no "
          + "authentication yet, so anyone who reaches it could read and write every database. "
          + "Bind to 127.0.0.1, or pass --insecure-no-auth to accept that.");
    }
    ParallaxBackend backend = new ParallaxBackend(dbPath);
    MongoServer server = new MongoServer(backend);
    try {
      server.bind(new InetSocketAddress(ip, port));
    } catch (RuntimeException e) {
      backend.close();
      throw e;
    }
    return new ParallaxMongoServer(server, server.getLocalAddress());
  }

  /** The port the server listens on. */
  public int port() {
    return address.getPort();
  }

  /** A connection string for the drivers. */
  public String connectionString() {
    return "mongodb://" + address.getAddress().getHostAddress() + ":" + address.getPort();
  }

  /** Closes client connections, then the volume (which makes every write durable). */
  @Override
  public void close() {
    server.shutdownNow();
  }
}
