package io.parallaxkv.ycsb;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.LongAdder;

/**
 * What one benchmark phase cost the process: the bindings call {@link #begin()} when the first
 * client thread opens the store and {@link #end(Map)} after the last one has closed it, so the
 * window covers opening, every operation, and closing (the engine's final flush and sync). The
 * application bytes are counted by {@link KvClient}: key + value bytes of every insert and
 * update, key bytes of every delete, value bytes of every read and key + value bytes of every
 * scanned record.
 *
 * <p>With {@code -Dycsb.phase.report=FILE} (the runner sets it in each child JVM), {@code end}
 * writes the deltas as a properties file: {@code cpuNanos}, {@code wallNanos},
 * {@code readBytes}, {@code writeBytes}, {@code cancelledWriteBytes}, {@code majorFaults} (faults
 * that waited for the device: pages read through a map, not with read calls),
 * {@code peakRssBytes} (VmHWM, which includes mapped file pages), {@code appBytesWritten}, {@code appBytesReturned},
 * plus whatever the engine adds. Without it the meter only counts.
 *
 * <p>The profile without {@code perf}: {@code cpuSystemNanos} is the part of {@code cpuNanos}
 * spent in the kernel (page faults, reads, reclaim under a cgroup limit); {@code cpuNanos.KIND}
 * and {@code cpuSystemNanos.KIND} split it by what the threads are: {@code clients} (YCSB's client
 * threads, each counted when it closes its binding), and the other threads by name up to the
 * store's close ({@code par-compaction}, {@code par-wal}, {@code rocksdb:low}, the JVM's compiler
 * and GC threads). {@code readBytes.KIND} and {@code writeBytes.KIND} split the device I/O the
 * same way, for the threads alive when the store is about to close: the engine's background
 * threads (its WAL writer, compaction, GC); what ended before (YCSB's client threads) is the
 * rest of {@code readBytes} and {@code writeBytes}.
 */
public final class PhaseMeter {
  /** System property naming the report file. */
  public static final String REPORT_PROPERTY = "ycsb.phase.report";
  /** The name {@link KvClient} gives its thread, without the number. */
  static final String CLIENT_THREAD = "ycsb-client";
  /** procfs counts CPU in ticks of 1/100 s (USER_HZ, fixed at 100 by the Linux ABI on x86). */
  private static final long NANOS_PER_TICK = 10_000_000L;

  private static final LongAdder WRITTEN = new LongAdder();
  private static final LongAdder RETURNED = new LongAdder();
  private static ProcFs.Io startIo;
  private static long startCpu;
  private static long startWall;
  private static long startMajorFaults;
  private static ProcFs.Cpu startProcessCpu;
  private static Map<Long, ProcFs.ThreadSample> startThreads;
  private static Map<Long, ProcFs.ThreadSample> closeThreads;
  private static final LongAdder CLIENT_CPU = new LongAdder();
  private static final LongAdder CLIENT_USER = new LongAdder();

  private PhaseMeter() {}

  /** Application bytes written so far: keys and values of puts, keys of deletes. */
  public static long appBytesWritten() {
    return WRITTEN.sum();
  }

  /** Application bytes returned so far: values of reads, keys and values of scanned records. */
  public static long appBytesReturned() {
    return RETURNED.sum();
  }

  static void wrote(long bytes) {
    WRITTEN.add(bytes);
  }

  static void returned(long bytes) {
    RETURNED.add(bytes);
  }

  /** A client thread's CPU between its open and its close of the binding, user part apart. */
  static void clientDone(long cpuNanos, long userNanos) {
    CLIENT_CPU.add(cpuNanos);
    CLIENT_USER.add(userNanos);
  }

  /** Samples every thread's CPU before the store is closed (its threads end with it). */
  static synchronized void beforeClose() {
    closeThreads = ProcFs.selfThreads();
  }

  /** Starts the window: samples CPU time and I/O. */
  static synchronized void begin() {
    startThreads = ProcFs.selfThreads();
    startProcessCpu = ProcFs.selfCpu();
    startIo = ProcFs.selfIo();
    startCpu = ProcFs.selfCpuNanos();
    startWall = System.nanoTime();
    startMajorFaults = ProcFs.selfMajorFaults();
  }

  /** Ends the window and writes the report, if one was asked for. */
  static synchronized void end(Map<String, String> engineStats) {
    String file = System.getProperty(REPORT_PROPERTY);
    if (file == null || startIo == null) return;
    ProcFs.Io io = ProcFs.selfIo().minus(startIo);
    Properties p = new Properties();
    p.setProperty("cpuNanos", Long.toString(ProcFs.selfCpuNanos() - startCpu));
    p.setProperty("wallNanos", Long.toString(System.nanoTime() - startWall));
    p.setProperty("readBytes", Long.toString(io.readBytes()));
    p.setProperty("writeBytes", Long.toString(io.writeBytes()));
    p.setProperty("cancelledWriteBytes", Long.toString(io.cancelledWriteBytes()));
    p.setProperty("majorFaults", Long.toString(ProcFs.selfMajorFaults() - startMajorFaults));
    p.setProperty("peakRssBytes", Long.toString(ProcFs.selfPeakRssBytes()));
    p.setProperty("appBytesWritten", Long.toString(appBytesWritten()));
    p.setProperty("appBytesReturned", Long.toString(appBytesReturned()));
    ProcFs.Cpu cpu = ProcFs.selfCpu().minus(startProcessCpu);
    p.setProperty("cpuSystemNanos", Long.toString(cpu.systemTicks() * NANOS_PER_TICK));
    p.setProperty("cpuNanos.clients", Long.toString(CLIENT_CPU.sum()));
    p.setProperty("cpuSystemNanos.clients", Long.toString(CLIENT_CPU.sum() - CLIENT_USER.sum()));
    if (closeThreads != null) {
      ProcFs.byThreadKind(startThreads, closeThreads).forEach((kind, t) -> {
        ProcFs.Cpu c = t.cpu();
        if (kind.equals(CLIENT_THREAD)) return;
        if (c.userTicks() + c.systemTicks() > 0) {
          p.setProperty("cpuNanos." + kind, Long.toString((c.userTicks() + c.systemTicks()) * NANOS_PER_TICK));
          p.setProperty("cpuSystemNanos." + kind, Long.toString(c.systemTicks() * NANOS_PER_TICK));
        }
        if (t.io().readBytes() > 0) p.setProperty("readBytes." + kind, Long.toString(t.io().readBytes()));
        if (t.io().writeBytes() > 0) p.setProperty("writeBytes." + kind, Long.toString(t.io().writeBytes()));
      });
    }
    engineStats.forEach(p::setProperty);
    try (OutputStream out = Files.newOutputStream(Path.of(file))) {
      p.store(out, "ycsb phase report");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
