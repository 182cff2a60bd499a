package io.parallaxkv.replication;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A benchmark, not a test (skipped unless {@code -Drepl.bench=N} gives the writes to make): one
 * region, 16 client threads ({@code -Drepl.bench.clients}) writing N pairs, in three set-ups: one unreplicated server, RF 3
 * send-index, RF 3 build-index (the last two alternating {@code -Drepl.bench.rounds} times).
 * Values are 1000 bytes, or with {@code -Drepl.bench.mix=sd} the SD mix of the papers (60% 9,
 * 20% 104 and 20% 1004 bytes, chosen by key); {@code -Drepl.bench.l0=BYTES} sets the servers' L0
 * (1 MiB by default, so that a short run compacts often). Reports client throughput and each
 * server's CPU time and device bytes (from /proc), the primary's and the backups' apart, and each
 * server's CPU by what its threads do (engine compaction, WAL, Netty, shipping, ...).
 * {@code -Drepl.memory=BYTES} runs each server in a cgroup v1 memory group of that limit (heap,
 * engine memory and page cache together): the comparison at equal memory.
 * {@code -Drepl.transfer=N} runs the state-transfer benchmark instead ({@link
 * #stateTransferWhileWriting}), {@code -Drepl.failover=KILLS} failovers under a full load ({@link
 * #failoverUnderLoad}). Results in docs/replication.md.
 */
class ReplicationBench {
  @TempDir Path dir;

  private static long[] usage(long pid) throws Exception {
    String[] stat = Files.readString(Path.of("/proc/" + pid + "/stat")).split("\\) ")[1].split(" ");
    long cpuTicks = Long.parseLong(stat[11]) + Long.parseLong(stat[12]); // utime + stime
    long read = 0, written = 0;
    for (String l : Files.readAllLines(Path.of("/proc/" + pid + "/io"))) {
      if (l.startsWith("read_bytes:")) read = Long.parseLong(l.substring(11).trim());
      if (l.startsWith("write_bytes:")) written = Long.parseLong(l.substring(12).trim());
    }
    long sysTicks = Long.parseLong(stat[12]);
    return new long[] {cpuTicks * 10, read, written, sysTicks * 10}; // ms (100 Hz ticks), bytes, bytes, ms
  }

  /**
   * Bytes read and written by the device that holds dir, by every process (/sys/dev/block's
   * counters of its sectors), or null where they cannot be read. A cross-check of the servers'
   * own counts: a process's write_bytes counts pages it dirties through the page cache, and for
   * a log written that way and synced at every group commit it counted up to 500 KB per write
   * here, while the device wrote 5.7 KB (measured on 2026-11-29, docs/replication.md).
   */
  private static long[] deviceBytes(Path dir) {
    try {
      long dev = ((Number) Files.getAttribute(dir, "unix:dev")).longValue();
      long major = (dev >>> 8) & 0xfff, minor = (dev & 0xff) | ((dev >>> 12) & 0xfff00);
      String[] f = Files.readString(Path.of("/sys/dev/block/" + major + ":" + minor + "/stat")).trim().split("\\s+");
      return new long[] {Long.parseLong(f[2]) * 512, Long.parseLong(f[6]) * 512};
    } catch (Exception e) {
      return null;
    }
  }

  /** The machine's CPU time so far, busy and idle (iowait counted idle), in ticks: /proc/stat's first line. */
  private static long[] machineTicks() throws Exception {
    String[] f = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
    long idle = Long.parseLong(f[4]) + Long.parseLong(f[5]), all = 0;
    for (int i = 1; i < f.length; i++) all += Long.parseLong(f[i]);
    return new long[] {all - idle, idle};
  }

  /** What a thread does, from its name (the JVM's, Netty's, this module's and the engine's). */
  private static String job(String name) {
    if (name.equals("par-compaction")) return "engine compaction+GC";
    if (name.equals("par-wal")) return "engine WAL";
    if (name.equals("par-forget")) return "engine page drops";
    if (name.startsWith("nioEventLoop")) return "netty";
    if (name.startsWith("client-worker")) return "client requests";
    if (name.startsWith("repl-worker")) return "replication requests";
    if (name.startsWith("ship-index")) return "index shipping";
    if (name.startsWith("ship-")) return "log shipping";
    if (name.startsWith("C1 Compiler") || name.startsWith("C2 Compiler")) return "JIT";
    if (name.startsWith("GC ") || name.startsWith("G1 ") || name.equals("VM Thread")) return "JVM GC";
    return "other";
  }

  /** CPU ms of each live thread of pid, by thread id: name and ticks in ms. */
  private static Map<String, Map.Entry<String, Long>> threads(long pid) throws Exception {
    Map<String, Map.Entry<String, Long>> m = new HashMap<>();
    try (var tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
      for (Path t : tasks.toList()) {
        String s;
        try {
          s = Files.readString(t.resolve("stat"));
        } catch (java.io.IOException ended) {
          continue;
        }
        String name = s.substring(s.indexOf('(') + 1, s.lastIndexOf(')'));
        String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
        m.put(t.getFileName().toString(), Map.entry(name, (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10));
      }
    }
    return m;
  }

  /**
   * The profile /proc gives without perf: a server's CPU over the load by what its threads do,
   * in µs per write; threads that ended meanwhile are counted as "ended".
   */
  private static String cpuByJob(Map<String, Map.Entry<String, Long>> before, Map<String, Map.Entry<String, Long>> after,
      long totalMs, long n) {
    Map<String, Long> ms = new TreeMap<>();
    long live = 0;
    for (var e : after.entrySet()) {
      var b = before.get(e.getKey());
      long d = e.getValue().getValue() - (b == null ? 0 : b.getValue());
      ms.merge(job(e.getValue().getKey()), d, Long::sum);
      live += d;
    }
    ms.put("ended", Math.max(0, totalMs - live));
    StringBuilder sb = new StringBuilder();
    ms.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).filter(e -> e.getValue() > 0)
        .forEach(e -> sb.append(String.format("%s %.1f, ", e.getKey(), 1000.0 * e.getValue() / n)));
    return sb.length() == 0 ? "-" : sb.substring(0, sb.length() - 2);
  }

  /**
   * n writes by {@code repl.bench.clients} threads (16), each with {@code repl.bench.window} writes
   * in flight (1: each waits for its write's answer; more: {@link ReplicatedClient#putAsync}): keys key000000000000.. with values of 1000 bytes, or the SD mix
   * with YCSB's 24-byte keys (user00000000000000000000..), so that its pairs fall in the papers'
   * classes: 33, 128 and 1028 bytes (small, medium, large: 1024 and up). With 15-byte keys the
   * 1004-byte values made 1019-byte pairs, medium ones (runs before 2026-11-29).
   */
  private static void load(ReplicatedClient c, long n, boolean sd) throws InterruptedException {
    String keyFormat = sd ? "user%020d" : "key%012d";
    int window = Integer.getInteger("repl.bench.window", 1);
    AtomicLong next = new AtomicLong();
    AtomicReference<Throwable> failed = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0, clients = Integer.getInteger("repl.bench.clients", 16); t < clients; t++) {
      Thread th = new Thread(() -> {
        byte[][] values = {new byte[9], new byte[104], new byte[1004], new byte[1000]};
        Semaphore inFlight = new Semaphore(window);
        try {
          for (long i; (i = next.getAndIncrement()) < n && failed.get() == null; ) {
            long k = (i * 7919) % n;
            int size = !sd ? 3 : k % 5 < 3 ? 0 : k % 5 == 3 ? 1 : 2;
            byte[] key = String.format(keyFormat, k).getBytes(StandardCharsets.UTF_8);
            if (window == 1) {
              c.put(key, values[size]);
              continue;
            }
            inFlight.acquire();
            c.putAsync(key, values[size]).whenComplete((v, e) -> {
              if (e != null) failed.compareAndSet(null, e);
              inFlight.release();
            });
          }
          inFlight.acquire(window); // the last ones answered
        } catch (Exception e) {
          failed.compareAndSet(null, e);
        }
      });
      threads.add(th);
      th.start();
    }
    for (Thread th : threads) th.join();
    if (failed.get() != null) throw new IllegalStateException(failed.get());
  }

  private void run(String label, String mode, String placement, int rf, long n) throws Exception {
    boolean sd = "sd".equals(System.getProperty("repl.bench.mix", "1000"));
    try (Cluster cl = new Cluster(dir.resolve(label), mode, rf, 1, Long.getLong("repl.bench.l0", 1 << 20), placement)) {
      List<String> ids = new ArrayList<>();
      for (int i = 0; i < rf; i++) ids.add(cl.start());
      try (ReplicatedClient c = new ReplicatedClient(cl.zk.getConnectString(), 30000)) {
        RegionInfo r = FailoverTest.waitFor(c, "r0", 30000, x -> true);
        c.put("warm".getBytes(StandardCharsets.UTF_8), new byte[10]);
        List<long[]> before = new ArrayList<>();
        List<Map<String, Map.Entry<String, Long>>> threadsBefore = new ArrayList<>();
        for (String id : ids) {
          before.add(usage(cl.pid(id)));
          threadsBefore.add(threads(cl.pid(id)));
        }
        long self = ProcessHandle.current().pid();
        long[] device0 = deviceBytes(dir), machine0 = machineTicks(), client0 = usage(self);
        long t0 = System.nanoTime();
        load(c, n, sd);
        double secs = (System.nanoTime() - t0) / 1e9;
        long[] device1 = deviceBytes(dir), machine1 = machineTicks(), client1 = usage(self);
        System.out.printf("%-22s %8.0f writes/s%n", label, n / secs);
        long busy = machine1[0] - machine0[0], idle = machine1[1] - machine0[1];
        // The writers' JVM also runs ZooKeeper (idle but for sessions and the map).
        System.out.printf("  machine  busy %.0f%% of its CPUs; the writers' JVM (and ZooKeeper) %.1f us/write, %.1f of it in the kernel%n",
            100.0 * busy / (busy + idle), 1000.0 * (client1[0] - client0[0]) / n, 1000.0 * (client1[3] - client0[3]) / n);
        if (device0 != null && device1 != null) {
          System.out.printf("  device   (every process)          read %7.1f B/write  written %7.1f B/write%n",
              (double) (device1[0] - device0[0]) / n, (double) (device1[1] - device0[1]) / n);
        }
        for (int i = 0; i < ids.size(); i++) {
          var threadsAfter = threads(cl.pid(ids.get(i)));
          long[] u = usage(cl.pid(ids.get(i)));
          long[] b = before.get(i);
          String role = ids.get(i).equals(r.primary().server()) ? "primary" : "backup";
          System.out.printf("  %-8s cpu %7.1f us/write (kernel %.1f)  read %7.1f B/write  written %7.1f B/write%n", role,
              1000.0 * (u[0] - b[0]) / n, 1000.0 * (u[3] - b[3]) / n, (double) (u[1] - b[1]) / n, (double) (u[2] - b[2]) / n);
          System.out.printf("           by thread (us/write): %s%n", cpuByJob(threadsBefore.get(i), threadsAfter, u[0] - b[0], n));
          if (role.equals("backup")) {
            Frame f = c.callServer(ids.get(i), Frame.request(Frame.Type.STATS, "r0", 0, 0, null, null), 3000);
            ByteBuffer stats = ByteBuffer.wrap(f.a());
            long mirror = stats.getLong(9 * 8); // Replication.Stats#mirrorBytes
            long medium = stats.getLong(10 * 8); // Replication.Stats#mediumSegments
            long copied = stats.getLong(11 * 8); // Replication.Stats#segmentBytes
            long logTaken = stats.getLong(12 * 8), levelsTaken = stats.getLong(13 * 8); // payload received
            long logMessages = stats.getLong(14 * 8);
            System.out.printf("           segments installed: %.1f B/write, the large-log mirror (apply and installs): %.1f; "
                + "medium-log segments copied: %d%n", (double) copied / n, (double) mirror / n, medium);
            System.out.printf("           received from the primary: log %.1f B/write, levels %.1f B/write; "
                + "%.1f writes per log message%n", (double) logTaken / n, (double) levelsTaken / n, (double) n / logMessages);
          }
        }
        if (Long.getLong("repl.memory", 0) > 0) {
          System.out.printf("  memory groups' peaks (MiB): %s%n", cl.peakMemory().stream().map(b -> b >> 20).toList());
        }
      }
    }
  }

  /**
   * A state transfer at scale ({@code -Drepl.transfer=N} writes first, the SD mix): RF 3, a
   * backup killed and a fourth server started, while 4 client threads keep writing; reports how
   * long the new server took to hold a complete copy (send-index: the primary's levels; build
   * index, hybrid: a snapshot's pairs) and the writes acknowledged meanwhile.
   */
  @Test
  void stateTransferWhileWriting() throws Exception {
    long n = Long.getLong("repl.transfer", 0);
    assumeTrue(n > 0, "a benchmark: -Drepl.transfer=WRITES runs it");
    for (String mode : List.of("send-index", "build-index")) {
      try (Cluster cl = new Cluster(dir.resolve("transfer-" + mode), mode, 3, 1, Long.getLong("repl.bench.l0", 4 << 20), null)) {
        for (int i = 0; i < 3; i++) cl.start();
        try (ReplicatedClient c = new ReplicatedClient(cl.zk.getConnectString(), 30000)) {
          RegionInfo r = FailoverTest.waitFor(c, "r0", 30000, x -> true);
          load(c, n, true);
          AtomicLong acks = new AtomicLong();
          AtomicBoolean stop = new AtomicBoolean();
          List<Thread> writers = new ArrayList<>();
          for (int t = 0; t < 4; t++) {
            long base = t;
            Thread th = new Thread(() -> {
              for (long i = base; !stop.get(); i += 4) {
                try {
                  c.put(String.format("key%012d", (i * 7919) % n).getBytes(StandardCharsets.UTF_8), new byte[104]);
                  acks.incrementAndGet();
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
              }
            });
            writers.add(th);
            th.start();
          }
          Thread.sleep(2000);
          String victim = r.backups().get(0).server();
          long killed = System.currentTimeMillis();
          cl.kill(victim);
          String added = cl.start();
          FailoverTest.waitFor(c, "r0", 600000, x -> x.servers().contains(added));
          long t0 = System.currentTimeMillis(), acks0 = acks.get();
          FailoverTest.waitReplicated(c, 600000);
          long ms = System.currentTimeMillis() - t0, during = acks.get() - acks0;
          stop.set(true);
          for (Thread th : writers) th.join();
          System.out.printf("%-12s %d writes loaded; backup killed, the new server in the map %d ms later, its copy "
              + "complete %d ms after that, %d writes acknowledged during the copy (%.0f/s)%n", mode, n, t0 - killed, ms,
              during, 1000.0 * during / Math.max(1, ms));
        }
      }
    }
  }

  /**
   * Failover under a full load ({@code -Drepl.failover=KILLS}): send index, hybrid, the SD mix,
   * {@code repl.bench.clients} threads (4 here by default) with {@code repl.bench.window} writes in
   * flight each (32), and the primary killed (kill -9) at a random moment 10-20 s into the load,
   * once per cluster, KILLS times. A promoted backup replays the log since its last install
   * ({@code -Drepl.index.interval}, 5 s for the servers): reports the records it replayed and how
   * long that took (from its log), and the longest time without an acknowledged write after the
   * kill.
   */
  @Test
  void failoverUnderLoad() throws Exception {
    int kills = Integer.getInteger("repl.failover", 0);
    assumeTrue(kills > 0, "a benchmark: -Drepl.failover=KILLS runs it");
    Random random = new Random();
    for (int k = 1; k <= kills; k++) {
      try (Cluster cl = new Cluster(dir.resolve("failover-" + k), "send-index", 3, 1, Long.getLong("repl.bench.l0", 4 << 20),
          "hybrid")) {
        for (int i = 0; i < 3; i++) cl.start();
        try (ReplicatedClient c = new ReplicatedClient(cl.zk.getConnectString(), 30000)) {
          RegionInfo r = FailoverTest.waitFor(c, "r0", 30000, x -> true);
          AtomicLong acks = new AtomicLong(), lastAck = new AtomicLong(System.nanoTime()), killedAt = new AtomicLong(Long.MAX_VALUE),
              longestGap = new AtomicLong();
          AtomicBoolean stop = new AtomicBoolean();
          AtomicReference<Throwable> failed = new AtomicReference<>();
          List<Thread> writers = new ArrayList<>();
          int clients = Integer.getInteger("repl.bench.clients", 4), window = Integer.getInteger("repl.bench.window", 32);
          AtomicLong next = new AtomicLong();
          for (int t = 0; t < clients; t++) {
            Thread th = new Thread(() -> {
              byte[][] values = {new byte[9], new byte[104], new byte[1004]};
              Semaphore inFlight = new Semaphore(window);
              try {
                while (!stop.get() && failed.get() == null) {
                  long key = (next.getAndIncrement() * 7919) % 5_000_000;
                  inFlight.acquire();
                  c.putAsync(String.format("user%020d", key).getBytes(StandardCharsets.UTF_8), values[key % 5 < 3 ? 0 : key % 5 == 3 ? 1 : 2])
                      .whenComplete((v, e) -> {
                        if (e != null) {
                          failed.compareAndSet(null, e);
                        } else {
                          long now = System.nanoTime(), prev = lastAck.getAndSet(now), from = Math.max(prev, killedAt.get());
                          if (now > from) longestGap.accumulateAndGet(now - from, Math::max);
                          acks.incrementAndGet();
                        }
                        inFlight.release();
                      });
                }
                inFlight.acquire(window);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
            writers.add(th);
            th.start();
          }
          Thread.sleep(10_000 + random.nextInt(10_000));
          long acksBefore = acks.get();
          killedAt.set(System.nanoTime());
          cl.kill(r.primary().server());
          Thread.sleep(15_000);
          stop.set(true);
          for (Thread th : writers) th.join();
          if (failed.get() != null) throw new IllegalStateException(failed.get());
          RegionInfo after = FailoverTest.waitFor(c, "r0", 30000, x -> !x.primary().server().equals(r.primary().server()));
          String promoted = cl.log(after.primary().server()).lines().filter(l -> l.contains("promoted"))
              .map(l -> l.substring(l.indexOf("region"))).findFirst().orElse("no promotion in its log");
          System.out.printf("kill %d: %d writes acknowledged before it; longest time without an acknowledgement after it %d ms;"
              + " %d acknowledged in the 15 s after it; %s%n", k, acksBefore, longestGap.get() / 1_000_000, acks.get() - acksBefore,
              promoted);
        }
      }
    }
  }

  @Test
  void sendIndexVersusBuildIndex() throws Exception {
    long n = Long.getLong("repl.bench", 0);
    assumeTrue(n > 0, "a benchmark: -Drepl.bench=WRITES runs it");
    // Every run places values alike (-Drepl.bench.placement: in-place, the default, or hybrid),
    // so only the mode differs; the two modes alternate (-Drepl.bench.rounds, 1 by default), so
    // that a shared machine's changing load falls on both.
    String placement = System.getProperty("repl.bench.placement", "in-place");
    run("unreplicated", "send-index", placement, 1, n);
    int rounds = Integer.getInteger("repl.bench.rounds", 1);
    for (int i = 1; i <= rounds; i++) {
      run("rf3-send-index-" + i, "send-index", placement, 3, n);
      run("rf3-build-index-" + i, "build-index", placement, 3, n);
    }
  }
}
