package io.parallaxkv.replication;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Writer threads that record every acknowledged (key, version). Each writer owns its keys and
 * writes increasing versions, so after any failure a key must hold a version between the last
 * acknowledged one and the last attempted one.
 */
final class Writers {
  static final int KEYS = 150;

  final Map<String, Long> acked = new ConcurrentHashMap<>();
  final Map<String, Long> attempted = new ConcurrentHashMap<>();
  final AtomicLong acks = new AtomicLong(), failures = new AtomicLong();
  private final List<Thread> threads = new ArrayList<>();
  private volatile boolean running = true;
  private volatile boolean paused;
  /** Writers between deciding to write and the write's return (they check paused after). */
  private final AtomicInteger busy = new AtomicInteger();

  Writers(ReplicatedClient client, int n, int valueBytes) {
    this(client, n, valueBytes, KEYS);
  }

  /** n writers, each over {@code keys} keys of its own. */
  Writers(ReplicatedClient client, int n, int valueBytes, int keys) {
    this(client, n, valueBytes, keys, 1);
  }

  /**
   * n writers, each over {@code keys} keys of its own, each with up to {@code window} writes in
   * flight ({@link ReplicatedClient#putAsync}; 1: {@link ReplicatedClient#put}). A key's next
   * write waits for its last one to answer, so a key's versions are applied in order.
   */
  Writers(ReplicatedClient client, int n, int valueBytes, int keys, int window) {
    for (int t = 0; t < n; t++) {
      int id = t;
      Thread th = new Thread(() -> {
        long version = 0;
        Semaphore inFlight = new Semaphore(window);
        CompletableFuture<?>[] last = new CompletableFuture<?>[keys];
        while (running) {
          busy.incrementAndGet();
          try {
            if (!paused) {
              version++;
              // keys spread over both regions (the first byte picks the region)
              String key = (char) ('A' + (version % 2) * 64) + "-w" + id + "-" + (version % keys);
              if (window > 1) {
                int slot = (int) (version % keys);
                if (last[slot] != null) last[slot].handle((x, e) -> null).join();
                inFlight.acquireUninterruptibly();
                attempted.put(key, version);
                long v = version;
                busy.incrementAndGet(); // the write's, until it is answered
                last[slot] = client.putAsync(key.getBytes(StandardCharsets.UTF_8), value(v, valueBytes)).whenComplete((x, e) -> {
                  if (e == null) {
                    acked.merge(key, v, Math::max);
                    acks.incrementAndGet();
                  } else {
                    failures.incrementAndGet();
                  }
                  busy.decrementAndGet();
                  inFlight.release();
                });
                continue;
              }
              attempted.put(key, version);
              try {
                client.put(key.getBytes(StandardCharsets.UTF_8), value(version, valueBytes));
                acked.put(key, version);
                acks.incrementAndGet();
              } catch (Exception e) {
                failures.incrementAndGet();
              }
            }
          } finally {
            busy.decrementAndGet();
          }
          if (paused) sleepQuietly(5);
        }
      }, "writer-" + t);
      threads.add(th);
      th.start();
    }
  }

  static byte[] value(long version, int bytes) {
    byte[] v = new byte[Math.max(bytes, 20)];
    java.util.Arrays.fill(v, (byte) '.');
    byte[] s = String.format("%019d", version).getBytes(StandardCharsets.US_ASCII);
    System.arraycopy(s, 0, v, 0, s.length);
    return v;
  }

  static long version(byte[] value) {
    return Long.parseLong(new String(value, 0, 19, StandardCharsets.US_ASCII));
  }

  /** Stops new writes and waits for those under way to return; {@link #resume} goes on. */
  void pause() throws InterruptedException {
    paused = true;
    while (busy.get() > 0) Thread.sleep(5);
  }

  void resume() {
    paused = false;
  }

  private static void sleepQuietly(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Stops writing and waits until every write under way is answered. */
  void stop() throws InterruptedException {
    running = false;
    for (Thread t : threads) t.join();
    while (busy.get() > 0) Thread.sleep(5);
  }
}
