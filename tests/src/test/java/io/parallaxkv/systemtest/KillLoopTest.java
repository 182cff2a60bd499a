package io.parallaxkv.systemtest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.parallaxkv.LevelStats;
import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import io.parallaxkv.RegionStats;
import io.parallaxkv.Replication;
import io.parallaxkv.Scanner;
import io.parallaxkv.VolumeStats;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kill -9 loop: a child JVM writes through the Java API ({@link KillChild}) until the test
 * SIGKILLs it at a random moment; the test reopens the volume and checks, per writer thread,
 * that the recovered state is exactly the state after some prefix of the thread's op sequence
 * that contains every acknowledged sync write, that the prefixes of all threads are consistent
 * with one log order, that no value is torn and that scans agree with gets. The next child
 * continues each thread from the recovered prefix. Half of the cycles are checked on a copy of
 * the volume, so that the next child recovers the crashed volume itself, and one in six kills
 * aims at a child that is still recovering. Cycles: {@code -Dsoak.cycles}, else
 * {@code -Dkillloop.cycles} (set per backend by the pom).
 */
class KillLoopTest {
  private static final long READY_TIMEOUT_S = 120;
  private static final String EOF = "(end of the child's output)";

  @TempDir Path dir;

  /** One writer thread's history as far as the test has verified it. */
  static final class ThreadModel {
    final int thread;
    /** The next op the child runs: everything before it is in the volume. */
    long next = 1;
    /** Per key: the seq of the put the verified prefix leaves there, 0 when absent. */
    final long[] state = new long[KillWorkload.KEYS_PER_THREAD];
    List<AckLog.Ack> acks = List.of();
    long pmin;
    long pmax;

    ThreadModel(int thread) {
      this.thread = thread;
    }
  }

  /** Counters summed over the run, reported at the end. */
  static final class Totals {
    long ackedOps;
    long syncAcks;
    long lostUnsynced;
    long killedBeforeReady;
    long checkedOnCopy;
    long childRunMillis;
    long[] child = new long[9]; // the fields of KillChild's stats line
    long parentCompactions;
    long parentGcRuns;
    long firstSegmentsUsed = -1;
    long lastSegmentsUsed;
    long maxSegmentsUsed;
    /** What the segments in use after the last recovery hold. */
    String lastSegmentsHeld = "";
    int deepestLevel;
  }

  @Test
  void acknowledgedWritesSurviveKill9() throws Exception {
    int cycles = Integer.getInteger("soak.cycles", Integer.getInteger("killloop.cycles", 10));
    long seed = Long.getLong("killloop.seed", new SecureRandom().nextLong());
    String backend = Parallax.backend();
    System.out.printf("KillLoopTest[%s]: %d cycles, -Dkillloop.seed=%d%n", backend, cycles, seed);
    Random rnd = new Random(seed);
    Path volume = dir.resolve("kill.vol");
    Path work = Files.createDirectories(dir.resolve("work"));
    ThreadModel[] models = new ThreadModel[KillWorkload.THREADS];
    for (int t = 0; t < models.length; t++) models[t] = new ThreadModel(t);
    Totals totals = new Totals();
    long began = System.nanoTime();
    for (int cycle = 0; cycle < cycles; cycle++) {
      String ctx = "seed " + seed + ", cycle " + cycle;
      runChild(volume, work, seed, models, rnd, totals, ctx);
      for (ThreadModel m : models) m.acks = AckLog.read(work, m.thread);
      // Half of the cycles check a copy, so that the next child itself recovers the crashed
      // volume: crashes on top of crashes, and recoveries of crashed volumes cut short. (A first
      // child killed before it created the volume leaves nothing to copy.)
      if (rnd.nextBoolean() && Files.exists(volume)) {
        Path copy = dir.resolve("checked.vol");
        Files.copy(volume, copy, StandardCopyOption.REPLACE_EXISTING);
        verify(copy, seed, models, totals, ctx + " (checked on a copy)");
        Files.delete(copy);
        totals.checkedOnCopy++;
      } else {
        verify(volume, seed, models, totals, ctx);
      }
      if ((cycle + 1) % 100 == 0) {
        System.out.printf("KillLoopTest[%s]: %d cycles survived; segments in use after the last "
            + "recovery %d: %s (at most %d so far)%n", backend, cycle + 1,
            totals.lastSegmentsUsed, totals.lastSegmentsHeld, totals.maxSegmentsUsed);
      }
    }
    if (cycles >= 10) checkLargeLogHoldsLiveValues(volume);
    long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - began);
    long[] c = totals.child;
    System.out.printf("KillLoopTest[%s]: %d cycles survived in %d s (children ran %d s); "
            + "acknowledged ops %d (%d sync acks), acknowledged unsynced ops lost to kills %d, "
            + "%d kills before the child was ready, %d cycles checked on a copy (the next child "
            + "recovered the crashed volume); children: %d compactions, %d GC runs (%d bytes "
            + "relocated, %d segments freed), %d write stalls, puts small/medium/large %d/%d/%d, "
            + "%d medium-log bytes written; recovering parents: %d compactions, %d GC runs; "
            + "deepest level %d; segments in use after the first/last recovery %d/%d "
            + "(at most %d); the last: %s%n",
        backend, cycles, seconds, totals.childRunMillis / 1000, totals.ackedOps, totals.syncAcks,
        totals.lostUnsynced, totals.killedBeforeReady, totals.checkedOnCopy, c[0], c[1], c[2],
        c[3], c[4], c[5], c[6], c[7], c[8], totals.parentCompactions, totals.parentGcRuns,
        totals.deepestLevel, totals.firstSegmentsUsed, totals.lastSegmentsUsed,
        totals.maxSegmentsUsed, totals.lastSegmentsHeld);
    if (cycles >= 10) {
      assertTrue(c[0] > 0, "the children ran compactions");
      assertTrue(c[1] > 0, "the children ran large-log GC");
      assertTrue(c[5] > 0 && c[6] > 0 && c[7] > 0, "all three size classes were written");
      assertTrue(totals.syncAcks > 0, "sync writes were acknowledged");
      assertTrue(totals.deepestLevel >= 2, "levels spilled below L1");
      assertTrue(c[8] > 0, "flushes wrote transient medium logs");
    }
  }

  private static void runChild(Path volume, Path work, long seed, ThreadModel[] models,
      Random rnd, Totals totals, String ctx) throws Exception {
    for (int t = 0; t < models.length; t++) Files.deleteIfExists(AckLog.file(work, t));
    Path stats = work.resolve("stats.txt");
    Files.deleteIfExists(stats);
    Path stderr = work.resolve("child-stderr.txt");
    List<String> args =
        new ArrayList<>(List.of(volume.toString(), work.toString(), Long.toString(seed)));
    for (ThreadModel m : models) args.add(Long.toString(m.next));
    List<String> cmd = ChildJvm.command(KillChild.class, args);
    Process child =
        new ProcessBuilder(cmd).directory(work.toFile()).redirectError(stderr.toFile()).start();
    long started = System.nanoTime();
    try {
      BlockingQueue<String> lines = new LinkedBlockingQueue<>();
      Thread reader = new Thread(() -> {
        try (BufferedReader out = new BufferedReader(
            new InputStreamReader(child.getInputStream(), StandardCharsets.US_ASCII))) {
          for (String l = out.readLine(); l != null; l = out.readLine()) lines.add(l);
        } catch (IOException e) {
          lines.add("stdout failed: " + e);
        }
        lines.add(EOF);
      }, "kill-loop-child-stdout");
      reader.setDaemon(true);
      reader.start();
      expectLine(lines, "RECOVERING", child, stderr, ctx);
      String ready = "READY " + Parallax.backend();
      if (rnd.nextInt(6) == 0) {
        // Kill while the child recovers (70-250 ms here): its replay, flush and checkpoints
        // are cut short.
        if (child.waitFor(rnd.nextInt(250), TimeUnit.MILLISECONDS)) {
          fail(ctx + ": the child exited by itself: " + childOutput(child, stderr));
        }
        if (!lines.contains(ready)) totals.killedBeforeReady++;
      } else {
        expectLine(lines, ready, child, stderr, ctx);
        // Short runs stop writers early; long ones let levels grow and GC start.
        long delay = rnd.nextBoolean() ? rnd.nextInt(600) : 600 + rnd.nextInt(1800);
        if (child.waitFor(delay, TimeUnit.MILLISECONDS)) {
          fail(ctx + ": the child exited by itself: " + childOutput(child, stderr));
        }
      }
    } finally {
      child.destroyForcibly();
      child.waitFor();
      totals.childRunMillis += TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    }
    String last = null;
    if (Files.exists(stats)) {
      String text = Files.readString(stats, StandardCharsets.US_ASCII);
      String[] lines = text.split("\n");
      int complete = text.endsWith("\n") ? lines.length : lines.length - 1;
      if (complete > 0) last = lines[complete - 1];
    }
    if (last != null) {
      String[] f = last.trim().split(" ");
      for (int i = 0; i < totals.child.length; i++) totals.child[i] += Long.parseLong(f[i]);
    }
  }

  private static void expectLine(BlockingQueue<String> lines, String expected, Process child,
      Path stderr, String ctx) throws Exception {
    String line = lines.poll(READY_TIMEOUT_S, TimeUnit.SECONDS);
    if (!expected.equals(line)) {
      fail(ctx + ": expected the child to say " + expected + " within " + READY_TIMEOUT_S
          + " s, got " + line + "; " + childOutput(child, stderr));
    }
  }

  private static String childOutput(Process child, Path stderr) throws IOException {
    return "exit " + (child.isAlive() ? "(running)" : child.exitValue()) + ", stderr:\n"
        + Files.readString(stderr);
  }

  /**
   * Reopens the volume after a child died and checks it against the models and the children's
   * acknowledgements (read into {@code m.acks}); then advances each model to its recovered prefix.
   */
  static void verify(Path volume, long seed, ThreadModel[] models, Totals totals,
      String ctx) {
    try (Parallax db = Parallax.open(volume, KillWorkload.options());
        Region region = db.region(KillWorkload.REGION)) {
      byte[][][] observed = new byte[models.length][KillWorkload.KEYS_PER_THREAD][];
      for (ThreadModel m : models) {
        for (int k = 0; k < KillWorkload.KEYS_PER_THREAD; k++) {
          observed[m.thread][k] = region.get(KillWorkload.key(m.thread, k));
        }
      }
      checkScanAgreesWithGets(region, observed, ctx);
      for (ThreadModel m : models) findPrefix(m, seed, observed[m.thread], totals, ctx);
      checkOneLogOrder(models, ctx);
      for (ThreadModel m : models) {
        advance(m, seed, m.pmax);
        long lastAcked = m.acks.isEmpty() ? m.next - 1 : m.acks.get(m.acks.size() - 1).last();
        totals.lostUnsynced += Math.max(0, lastAcked - m.pmax);
        m.next = m.pmax + 1;
      }
      RegionStats rs = region.stats();
      VolumeStats vs = db.stats();
      totals.parentCompactions += rs.compactions();
      totals.parentGcRuns += rs.placement().gcRuns();
      totals.deepestLevel = Math.max(totals.deepestLevel, rs.deepestLevel());
      if (totals.firstSegmentsUsed < 0) totals.firstSegmentsUsed = vs.segmentsUsed();
      totals.lastSegmentsUsed = vs.segmentsUsed();
      totals.maxSegmentsUsed = Math.max(totals.maxSegmentsUsed, vs.segmentsUsed());
      totals.lastSegmentsHeld = segmentsHeld(rs);
    }
  }

  /**
   * After the last kill, once merged: the large log holds no more than the live large values it
   * must, plus what GC leaves (segments under its threshold, the heads). A kill loses the WAL
   * records of values already in the large log; unless the next open counts those values as
   * garbage, they stay for good, and the volume grew to three times its live data that way.
   */
  private static void checkLargeLogHoldsLiveValues(Path volume) {
    long segment = Replication.SEGMENT_SIZE;
    try (Parallax db = Parallax.open(volume, KillWorkload.options());
        Region region = db.region(KillWorkload.REGION)) {
      region.compact();
      long live = 0;
      try (Scanner s = region.scanner()) {
        for (; s.isValid(); s.next()) {
          long n = s.value().length;
          // Values from 1 KiB go to the large log; one over a segment fills a run of its own.
          if (n > segment - 64) live += (n + 64 + segment - 1) / segment * segment;
          else if (n >= 1024) live += n + 64;
        }
      }
      RegionStats.Placement p = region.stats().placement();
      long held = p.largeLogSegments() * segment - p.largeLogGarbageBytes();
      System.out.printf("KillLoopTest[%s]: after a full compaction the large log holds %d MiB "
          + "not known to be garbage in %d segments, for %d MiB of live values%n",
          Parallax.backend(), held >> 20, p.largeLogSegments(), live >> 20);
      assertTrue(held <= live + live / 4 + 8 * segment, "the large log holds " + (held >> 20)
          + " MiB not known to be garbage for " + (live >> 20) + " MiB of live values");
    }
  }

  /** The region's segments by owner, to tell a leak from a log or level that is merely large. */
  private static String segmentsHeld(RegionStats rs) {
    StringBuilder levels = new StringBuilder();
    for (LevelStats l : rs.levels()) {
      levels.append(levels.length() == 0 ? "" : "/").append(l.segments());
    }
    RegionStats.Placement p = rs.placement();
    return String.format("WAL %d, levels %s, medium logs %d, large log %d (%d MiB garbage)",
        rs.walSegments(), levels, p.mediumLogSegments(), p.largeLogSegments(),
        p.largeLogGarbageBytes() >> 20);
  }

  /** A full scan returns exactly the keys that gets found, with the same values, in order. */
  private static void checkScanAgreesWithGets(Region region, byte[][][] observed, String ctx) {
    int[] present = new int[observed.length];
    for (int t = 0; t < observed.length; t++) {
      for (byte[] v : observed[t]) if (v != null) present[t]++;
    }
    int[] scanned = new int[observed.length];
    try (Scanner s = region.scanner()) {
      byte[] prev = null;
      for (; s.isValid(); s.next()) {
        byte[] key = s.key();
        if (prev != null) assertTrue(Arrays.compareUnsigned(prev, key) < 0, ctx + ": scan order");
        prev = key;
        int thread = key.length > 1 ? key[1] - '0' : -1;
        int k = thread >= 0 && thread < observed.length ? KillWorkload.keyIndex(key, thread) : -1;
        assertTrue(k >= 0, ctx + ": the scan returned a key no writer writes: "
            + new String(key, StandardCharsets.US_ASCII));
        assertNotNull(observed[thread][k], ctx + ": the scan returned " + new String(key,
            StandardCharsets.US_ASCII) + " but get did not find it");
        assertArrayEquals(observed[thread][k], s.value(), ctx + ": scan and get disagree on "
            + new String(key, StandardCharsets.US_ASCII));
        scanned[thread]++;
      }
    }
    assertArrayEquals(present, scanned, ctx + ": keys found by get per thread vs by the scan");
  }

  /**
   * Sets {@code m.pmin}/{@code m.pmax}: the smallest and largest p such that the thread's keys
   * hold exactly the state after ops 1..p, with p at least the last acknowledged sync write,
   * at most the op that may have been in flight, and not inside a batch.
   */
  private static void findPrefix(ThreadModel m, long seed, byte[][] observed, Totals totals,
      String ctx) {
    long start = m.next;
    long required = start - 1;
    long expectFirst = start;
    for (AckLog.Ack a : m.acks) {
      assertEquals(expectFirst, a.first(), ctx + ": thread " + m.thread + "'s acks are not contiguous");
      expectFirst = a.last() + 1;
      if (a.sync()) {
        required = a.last();
        totals.syncAcks++;
      }
      totals.ackedOps += a.last() - a.first() + 1;
    }
    long inFlight = expectFirst;
    long upper = KillWorkload.inBatchBlock(seed, m.thread, inFlight)
        ? (inFlight - 1) / KillWorkload.BLOCK * KillWorkload.BLOCK + KillWorkload.BLOCK
        : inFlight;

    long[] seen = new long[KillWorkload.KEYS_PER_THREAD];
    for (int k = 0; k < seen.length; k++) {
      byte[] v = observed[k];
      if (v == null) continue;
      KillWorkload.Header h = KillWorkload.header(v);
      String where = ctx + ": thread " + m.thread + " key " + k;
      assertNotNull(h, where + ": torn or foreign value of " + v.length + " bytes");
      assertEquals(m.thread, h.thread(), where + ": value of another thread");
      assertEquals(k, h.keyIndex(), where + ": value of another key");
      assertTrue(h.seq() >= 1 && h.seq() <= upper, where + ": value of op " + h.seq()
          + ", which was never issued (ops up to " + upper + ")");
      KillWorkload.Op op = KillWorkload.op(seed, m.thread, h.seq());
      assertTrue(!op.delete() && op.keyIndex() == k, where + ": op " + h.seq() + " did not put it");
      assertArrayEquals(op.value(), v, where + ": value of op " + h.seq() + " is corrupt");
      seen[k] = h.seq();
    }

    long[] model = m.state.clone();
    int mismatches = 0;
    for (int k = 0; k < model.length; k++) if (model[k] != seen[k]) mismatches++;
    long pmin = -1;
    long pmax = -1;
    for (long p = start - 1; p <= upper; p++) {
      if (p >= start) {
        KillWorkload.Op op = KillWorkload.op(seed, m.thread, p);
        int k = op.keyIndex();
        boolean was = model[k] == seen[k];
        model[k] = op.delete() ? 0 : p;
        boolean is = model[k] == seen[k];
        if (was && !is) mismatches++;
        if (!was && is) mismatches--;
      }
      if (p >= required && mismatches == 0 && KillWorkload.isBoundary(seed, m.thread, p)) {
        if (pmin < 0) pmin = p;
        pmax = p;
      }
    }
    if (pmin < 0) fail(noPrefix(m, seed, seen, start, required, upper, ctx));
    m.pmin = pmin;
    m.pmax = pmax;
  }

  private static String noPrefix(ThreadModel m, long seed, long[] seen, long start, long required,
      long upper, String ctx) {
    long[] model = m.state.clone();
    for (long p = start; p <= required; p++) {
      KillWorkload.Op op = KillWorkload.op(seed, m.thread, p);
      model[op.keyIndex()] = op.delete() ? 0 : p;
    }
    StringBuilder sb = new StringBuilder(ctx).append(": thread ").append(m.thread)
        .append(": the recovered keys match no prefix of its ops ").append(start).append("..")
        .append(upper).append(" that includes the last acknowledged sync write ").append(required)
        .append(" (a key's state is the seq of the put it holds, 0 when absent). After op ")
        .append(required).append(", differing keys:");
    int shown = 0;
    for (int k = 0; k < model.length && shown < 20; k++) {
      if (model[k] != seen[k]) {
        sb.append("\n  key ").append(k).append(": expected ").append(model[k]).append(", found ")
            .append(seen[k]);
        shown++;
      }
    }
    return sb.toString();
  }

  /**
   * The WAL is one sequence: if a thread's op survived, every op another thread had seen
   * acknowledged before that op was invoked (so with a smaller LSN) survived too.
   */
  private static void checkOneLogOrder(ThreadModel[] models, String ctx) {
    for (ThreadModel b : models) {
      long invoked = invocationLowerBound(b, b.pmin);
      if (invoked == Long.MIN_VALUE) continue;
      for (ThreadModel a : models) {
        if (a == b) continue;
        long mustHave = a.next - 1;
        for (AckLog.Ack ack : a.acks) {
          if (ack.ackedNanos() < invoked) mustHave = ack.last();
        }
        assertTrue(a.pmax >= mustHave, ctx + ": thread " + b.thread + "'s op " + b.pmin
            + " survived, but thread " + a.thread + "'s op " + mustHave + ", acknowledged before "
            + "it was invoked, did not (thread " + a.thread + " recovered up to " + a.pmax + ")");
      }
    }
  }

  /** When op {@code seq} was invoked at the earliest, or MIN_VALUE if before this cycle. */
  private static long invocationLowerBound(ThreadModel m, long seq) {
    if (seq < m.next) return Long.MIN_VALUE;
    AckLog.Ack previous = null;
    for (AckLog.Ack a : m.acks) {
      if (a.first() <= seq && seq <= a.last()) return a.invokedNanos();
      previous = a;
    }
    return previous == null ? Long.MIN_VALUE : previous.ackedNanos(); // the op in flight
  }

  private static void advance(ThreadModel m, long seed, long upTo) {
    for (long p = m.next; p <= upTo; p++) {
      KillWorkload.Op op = KillWorkload.op(seed, m.thread, p);
      m.state[op.keyIndex()] = op.delete() ? 0 : p;
    }
  }
}
