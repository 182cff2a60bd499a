package io.parallaxkv.ycsb.runner;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The parts of YCSB's text report ({@code site.ycsb.measurements.exporter.TextMeasurementsExporter}
 * with {@code measurementtype=hdrhistogram}, percentiles 50, 99, 99.9) the runner uses.
 *
 * @param runtimeMs  {@code [OVERALL], RunTime(ms)}
 * @param throughput {@code [OVERALL], Throughput(ops/sec)}
 * @param latencies  per operation type (READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE…)
 * @param errors     returns other than OK, all operation types and VERIFY included
 */
public record YcsbReport(long runtimeMs, double throughput, Map<String, Latency> latencies, long errors) {
  /**
   * Latency percentiles of one operation type, in microseconds.
   *
   * @param count operations of this type
   * @param p50   median
   * @param p99   99th percentile
   * @param p999  99.9th percentile
   */
  public record Latency(long count, long p50, long p99, long p999) {}

  /** YCSB's operation count: throughput × run time, which is how YCSB derives throughput. */
  public long operations() {
    return Math.round(throughput * runtimeMs / 1000.0);
  }

  /** Parses the report's lines ({@code [SECTION], metric, value}). */
  public static YcsbReport parse(List<String> lines) {
    long runtime = -1;
    double throughput = -1;
    long errors = 0;
    Map<String, long[]> lat = new LinkedHashMap<>();
    for (String line : lines) {
      String[] f = line.split(",\\s*", 3);
      if (f.length != 3 || !f[0].startsWith("[")) continue;
      String section = f[0].substring(1, f[0].length() - 1);
      String metric = f[1].trim();
      String value = f[2].trim();
      if (section.equals("OVERALL")) {
        if (metric.equals("RunTime(ms)")) runtime = (long) Double.parseDouble(value);
        if (metric.equals("Throughput(ops/sec)")) throughput = Double.parseDouble(value);
        continue;
      }
      if (metric.startsWith("Return=")) {
        if (!metric.equals("Return=OK")) errors += Long.parseLong(value);
        continue;
      }
      if (section.startsWith("TOTAL_GC") || section.equals("CLEANUP") || section.equals("VERIFY")
          || section.startsWith("INTENDED")) {
        continue;
      }
      int slot = switch (metric) {
        case "Operations" -> 0;
        case "50thPercentileLatency(us)" -> 1;
        case "99thPercentileLatency(us)" -> 2;
        case "99.9PercentileLatency(us)" -> 3;
        default -> -1;
      };
      if (slot >= 0) lat.computeIfAbsent(section, k -> new long[4])[slot] = (long) Double.parseDouble(value);
    }
    if (runtime < 0 || throughput < 0) throw new IllegalArgumentException("not a YCSB report: no [OVERALL] lines");
    Map<String, Latency> m = new LinkedHashMap<>();
    lat.forEach((k, v) -> {
      if (v[0] > 0) m.put(k, new Latency(v[0], v[1], v[2], v[3]));
    });
    return new YcsbReport(runtime, throughput, m, errors);
  }
}
