package io.parallaxkv.systemtest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.parallaxkv.Options;
import io.parallaxkv.Parallax;
import io.parallaxkv.ParallaxClosedException;
import io.parallaxkv.Region;
import io.parallaxkv.Scanner;
import io.parallaxkv.Snapshot;
import io.parallaxkv.WriteBatch;
import io.parallaxkv.WriteOptions;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Many rounds of: threads hammer a region (puts of arrays and direct buffers, batches, gets
 * into buffers, scanners with views, reads through one shared snapshot and one shared scanner,
 * stats, sync) while the test closes, at a random moment, the shared snapshot, the shared
 * scanner, the region or the whole volume. A call may fail only with ParallaxClosedException
 * (or, on FFM, IllegalStateException from a zero-copy view of the closed shared snapshot); no
 * thread may hang; and since close waits for calls in flight and makes writes durable, after a
 * reopen every key holds exactly the last value whose put returned.
 */
class ConcurrentCloseTest {
  private static final int WRITERS = 3;
  private static final int KEYS_PER_WRITER = 64;
  private static final int ROUNDS = 100;

  @TempDir Path dir;

  static byte[] key(int writer, int k) {
    return String.format("w%d-%03d", writer, k).getBytes(StandardCharsets.US_ASCII);
  }

  /** A value naming its writer, key and sequence number, sized across the three classes. */
  static byte[] value(int writer, int k, int seq) {
    int len = new int[] {40, 600, 3000}[seq % 3];
    ByteBuffer b = ByteBuffer.allocate(len).putInt(writer).putInt(k).putInt(seq);
    for (int i = 12; i < len; i++) b.put(i, (byte) (seq + i));
    return b.array();
  }

  @Test
  void closeWhileCallsAreInFlight() throws Exception {
    Path volume = dir.resolve("close.vol");
    Options options = Options.builder().l0Size(1L << 20).durabilityInterval(Duration.ofMillis(20)).build();
    long seed = System.nanoTime();
    Random rnd = new Random(seed);
    // Per writer and key, the sequence number of the last put that returned (-1: none).
    int[][] last = new int[WRITERS][KEYS_PER_WRITER];
    for (int[] l : last) Arrays.fill(l, -1);
    int[] nextSeq = new int[WRITERS];
    ExecutorService pool = Executors.newCachedThreadPool();
    try {
      for (int round = 0; round < ROUNDS; round++) {
        String ctx = "seed " + seed + ", round " + round;
        Parallax db = Parallax.open(volume, options);
        Region r = db.region("r");
        Snapshot shared = r.snapshot();
        Scanner sharedScanner = r.scanner();
        int target = rnd.nextInt(4);
        List<Task> tasks = tasks(r, shared, sharedScanner, last, nextSeq);
        CountDownLatch working = new CountDownLatch(tasks.size());
        List<Future<Object>> fs = new ArrayList<>();
        for (Task t : tasks) fs.add(pool.submit(() -> t.run(working)));
        assertTrue(working.await(60, TimeUnit.SECONDS), ctx + ": every task completed a call");
        LockSupport.parkNanos(rnd.nextInt(20_000_000)); // a random moment, not synchronization
        switch (target) {
          case 0 -> shared.close();
          case 1 -> sharedScanner.close();
          case 2 -> r.close();
          default -> db.close();
        }
        if (target < 2) r.close();
        for (Future<Object> f : fs) f.get(60, TimeUnit.SECONDS);
        db.close();
        assertFalse(shared.isOpen() || sharedScanner.isOpen() || r.isOpen(), ctx);
      }
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(60, TimeUnit.SECONDS), "tasks stopped");
    }
    try (Parallax db = Parallax.open(volume, options); Region r = db.openRegion("r")) {
      int present = 0;
      for (int w = 0; w < WRITERS; w++) {
        for (int k = 0; k < KEYS_PER_WRITER; k++) {
          byte[] expected = last[w][k] < 0 ? null : value(w, k, last[w][k]);
          assertArrayEquals(expected, r.get(key(w, k)), "seed " + seed + ": writer " + w + " key " + k);
          if (expected != null) present++;
        }
      }
      assertEquals(WRITERS * KEYS_PER_WRITER, present, "every key was written at least once");
    }
  }

  /** A task: counts down {@code working} after its first call, runs until its handle closes. */
  @FunctionalInterface
  private interface Task {
    Object run(CountDownLatch working) throws Exception;
  }

  private static List<Task> tasks(Region r, Snapshot shared, Scanner sharedScanner,
      int[][] last, int[] nextSeq) {
    List<Task> tasks = new ArrayList<>();
    for (int w = 0; w < WRITERS; w++) {
      int writer = w;
      tasks.add(working -> untilClosed(working, () -> {
        // A put that fails on close is retried next round with the same sequence number, so
        // each round moves a writer on by at least one key and 100 rounds write every key.
        int seq = nextSeq[writer];
        int k = seq % KEYS_PER_WRITER;
        byte[] v = value(writer, k, seq);
        switch (seq % 4) {
          case 0 -> r.put(key(writer, k), v);
          case 1 -> r.put(ByteBuffer.allocateDirect(8).put(key(writer, k)).flip(),
              ByteBuffer.allocateDirect(v.length).put(v).flip(), WriteOptions.SYNC);
          case 2 -> {
            try (WriteBatch b = new WriteBatch()) {
              r.write(b.put(key(writer, k), v));
            }
          }
          default -> r.put(key(writer, k), v, WriteOptions.DEFAULT);
        }
        last[writer][k] = seq; // only once the put returned
        nextSeq[writer]++;
      }, false));
    }
    tasks.add(working -> untilClosed(working, () -> {
      ByteBuffer dst = ByteBuffer.allocateDirect(4096);
      for (int w = 0; w < WRITERS; w++) {
        dst.clear();
        r.get(ByteBuffer.wrap(key(w, 5)), dst);
      }
      r.exists(key(0, 1));
      r.stats();
      r.sync();
    }, false));
    tasks.add(working -> untilClosed(working, () -> {
      try (Scanner s = r.scanner()) {
        for (int i = 0; i < 50 && s.isValid(); i++, s.next()) {
          s.keyView().get(0);
          s.valueView();
        }
      }
    }, false));
    tasks.add(working -> untilClosed(working, () -> {
      ByteBuffer view = shared.getView(key(1, 3));
      if (view != null) view.get(new byte[view.remaining()]);
      shared.get(key(2, 7));
    }, true));
    tasks.add(working -> untilClosed(working, () -> {
      if (!sharedScanner.next()) sharedScanner.seekToFirst();
      if (sharedScanner.isValid()) sharedScanner.value();
    }, false));
    return tasks;
  }

  private interface Call {
    void run() throws Exception;
  }

  /**
   * Repeats {@code call} until a handle it uses is closed: ParallaxClosedException ends it, as
   * does IllegalStateException from a revoked FFM view if {@code views}; anything else fails.
   */
  private static Object untilClosed(CountDownLatch working, Call call, boolean views) throws Exception {
    boolean first = true;
    while (true) {
      try {
        call.run();
      } catch (ParallaxClosedException e) {
        if (first) working.countDown();
        return null;
      } catch (IllegalStateException e) {
        if (!views) throw e;
        if (first) working.countDown();
        return null;
      }
      if (first) {
        working.countDown();
        first = false;
      }
    }
  }
}
