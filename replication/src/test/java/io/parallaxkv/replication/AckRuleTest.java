package io.parallaxkv.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.parallaxkv.Options;
import io.parallaxkv.Parallax;
import io.parallaxkv.replication.RegionInfo.Member;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The acknowledgement rule of {@link PrimaryRegion#write}, in one JVM: a primary and two
 * build-index backups, each a {@link LocalCopy} on a volume of its own, the primary's shippers
 * reaching the backups through a {@link Transport} that calls their copies directly and can hold
 * one backup's calls back. A write's future completes only once both backups hold it; held
 * writes time out or fail when the primary is deposed, and none is left waiting.
 */
@Timeout(120)
class AckRuleTest {
  @TempDir Path dir;

  private Parallax pv;
  private Parallax b1v;
  private Parallax b2v;
  private LocalCopy b1;
  private LocalCopy b2;
  private DirectTransport transport;
  private Peers peers;
  private PrimaryRegion p;

  /** Serves APPLY by calling the named backup's copy; a held backup's calls wait for release. */
  private static final class DirectTransport implements Transport {
    final Map<String, LocalCopy> copies;
    volatile String held;
    final ConcurrentLinkedQueue<Runnable> waiting = new ConcurrentLinkedQueue<>();

    DirectTransport(Map<String, LocalCopy> copies) {
      this.copies = copies;
    }

    synchronized void hold(String host) {
      held = host;
    }

    /** Serves the held calls in the order they came, then lets calls through again. */
    synchronized void release() {
      held = null;
      for (Runnable r; (r = waiting.poll()) != null; ) r.run();
    }

    @Override
    public java.io.Closeable listen(String host, int port, Handler handler) {
      throw new UnsupportedOperationException("the backups are called directly");
    }

    @Override
    public Connection connect(String host, int port) {
      LocalCopy c = copies.get(host);
      return new Connection() {
        @Override
        public CompletableFuture<Frame> call(Frame req, long timeoutMillis) {
          CompletableFuture<Frame> answer = new CompletableFuture<>();
          Runnable serve = () -> {
            try {
              byte[] records = req.a() == null ? new byte[0] : req.a();
              answer.complete(req.reply(Frame.Status.OK, c.apply(req.epoch(), records), new byte[] {1}, null));
            } catch (Exception e) {
              answer.completeExceptionally(e);
            }
          };
          synchronized (DirectTransport.this) {
            if (host.equals(held)) waiting.add(serve);
            else serve.run();
          }
          return answer.orTimeout(timeoutMillis, TimeUnit.MILLISECONDS);
        }

        @Override
        public void close() {}
      };
    }

    @Override
    public void close() {}
  }

  @BeforeEach
  void start() throws Exception {
    Options opts = Options.builder().placement(Options.Placement.HYBRID).build();
    pv = Parallax.open(dir.resolve("p.vol"), opts);
    b1v = Parallax.open(dir.resolve("b1.vol"), opts);
    b2v = Parallax.open(dir.resolve("b2.vol"), opts);
    b1 = new LocalCopy(b1v, "r0", 1, false, false, true, 1);
    b2 = new LocalCopy(b2v, "r0", 1, false, false, true, 1);
    transport = new DirectTransport(Map.of("b1", b1, "b2", b2));
    peers = new Peers(transport);
    p = new PrimaryRegion(new LocalCopy(pv, "r0", 1, true, false, true, 1), peers, false, 2000, false, (r, e, b) -> {});
    p.update(new RegionInfo("r0", 1, new byte[0], new byte[0], new Member("p:1", 1, true),
        List.of(new Member("b1:1", 1, true), new Member("b2:1", 1, true))));
  }

  @AfterEach
  void stop() throws Exception {
    transport.release();
    p.close();
    p.copy.close();
    b1.close();
    b2.close();
    pv.close();
    b1v.close();
    b2v.close();
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static boolean holds(LocalCopy c, String key, String value) {
    byte[] v = c.region().get(bytes(key));
    return v != null && java.util.Arrays.equals(v, bytes(value));
  }

  /** A write's future, with a check run as it completes: both backups hold the write then. */
  private CompletableFuture<Void> write(String key, String value, long timeoutMs, List<String> violations)
      throws Exception {
    return p.write(bytes(key), bytes(value), false, timeoutMs).thenRun(() -> {
      if (!holds(b1, key, value) || !holds(b2, key, value)) violations.add(key + "=" + value);
    });
  }

  @Test
  void concurrentWritesAreAnsweredOnceBothBackupsHoldThem() throws Exception {
    List<String> violations = new java.util.concurrent.CopyOnWriteArrayList<>();
    List<Thread> threads = new ArrayList<>();
    List<Throwable> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
    for (int t = 0; t < 8; t++) {
      int id = t;
      Thread th = new Thread(() -> {
        try {
          for (int i = 0; i < 150; i++) write("k" + id + "-" + (i % 40), "v" + i, 10_000, violations).get();
        } catch (Throwable e) {
          errors.add(e);
        }
      });
      threads.add(th);
      th.start();
    }
    for (Thread th : threads) th.join();
    assertEquals(List.of(), errors);
    assertTrue(violations.isEmpty(), () -> violations.size() + " writes answered before both backups held them, e.g. "
        + violations.get(0));
    assertEquals(0, p.waitingWrites());
  }

  @Test
  void writesWaitForAHeldBackup() throws Exception {
    List<String> violations = new java.util.concurrent.CopyOnWriteArrayList<>();
    write("a", "1", 10_000, violations).get();
    transport.hold("b2");
    List<CompletableFuture<Void>> held = new ArrayList<>();
    for (int i = 0; i < 20; i++) held.add(write("h" + i, "x" + i, 30_000, violations));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!holds(b1, "h19", "x19") && System.nanoTime() < deadline) Thread.sleep(10);
    assertTrue(holds(b1, "h19", "x19"), "the backup that is not held has the writes");
    Thread.sleep(200);
    for (CompletableFuture<Void> f : held) assertFalse(f.isDone(), "answered while a backup of the ack set lacked it");
    assertEquals(20, p.waitingWrites());
    transport.release();
    for (CompletableFuture<Void> f : held) f.get(10, TimeUnit.SECONDS);
    assertTrue(violations.isEmpty(), () -> "answered before both backups held it: " + violations.get(0));
    assertEquals(0, p.waitingWrites());
  }

  @Test
  void heldWritesTimeOutOrFailWhenDeposedAndNoneIsLeftWaiting() throws Exception {
    transport.hold("b2");
    CompletableFuture<Void> late = p.write(bytes("t"), bytes("1"), false, 300);
    ExecutionException timedOut = assertThrows(ExecutionException.class, () -> late.get(10, TimeUnit.SECONDS));
    assertInstanceOf(TimeoutException.class, timedOut.getCause());
    assertEquals(0, p.waitingWrites(), "a timed-out write no longer waits");

    CompletableFuture<Void> waiting = p.write(bytes("d"), bytes("1"), false, 30_000);
    Thread.sleep(100);
    assertFalse(waiting.isDone());
    p.deposed("a higher epoch exists");
    ExecutionException failed = assertThrows(ExecutionException.class, () -> waiting.get(10, TimeUnit.SECONDS));
    assertInstanceOf(PrimaryRegion.DeposedException.class, failed.getCause());
    assertEquals(0, p.waitingWrites());
    assertThrows(PrimaryRegion.DeposedException.class, () -> p.write(bytes("e"), bytes("1"), false, 1000));
  }
}
