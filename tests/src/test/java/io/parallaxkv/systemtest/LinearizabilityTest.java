package io.parallaxkv.systemtest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.parallaxkv.Options;
import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import io.parallaxkv.RegionStats;
import io.parallaxkv.ScanOptions;
import io.parallaxkv.Scanner;
import io.parallaxkv.Snapshot;
import io.parallaxkv.WriteOptions;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Threads put, delete, get, scan and read through snapshots on a few shared keys while
 * compactions and large-log GC run (1 MiB L0, mostly large values, 5% GC threshold). Every put
 * writes a unique value; every operation's interval is recorded; afterwards each key's reads are
 * checked against its writes by {@link RegisterChecker}. A scanner and a snapshot read the state
 * as of their creation, so their reads get the interval of that call. Duration:
 * {@code -Dlinearizability.seconds}.
 */
class LinearizabilityTest {
  private static final int KEYS = 200;
  /**
   * Nine ops in ten go to these few keys; the others are rarely overwritten, so their values
   * stay live in large-log segments that the hot keys fill with garbage, and GC relocates them.
   */
  private static final int HOT_KEYS = 8;
  private static final int SCAN_WIDTH = 16;
  private static final int THREADS = 6;
  private static final int MAX_OPS_PER_THREAD = 1_500_000;
  private static final byte PUT = 0;
  private static final byte DELETE = 1;
  private static final byte READ = 2;

  @TempDir Path dir;

  /** One thread's operations, in primitive arrays to keep millions of them cheap. */
  private static final class Log {
    long[] start = new long[1 << 16];
    long[] end = new long[1 << 16];
    long[] value = new long[1 << 16];
    byte[] kind = new byte[1 << 16];
    byte[] key = new byte[1 << 16];
    int size;

    void add(byte kind, int key, long start, long end, long value) {
      if (size == this.start.length) {
        int n = size * 2;
        this.start = Arrays.copyOf(this.start, n);
        this.end = Arrays.copyOf(this.end, n);
        this.value = Arrays.copyOf(this.value, n);
        this.kind = Arrays.copyOf(this.kind, n);
        this.key = Arrays.copyOf(this.key, n);
      }
      this.kind[size] = kind;
      this.key[size] = (byte) key;
      this.start[size] = start;
      this.end[size] = end;
      this.value[size] = value;
      size++;
    }
  }

  static byte[] key(int k) {
    return String.format("lin-%03d", k).getBytes(StandardCharsets.US_ASCII);
  }

  /** A value naming its unique id, with its length and checksum; the rest derives from the id. */
  static byte[] value(long id, int length) {
    ByteBuffer b = ByteBuffer.allocate(length);
    b.putLong(id).putInt(length);
    long x = id;
    for (int i = 16; i < length; i += 8) {
      x = KillWorkload.mix(x + 0x9E3779B97F4A7C15L);
      for (int j = 0; j < 8 && i + j < length; j++) b.put(i + j, (byte) (x >>> (8 * j)));
    }
    CRC32C c = new CRC32C();
    c.update(b.array(), 0, 12);
    c.update(b.array(), 16, length - 16);
    b.putInt(12, (int) c.getValue());
    return b.array();
  }

  /** The id a value read back names, after checking that it is exactly what was written. */
  static long idOf(byte[] v, String where) {
    if (v.length < 16) throw new AssertionError(where + ": a value of " + v.length + " bytes");
    long id = ByteBuffer.wrap(v).getLong(0);
    if (!Arrays.equals(value(id, v.length), v)) {
      throw new AssertionError(where + ": the value naming id " + id + " is torn or corrupt");
    }
    return id;
  }

  private static int valueLength(Random rnd) {
    int p = rnd.nextInt(100);
    if (p < 60) return 1024 + rnd.nextInt(15 * 1024); // large: the large log, garbage, GC
    if (p < 80) return 150 + rnd.nextInt(800); // medium
    return 16 + rnd.nextInt(80); // small
  }

  @Test
  void everyReadIsLinearizablePerKey() throws Exception {
    int seconds = Integer.getInteger("linearizability.seconds", 10);
    long seed = new SecureRandom().nextLong();
    Options options = Options.builder().l0Size(1L << 20).growthFactor(2).compactionThreads(2)
        .gcThresholdPercent(5).build();
    Log[] logs = new Log[THREADS];
    RegionStats stats;
    try (Parallax db = Parallax.open(dir.resolve("lin.vol"), options);
        Region r = db.region("lin")) {
      ExecutorService pool = Executors.newFixedThreadPool(THREADS);
      try {
        CountDownLatch go = new CountDownLatch(1);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        List<Future<Log>> fs = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
          Random rnd = new Random(seed + t);
          long idBase = (long) (t + 1) << 40;
          fs.add(pool.submit(() -> {
            go.await();
            return run(r, rnd, idBase, deadline);
          }));
        }
        go.countDown();
        for (int t = 0; t < THREADS; t++) logs[t] = fs.get(t).get(seconds + 120L, TimeUnit.SECONDS);
      } finally {
        pool.shutdownNow();
        assertTrue(pool.awaitTermination(60, TimeUnit.SECONDS), "workers stopped");
      }
      stats = r.stats();
    }

    List<List<RegisterChecker.Op>> writes = new ArrayList<>();
    List<List<RegisterChecker.Op>> reads = new ArrayList<>();
    for (int k = 0; k < KEYS; k++) {
      writes.add(new ArrayList<>());
      reads.add(new ArrayList<>());
    }
    long ops = 0;
    for (Log l : logs) {
      ops += l.size;
      for (int i = 0; i < l.size; i++) {
        RegisterChecker.Op op = new RegisterChecker.Op(l.start[i], l.end[i], l.value[i]);
        (l.kind[i] == READ ? reads : writes).get(l.key[i] & 0xff).add(op);
      }
    }
    List<String> violations = new ArrayList<>();
    for (int k = 0; k < KEYS; k++) {
      violations.addAll(RegisterChecker.check(new String(key(k), StandardCharsets.US_ASCII),
          writes.get(k), reads.get(k), 10));
    }
    RegionStats.Placement p = stats.placement();
    System.out.printf("LinearizabilityTest[%s]: %d s, %d operations checked (%d writes, %d reads) "
            + "on %d keys by %d threads; %d compactions, %d GC runs, %d bytes relocated by GC%n",
        Parallax.backend(), seconds, ops, writes.stream().mapToLong(List::size).sum(),
        reads.stream().mapToLong(List::size).sum(), KEYS, THREADS, stats.compactions(),
        p.gcRuns(), p.gcBytesRelocated());
    assertEquals(List.of(), violations, "seed " + seed);
    assertTrue(stats.compactions() > 0, "compactions ran: " + stats);
    assertTrue(p.gcRuns() > 0 && p.gcBytesRelocated() > 0, "GC relocated live values: " + stats);
  }

  private static Log run(Region r, Random rnd, long idBase, long deadline) {
    Log log = new Log();
    long next = idBase;
    ByteBuffer dst = ByteBuffer.allocateDirect(32 * 1024);
    while (System.nanoTime() < deadline && log.size < MAX_OPS_PER_THREAD) {
      int k = rnd.nextInt(10) == 0 ? rnd.nextInt(KEYS) : rnd.nextInt(HOT_KEYS);
      byte[] key = key(k);
      int what = rnd.nextInt(100);
      long s;
      if (what < 40) {
        long id = ++next;
        byte[] v = value(id, valueLength(rnd));
        WriteOptions wo = rnd.nextInt(20) == 0 ? WriteOptions.SYNC : WriteOptions.DEFAULT;
        s = System.nanoTime();
        r.put(key, v, wo);
        log.add(PUT, k, s, System.nanoTime(), id);
      } else if (what < 50) {
        s = System.nanoTime();
        r.delete(key);
        log.add(DELETE, k, s, System.nanoTime(), RegisterChecker.ABSENT);
      } else if (what < 72) {
        s = System.nanoTime();
        byte[] v = r.get(key);
        long e = System.nanoTime();
        log.add(READ, k, s, e, v == null ? RegisterChecker.ABSENT : idOf(v, "get"));
      } else if (what < 86) {
        dst.clear();
        s = System.nanoTime();
        int n = r.get(ByteBuffer.wrap(key), dst);
        long e = System.nanoTime();
        long id = RegisterChecker.ABSENT;
        if (n != Region.NOT_FOUND) {
          byte[] v = new byte[n];
          dst.flip().get(v);
          id = idOf(v, "get into a direct buffer");
        }
        log.add(READ, k, s, e, id);
      } else if (what < 90) {
        scan(r, log, rnd.nextInt(KEYS - SCAN_WIDTH + 1));
      } else {
        s = System.nanoTime();
        try (Snapshot snap = r.snapshot()) {
          long e = System.nanoTime();
          for (int i = 0; i < 3; i++) {
            int kk = rnd.nextInt(KEYS);
            byte[] v = snap.get(key(kk));
            log.add(READ, kk, s, e, v == null ? RegisterChecker.ABSENT : idOf(v, "snapshot get"));
          }
        }
      }
    }
    return log;
  }

  /**
   * A scan of the keys {@code first..first+SCAN_WIDTH-1} (half of the time bounded by
   * ScanOptions, else seeking in a full scanner): one read per key, present or absent, as of the
   * scanner's creation.
   */
  private static void scan(Region r, Log log, int first) {
    long[] seen = new long[SCAN_WIDTH];
    boolean bounded = (first & 1) == 0;
    long s = System.nanoTime();
    try (Scanner sc = bounded
        ? r.scanner(ScanOptions.builder().lowerBound(key(first))
            .upperBound(key(first + SCAN_WIDTH)).build())
        : r.scanner()) {
      long e = System.nanoTime();
      if (!bounded) sc.seek(key(first));
      byte[] prev = null;
      for (; sc.isValid(); sc.next()) {
        byte[] key = sc.key();
        if (prev != null && Arrays.compareUnsigned(prev, key) >= 0) {
          throw new AssertionError("scan out of order at " + new String(key, StandardCharsets.US_ASCII));
        }
        prev = key;
        int k = Integer.parseInt(new String(key, StandardCharsets.US_ASCII).substring(4));
        if (k >= first + SCAN_WIDTH) {
          if (bounded) throw new AssertionError("scan past its upper bound: lin-" + k);
          break;
        }
        if (k < first) throw new AssertionError("scan before its lower bound: lin-" + k);
        seen[k - first] = idOf(sc.value(), "scan");
      }
      for (int i = 0; i < SCAN_WIDTH; i++) log.add(READ, first + i, s, e, seen[i]);
    }
  }
}
