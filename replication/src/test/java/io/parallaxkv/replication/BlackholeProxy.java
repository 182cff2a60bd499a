package io.parallaxkv.replication;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

/**
 * A TCP proxy on the loopback interface in front of one server's ZooKeeper, which a test turns
 * into a black hole: connections stay open and new ones are accepted, but from then on no byte
 * passes either way, as when the network between them drops every packet. (Closing the
 * connections instead would tell the client at once; a black hole leaves it to its timeouts.)
 */
final class BlackholeProxy implements Closeable {
  private final ServerSocket listener;
  private final int targetPort;
  private final List<Socket> sockets = new ArrayList<>();
  private volatile boolean blackhole;
  private volatile boolean closed;

  BlackholeProxy(int targetPort) throws IOException {
    this.targetPort = targetPort;
    listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(this::accept, "zk-proxy-accept");
    t.setDaemon(true);
    t.start();
  }

  String connectString() {
    return "127.0.0.1:" + listener.getLocalPort();
  }

  /** From now on, nothing passes. */
  void blackhole() {
    blackhole = true;
  }

  private void accept() {
    while (!closed) {
      try {
        Socket client = listener.accept();
        Socket server = new Socket(InetAddress.getLoopbackAddress(), targetPort);
        synchronized (sockets) {
          sockets.add(client);
          sockets.add(server);
        }
        pump(client, server);
        pump(server, client);
      } catch (IOException e) {
        if (!closed) throw new IllegalStateException("ZooKeeper proxy", e);
      }
    }
  }

  /** Copies from's bytes to to, or drops them while the proxy is a black hole. */
  private void pump(Socket from, Socket to) {
    Thread t = new Thread(() -> {
      byte[] buf = new byte[8192];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        for (int n; (n = in.read(buf)) >= 0;) {
          if (!blackhole) out.write(buf, 0, n);
        }
      } catch (IOException e) {
        // either side closed: this direction ends
      }
    }, "zk-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  @Override
  public void close() throws IOException {
    closed = true;
    listener.close();
    synchronized (sockets) {
      for (Socket s : sockets) s.close();
    }
  }
}
