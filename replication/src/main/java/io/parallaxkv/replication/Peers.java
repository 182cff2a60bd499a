package io.parallaxkv.replication;

import java.io.Closeable;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** One connection per peer server ({@code host:port}), made on first use. */
final class Peers implements Closeable {
  private final Transport transport;
  private final Map<String, Transport.Connection> conns = new ConcurrentHashMap<>();

  Peers(Transport transport) {
    this.transport = transport;
  }

  Transport.Connection get(String server) {
    return conns.computeIfAbsent(server, s -> {
      int colon = s.lastIndexOf(':');
      return transport.connect(s.substring(0, colon), Integer.parseInt(s.substring(colon + 1)));
    });
  }

  @Override
  public void close() {
    conns.values().forEach(Transport.Connection::close);
  }
}
