package io.parallaxkv.replication;

import java.io.Closeable;
import java.util.concurrent.CompletableFuture;

/**
 * Request/response messaging between servers and clients. TCP (Netty) today; the replication
 * code sees only this interface, so an RDMA transport (Talos's) can replace it.
 */
public interface Transport extends Closeable {
  /** Serves requests on host:port until closed; handler answers each request. */
  Closeable listen(String host, int port, Handler handler) throws InterruptedException;

  /** A connection to host:port, opened on first use and again after a failure. */
  Connection connect(String host, int port);

  /** Answers one request; a failed future closes the connection it came on. */
  interface Handler {
    CompletableFuture<Frame> handle(Frame request);
  }

  /** Calls over one connection; a call fails when the connection does or the deadline passes. */
  interface Connection extends Closeable {
    /**
     * Sends request and completes with its answer. The request's arrays are sent as they are
     * when the bytes go out, which may be after this returns (they are not copied: a shipped
     * segment is 2 MiB): they must not change until the answer arrives, and never after a failed
     * call, whose bytes may still be on their way.
     */
    CompletableFuture<Frame> call(Frame request, long timeoutMillis);

    @Override
    void close();
  }
}
