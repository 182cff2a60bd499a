package io.parallaxkv.ycsb.runner;

import java.util.Map;

/**
 * What one (engine, mix, phase) measured, and the metrics derived from it.
 *
 * @param engine              engine id
 * @param mix                 KV-size mix
 * @param phase               the phase
 * @param ycsb                YCSB's own report: throughput, latencies, return codes
 * @param readBytes           device bytes read by the child process during the phase
 * @param writeBytes          device bytes written by it
 * @param cancelledWriteBytes bytes it dirtied that were dropped before writeback
 * @param appBytesWritten     keys + values written by the workload
 * @param appBytesReturned    bytes the engine returned to the workload
 * @param cpuNanos            process CPU time (user + system, all threads) of the phase
 * @param cpuHz               nominal clock rate, from {@code /proc/cpuinfo}
 * @param peakRssBytes        the child's VmHWM (includes mapped file pages)
 * @param cgroupPeakBytes     the child's cgroup {@code memory.max_usage_in_bytes} (page cache
 *                            included), or -1 outside cgroup mode
 * @param diskBytes           bytes allocated on disk by the engine's directory after the phase
 * @param liveBytes           live logical bytes after the phase: records × mean key + value
 * @param engineStats         the engine's own counters at the end of the phase
 */
public record PhaseResult(String engine, String mix, Phase phase, YcsbReport ycsb, long readBytes,
    long writeBytes, long cancelledWriteBytes, long appBytesWritten, long appBytesReturned,
    long cpuNanos, double cpuHz, long peakRssBytes, long cgroupPeakBytes, long diskBytes,
    double liveBytes, Map<String, String> engineStats) {

  /** Device bytes read + written over application bytes written + returned. */
  public static double ioAmplification(long read, long written, long appWritten, long appReturned) {
    long app = appWritten + appReturned;
    return app == 0 ? Double.NaN : (double) (read + written) / app;
  }

  /** CPU time × clock rate over operations. */
  public static double cyclesPerOp(long cpuNanos, double hz, long ops) {
    return ops == 0 ? Double.NaN : cpuNanos * 1e-9 * hz / ops;
  }

  /** Bytes on disk over live logical bytes. */
  public static double spaceAmplification(long disk, double live) {
    return live <= 0 ? Double.NaN : disk / live;
  }

  /** I/O amplification of this phase. */
  public double ioAmplification() {
    return ioAmplification(readBytes, writeBytes, appBytesWritten, appBytesReturned);
  }

  /** Cycles per operation of this phase. */
  public double cyclesPerOp() {
    return cyclesPerOp(cpuNanos, cpuHz, ycsb.operations());
  }

  /** Space amplification after this phase. */
  public double spaceAmplification() {
    return spaceAmplification(diskBytes, liveBytes);
  }
}
