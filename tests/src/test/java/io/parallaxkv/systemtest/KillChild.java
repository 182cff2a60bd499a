package io.parallaxkv.systemtest;

import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import io.parallaxkv.RegionStats;
import io.parallaxkv.WriteBatch;
import io.parallaxkv.WriteOptions;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The child JVM of {@link KillLoopTest}: opens the volume, runs {@link KillWorkload#THREADS}
 * writer threads from the sequence numbers the parent gives, and never stops by itself; the
 * parent kills it with SIGKILL. Each thread appends an {@link AckLog} record after each write
 * returns. A stats thread appends the region's counters to a file every 50 ms. Any failure
 * exits with status 3, which the parent reports; the end of stdin (the parent died) with 4.
 *
 * <p>Arguments: volume, work directory, run seed, then one start sequence number per thread.
 */
public final class KillChild {
  private KillChild() {}

  public static void main(String[] args) throws Exception {
    Path volume = Path.of(args[0]);
    Path work = Path.of(args[1]);
    long runSeed = Long.parseLong(args[2]);
    long[] start = new long[KillWorkload.THREADS];
    for (int t = 0; t < start.length; t++) start[t] = Long.parseLong(args[3 + t]);

    Thread.setDefaultUncaughtExceptionHandler((th, e) -> {
      System.err.println("kill-loop child: " + th.getName() + " failed");
      e.printStackTrace();
      Runtime.getRuntime().halt(3);
    });
    // The parent holds our stdin open; if it dies without killing us (a test JVM killed by a
    // timeout), end-of-file stops this writer instead of leaving it running for ever.
    Thread orphaned = new Thread(() -> {
      try {
        System.in.transferTo(OutputStream.nullOutputStream());
      } catch (IOException e) {
        System.err.println("kill-loop child: reading stdin failed: " + e);
      }
      Runtime.getRuntime().halt(4);
    }, "parent-watch");
    orphaned.setDaemon(true);
    orphaned.start();
    System.out.println("RECOVERING");
    System.out.flush();
    // Recovers the volume (the previous child may have died before the test checked it on a
    // copy): the log replay overflows the small L0 and runs flushes on the way.
    Parallax db = Parallax.open(volume, KillWorkload.options());
    Region region = db.region(KillWorkload.REGION);
    for (int t = 0; t < start.length; t++) {
      int thread = t;
      long first = start[t];
      Thread w = new Thread(() -> write(region, runSeed, thread, first, work), "writer-" + t);
      w.start();
    }
    Thread stats = new Thread(() -> stats(region, work.resolve("stats.txt")), "stats");
    stats.setDaemon(true);
    stats.start();
    System.out.println("READY " + Parallax.backend());
    System.out.flush();
  }

  private static void write(Region region, long runSeed, int thread, long first, Path work) {
    try (AckLog.Writer acks = AckLog.writer(work, thread); WriteBatch batch = new WriteBatch()) {
      long seq = first;
      while (true) {
        long last = seq;
        boolean sync;
        long invoked = System.nanoTime();
        if (KillWorkload.inBatchBlock(runSeed, thread, seq)) {
          last = (seq - 1) / KillWorkload.BLOCK * KillWorkload.BLOCK + KillWorkload.BLOCK;
          sync = false;
          batch.clear();
          for (long s = seq; s <= last; s++) {
            KillWorkload.Op op = KillWorkload.op(runSeed, thread, s);
            if (op.delete()) batch.delete(op.key());
            else batch.put(op.key(), op.value());
            sync |= op.sync();
          }
          region.write(batch, WriteOptions.sync(sync));
        } else {
          KillWorkload.Op op = KillWorkload.op(runSeed, thread, seq);
          sync = op.sync();
          if (op.delete()) {
            region.delete(op.key(), WriteOptions.sync(sync));
          } else if ((seq & 1) == 0) {
            region.put(op.key(), op.value(), WriteOptions.sync(sync));
          } else {
            byte[] v = op.value();
            region.put(ByteBuffer.wrap(op.key()),
                ByteBuffer.allocateDirect(v.length).put(v).flip(), WriteOptions.sync(sync));
          }
        }
        acks.append(seq, last, sync, invoked, System.nanoTime());
        seq = last + 1;
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void stats(Region region, Path file) {
    try (PrintStream out = new PrintStream(new FileOutputStream(file.toFile(), true), false,
        StandardCharsets.US_ASCII)) {
      while (true) {
        RegionStats s = region.stats();
        RegionStats.Placement p = s.placement();
        out.println(s.compactions() + " " + p.gcRuns() + " " + p.gcBytesRelocated() + " "
            + p.gcSegmentsFreed() + " " + s.writeStalls() + " " + p.smallPuts() + " "
            + p.mediumPuts() + " " + p.largePuts() + " " + p.mediumLogBytesWritten());
        out.flush();
        Thread.sleep(50); // a sampling period, not synchronization
      }
    } catch (IOException | InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }
}
