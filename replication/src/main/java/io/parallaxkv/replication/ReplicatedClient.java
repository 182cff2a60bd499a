package io.parallaxkv.replication;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * The client library: routes each key to its region's primary by the region map in ZooKeeper,
 * and on any failure (not the primary any more, deposed, timeout, a lost connection) reads the
 * map again and retries, until a deadline. A write that returns has been acknowledged: it is
 * durable on the primary and on every backup of its ack set. A write that throws may or may not
 * have been applied.
 */
public final class ReplicatedClient implements Closeable {
  private final Coordinator coord;
  private final Transport transport = new NettyTransport();
  private final Peers peers = new Peers(transport);
  private final long deadlineMs;
  /** Where a failed call is tried again, 50 ms later. */
  private static final Executor RETRY = CompletableFuture.delayedExecutor(50, TimeUnit.MILLISECONDS);
  private volatile Map<String, Coordinator.Versioned> map = Map.of();

  public ReplicatedClient(String zk, long deadlineMs) throws InterruptedException {
    this.coord = new Coordinator(zk, 10000);
    this.deadlineMs = deadlineMs;
  }

  /** The region map as last read. */
  public Map<String, Coordinator.Versioned> regions() throws Exception {
    map = coord.regions();
    return map;
  }

  private RegionInfo route(byte[] key) throws Exception {
    for (int pass = 0; pass < 2; pass++) {
      for (Coordinator.Versioned v : map.values()) if (v.info().contains(key)) return v.info();
      map = coord.regions();
    }
    return null;
  }

  /** {@link #callAsync}, waited for: its failure thrown as it is. */
  private Frame call(byte[] key, Frame req) throws IOException {
    try {
      return callAsync(key, req).get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof IOException io) throw io;
      if (e.getCause() instanceof IllegalArgumentException bad) throw bad;
      throw new IOException(e.getCause());
    }
  }

  /**
   * Sends req to the primary of key's region (or of req's region, key null) and completes with
   * its answer; on any failure reads the map again and retries after 50 ms (off the caller's and
   * the transport's threads), until the deadline: then fails with IOException. A refused
   * request (BAD_REQUEST) fails at once with IllegalArgumentException.
   */
  private CompletableFuture<Frame> callAsync(byte[] key, Frame req) {
    CompletableFuture<Frame> result = new CompletableFuture<>();
    attempt(key, req, System.currentTimeMillis() + deadlineMs, "no region map", result);
    return result;
  }

  private void attempt(byte[] key, Frame req, long end, String last, CompletableFuture<Frame> result) {
    if (System.currentTimeMillis() >= end) {
      result.completeExceptionally(new IOException("gave up after " + deadlineMs + " ms: " + last));
      return;
    }
    CompletableFuture<Frame> answer;
    try {
      RegionInfo r = key != null ? route(key) : regions().get(req.region()).info();
      answer = r == null ? CompletableFuture.failedFuture(new IOException("no region holds the key"))
          : peers.get(r.primary().server()).call(req, 6000);
    } catch (Exception e) {
      answer = CompletableFuture.failedFuture(e);
    }
    answer.whenComplete((resp, err) -> {
      String why;
      if (err != null) {
        why = err.toString();
      } else if (resp.status() == Frame.Status.OK || resp.status() == Frame.Status.NOT_FOUND) {
        result.complete(resp);
        return;
      } else if (resp.status() == Frame.Status.BAD_REQUEST) {
        result.completeExceptionally(new IllegalArgumentException(resp.message()));
        return;
      } else {
        why = resp.status() + " " + resp.message();
      }
      RETRY.execute(() -> {
        String again = why;
        try {
          map = coord.regions();
        } catch (Exception e) {
          again = e.toString();
        }
        attempt(key, req, end, again, result);
      });
    });
  }

  /**
   * Writes key = value without waiting: the future completes once the write is acknowledged
   * (as {@link #put}'s return), or fails as put throws. Many writes in flight from one thread
   * cost the client far less than a thread waiting for each (docs/replication.md). The arrays
   * are copied before this returns.
   */
  public CompletableFuture<Void> putAsync(byte[] key, byte[] value) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
    if (value.length > Frame.MAX_VALUE) {
      throw new IllegalArgumentException("a value of " + value.length + " bytes: the largest is " + Frame.MAX_VALUE);
    }
    return callAsync(key, Frame.request(Frame.Type.WRITE, "", 0, 0, key.clone(), value.clone())).thenApply(r -> null);
  }

  /**
   * Writes key = value. The arrays are copied first: a call that timed out may still be on its
   * way (see {@link Transport.Connection#call}), and must carry the bytes of this call.
   */
  public void put(byte[] key, byte[] value) throws IOException {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
    if (value.length > Frame.MAX_VALUE) {
      throw new IllegalArgumentException("a value of " + value.length + " bytes: the largest is " + Frame.MAX_VALUE);
    }
    call(key, Frame.request(Frame.Type.WRITE, "", 0, 0, key.clone(), value.clone()));
  }

  public void delete(byte[] key) throws IOException {
    call(key, Frame.request(Frame.Type.WRITE, "", 0, 1, Objects.requireNonNull(key, "key").clone(), null));
  }

  /** The value, or null when the key is absent. */
  public byte[] get(byte[] key) throws IOException {
    Frame r = call(key, Frame.request(Frame.Type.GET, "", 0, 0, key, null));
    return r.status() == Frame.Status.NOT_FOUND ? null : r.b();
  }

  /**
   * Every pair of a region in key order, read from its primary a page (about 4 MiB) at a time.
   * Each page is read from one snapshot of the region, the scan as a whole is not: a write made
   * while it runs may or may not be in it.
   */
  public List<byte[][]> scan(String region) throws IOException {
    return scan(region, 4 << 20);
  }

  /** {@link #scan(String)} in pages of about pageBytes (at least one pair each). */
  List<byte[][]> scan(String region, int pageBytes) throws IOException {
    List<byte[][]> all = new ArrayList<>();
    byte[] after = new byte[0];
    for (;;) {
      Frame r = call(null, Frame.request(Frame.Type.SCAN, region, 0, pageBytes, after, null));
      List<byte[][]> page = Pairs.decode(r.a());
      all.addAll(page);
      if (r.num() == 0 || page.isEmpty()) return all;
      after = page.get(page.size() - 1)[0];
    }
  }

  /** Any message to one server (tests and tools); req's arrays as {@link Transport.Connection#call} says. */
  public Frame callServer(String server, Frame req, long timeoutMs) throws Exception {
    return peers.get(server).call(req, timeoutMs).get(timeoutMs + 1000, TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() throws IOException {
    peers.close();
    transport.close();
    coord.close();
  }
}
