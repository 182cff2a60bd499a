package io.parallaxkv.replication;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.Closeable;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link NettyTransport} on loopback: many threads' calls on one connection, frames on both
 * sides of the size up to which a frame is copied into one buffer, deadlines, bad bytes.
 */
@Timeout(120)
class TransportTest {
  private static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /**
   * An echo server that also checks each sender's order: a = (thread u32, sequence u32, payload),
   * answered with the payload reversed in b; a frame arriving out of its thread's order is
   * answered ERROR.
   */
  private static CompletableFuture<Frame> echo(Frame req, Map<Integer, Integer> lastSeq) {
    ByteBuffer a = ByteBuffer.wrap(req.a());
    int thread = a.getInt(), seq = a.getInt();
    Integer before = lastSeq.put(thread, seq);
    if (before != null && before + 1 != seq) return CompletableFuture.completedFuture(req.fail(Frame.Status.ERROR, "out of order"));
    byte[] rev = new byte[a.remaining()];
    for (int i = rev.length - 1; i >= 0; i--) rev[i] = a.get();
    return CompletableFuture.completedFuture(req.reply(Frame.Status.OK, seq, null, rev));
  }

  @Test
  void manyThreadsCallsOnOneConnectionKeepTheirOrderAndBytes() throws Exception {
    int port = freePort();
    Map<Integer, Integer> lastSeq = new ConcurrentHashMap<>();
    try (NettyTransport t = new NettyTransport();
        Closeable server = t.listen("127.0.0.1", port, req -> echo(req, lastSeq));
        Transport.Connection c = t.connect("127.0.0.1", port)) {
      List<Thread> threads = new ArrayList<>();
      List<Throwable> failures = new ArrayList<>();
      for (int th = 0; th < 8; th++) {
        int id = th;
        threads.add(new Thread(() -> {
          Random rnd = new Random(id);
          try {
            List<CompletableFuture<Frame>> calls = new ArrayList<>();
            List<byte[]> sent = new ArrayList<>();
            for (int seq = 0; seq < 400; seq++) {
              // Mostly small frames, some past the copy limit (64 KiB), a few of a segment's size.
              int len = seq % 50 == 7 ? 2 << 20 : seq % 10 == 3 ? 64 * 1024 - 40 + rnd.nextInt(80) : rnd.nextInt(2000);
              byte[] payload = new byte[len];
              rnd.nextBytes(payload);
              byte[] a = ByteBuffer.allocate(8 + len).putInt(id).putInt(seq).put(payload).array();
              calls.add(c.call(Frame.request(Frame.Type.APPLY, "r0", 1, 0, a, null), 30000));
              sent.add(payload);
              if (calls.size() == 32 || seq == 399) { // a window of calls in flight, then their answers
                for (int k = 0; k < calls.size(); k++) {
                  Frame r = calls.get(k).get(30, TimeUnit.SECONDS);
                  assertEquals(Frame.Status.OK, r.status(), r.status() == Frame.Status.OK ? "" : r.message());
                  byte[] p = sent.get(k), rev = r.b();
                  assertEquals(p.length, rev.length);
                  for (int i = 0; i < p.length; i++) if (p[i] != rev[p.length - 1 - i]) throw new AssertionError("byte " + i);
                }
                calls.clear();
                sent.clear();
              }
            }
          } catch (Throwable e) {
            synchronized (failures) {
              failures.add(e);
            }
          }
        }));
      }
      threads.forEach(Thread::start);
      for (Thread th : threads) th.join();
      assertTrue(failures.isEmpty(), () -> failures.toString());
      assertEquals(8, lastSeq.size());
      lastSeq.values().forEach(v -> assertEquals(399, v));
    }
  }

  @Test
  void aCallPastItsDeadlineFailsAndTheConnectionGoesOn() throws Exception {
    int port = freePort();
    try (NettyTransport t = new NettyTransport();
        Closeable server = t.listen("127.0.0.1", port,
            req -> req.num() == 1 ? new CompletableFuture<>() : CompletableFuture.completedFuture(req.ok(2)));
        Transport.Connection c = t.connect("127.0.0.1", port)) {
      long t0 = System.nanoTime();
      CompletableFuture<Frame> never = c.call(Frame.request(Frame.Type.GET, "r0", 0, 1, new byte[1], null), 200);
      ExecutionException e = assertThrows(ExecutionException.class, () -> never.get(10, TimeUnit.SECONDS));
      assertInstanceOf(TimeoutException.class, e.getCause());
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertTrue(ms >= 200 && ms < 5000, "failed after " + ms + " ms");
      assertEquals(2, c.call(Frame.request(Frame.Type.GET, "r0", 0, 0, new byte[1], null), 5000).get(10, TimeUnit.SECONDS).num());
    }
  }

  @Test
  void malformedBytesCloseOnlyTheirConnection() throws Exception {
    int port = freePort();
    try (NettyTransport t = new NettyTransport();
        Closeable server = t.listen("127.0.0.1", port, req -> CompletableFuture.completedFuture(req.ok(3)));
        Transport.Connection c = t.connect("127.0.0.1", port);
        Socket raw = new Socket("127.0.0.1", port)) {
      OutputStream out = raw.getOutputStream();
      out.write(new byte[] {0, 0, 0, 5, (byte) 200, 1, 2, 3, 4}); // a frame of an unknown type
      out.flush();
      raw.setSoTimeout(10000);
      assertEquals(-1, raw.getInputStream().read()); // the server closed it
      assertEquals(3, c.call(Frame.request(Frame.Type.GET, "r0", 0, 0, new byte[1], null), 5000).get(10, TimeUnit.SECONDS).num());
      assertArrayEquals(new byte[0], c.call(Frame.request(Frame.Type.GET, "r0", 0, 0, new byte[0], null), 5000)
          .get(10, TimeUnit.SECONDS).a());
    }
  }
}
