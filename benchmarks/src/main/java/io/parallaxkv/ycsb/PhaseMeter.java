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
 */
public final class PhaseMeter {
  /** System property naming the report file. */
  public static final String REPORT_PROPERTY = "ycsb.phase.report";

  private static final LongAdder WRITTEN = new LongAdder();
  private static final LongAdder RETURNED = new LongAdder();
  private static ProcFs.Io startIo;
  private static long startCpu;
  private static long startWall;
  private static long startMajorFaults;

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

  /** Starts the window: samples CPU time and I/O. */
  static synchronized void begin() {
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
    engineStats.forEach(p::setProperty);
    try (OutputStream out = Files.newOutputStream(Path.of(file))) {
      p.store(out, "ycsb phase report");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
