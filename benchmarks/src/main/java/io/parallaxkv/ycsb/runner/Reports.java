package io.parallaxkv.ycsb.runner;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.ToDoubleFunction;
import java.util.stream.Collectors;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * The runner's outputs: {@code results.csv} (one row per engine, mix and phase),
 * {@code latency.csv} (one row per operation type too), {@code results.md} (the same as markdown
 * tables, with Parallax's ratios to the other engines) and one PNG per mix with throughput,
 * I/O amplification and cycles/op per phase and engine (the layout of the paper's Figure 5).
 */
final class Reports {
  private Reports() {}

  static final String CSV_HEADER = "engine,mix,phase,operations,runtime_ms,throughput_ops_s,errors,"
      + "io_amplification,cycles_per_op,space_amplification,peak_rss_bytes,cgroup_peak_bytes,"
      + "device_read_bytes,device_write_bytes,cancelled_write_bytes,app_bytes_written,"
      + "app_bytes_returned,cpu_ns,disk_bytes,live_bytes";

  static String csvRow(PhaseResult r) {
    return String.join(",", r.engine(), r.mix(), r.phase().id, Long.toString(r.ycsb().operations()),
        Long.toString(r.ycsb().runtimeMs()), fmt(r.ycsb().throughput(), 1), Long.toString(r.ycsb().errors()),
        fmt(r.ioAmplification(), 3), fmt(r.cyclesPerOp(), 0), fmt(r.spaceAmplification(), 3),
        Long.toString(r.peakRssBytes()), Long.toString(r.cgroupPeakBytes()), Long.toString(r.readBytes()),
        Long.toString(r.writeBytes()), Long.toString(r.cancelledWriteBytes()),
        Long.toString(r.appBytesWritten()), Long.toString(r.appBytesReturned()), Long.toString(r.cpuNanos()),
        Long.toString(r.diskBytes()), fmt(r.liveBytes(), 0));
  }

  static String fmt(double v, int decimals) {
    if (Double.isNaN(v)) return "";
    return String.format(Locale.ROOT, "%." + decimals + "f", v);
  }

  static void writeAll(Path out, List<PhaseResult> results, String header) throws IOException {
    Files.createDirectories(out);
    List<String> csv = new ArrayList<>();
    csv.add(CSV_HEADER);
    results.forEach(r -> csv.add(csvRow(r)));
    Files.write(out.resolve("results.csv"), csv);
    List<String> lat = new ArrayList<>();
    lat.add("engine,mix,phase,operation,count,p50_us,p99_us,p99_9_us");
    for (PhaseResult r : results) {
      r.ycsb().latencies().forEach((op, l) -> lat.add(String.join(",", r.engine(), r.mix(), r.phase().id,
          op, Long.toString(l.count()), Long.toString(l.p50()), Long.toString(l.p99()), Long.toString(l.p999()))));
    }
    Files.write(out.resolve("latency.csv"), lat);
    Files.writeString(out.resolve("results.md"), header + markdown(results));
    for (String mix : mixes(results)) {
      List<PhaseResult> m = results.stream().filter(r -> r.mix().equals(mix)).collect(Collectors.toList());
      chart(m, mix, out.resolve("ycsb-" + mix.toLowerCase(Locale.ROOT).replace('/', '-') + ".png"));
    }
  }

  private static Set<String> mixes(List<PhaseResult> results) {
    Set<String> s = new LinkedHashSet<>();
    results.forEach(r -> s.add(r.mix()));
    return s;
  }

  /** The markdown tables: per mix, one row per phase and engine, then Parallax's ratios. */
  static String markdown(List<PhaseResult> results) {
    StringBuilder sb = new StringBuilder();
    for (String mix : mixes(results)) {
      sb.append("\n### Mix ").append(mix).append("\n\n");
      sb.append("| phase | engine | Kops/s | latency p50 / p99 / p99.9 (µs) | I/O amp. | Kcycles/op"
          + " | space amp. | peak RSS MiB | errors |\n");
      sb.append("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n");
      for (PhaseResult r : results) {
        if (!r.mix().equals(mix)) continue;
        sb.append("| ").append(r.phase().label).append(" | ").append(r.engine()).append(" | ")
            .append(fmt(r.ycsb().throughput() / 1000, 1)).append(" | ").append(latencies(r))
            .append(" | ").append(fmt(r.ioAmplification(), 2)).append(" | ")
            .append(fmt(r.cyclesPerOp() / 1000, 1)).append(" | ").append(fmt(r.spaceAmplification(), 2))
            .append(" | ").append(r.peakRssBytes() >> 20).append(" | ").append(r.ycsb().errors()).append(" |\n");
      }
      sb.append(ratios(results, mix));
    }
    return sb.toString();
  }

  private static String latencies(PhaseResult r) {
    return r.ycsb().latencies().entrySet().stream()
        .map(e -> e.getKey() + " " + e.getValue().p50() + " / " + e.getValue().p99() + " / " + e.getValue().p999())
        .collect(Collectors.joining("; "));
  }

  private static String ratios(List<PhaseResult> results, String mix) {
    StringBuilder sb = new StringBuilder();
    for (String other : new String[] {"rocksdb", "blobdb"}) {
      StringBuilder rows = new StringBuilder();
      for (Phase p : Phase.values()) {
        PhaseResult a = find(results, "parallax", mix, p);
        PhaseResult b = find(results, other, mix, p);
        if (a == null || b == null) continue;
        rows.append("| ").append(p.label).append(" | ")
            .append(fmt(a.ycsb().throughput() / b.ycsb().throughput(), 2)).append("× | ")
            .append(fmt(a.ioAmplification() / b.ioAmplification(), 2)).append(" | ")
            .append(fmt(a.cyclesPerOp() / b.cyclesPerOp(), 2)).append(" | ")
            .append(fmt(a.spaceAmplification() / b.spaceAmplification(), 2)).append(" |\n");
      }
      if (rows.length() == 0) continue;
      sb.append("\nParallax ÷ ").append(other).append(" (").append(mix).append("): throughput"
          + " (> 1: Parallax faster), I/O amplification, cycles/op and space amplification (< 1: Parallax"
          + " lower)\n\n| phase | throughput | I/O amp. | cycles/op | space amp. |\n"
          + "| --- | ---: | ---: | ---: | ---: |\n").append(rows);
    }
    return sb.toString();
  }

  static PhaseResult find(List<PhaseResult> results, String engine, String mix, Phase phase) {
    for (PhaseResult r : results) {
      if (r.engine().equals(engine) && r.mix().equals(mix) && r.phase() == phase) return r;
    }
    return null;
  }

  private static final Map<String, Color> COLORS = Map.of(
      "parallax", new Color(0x1f, 0x77, 0xb4), "rocksdb", new Color(0xd6, 0x27, 0x28),
      "blobdb", new Color(0x2c, 0xa0, 0x2c));

  /** Three bar charts side by side: throughput, I/O amplification, Kcycles/op. */
  static void chart(List<PhaseResult> results, String mix, Path file) throws IOException {
    List<CategoryChart> charts = List.of(
        bars(results, mix + ": throughput (Kops/s)", r -> r.ycsb().throughput() / 1000),
        bars(results, mix + ": I/O amplification", PhaseResult::ioAmplification),
        bars(results, mix + ": efficiency (Kcycles/op)", r -> r.cyclesPerOp() / 1000));
    BitmapEncoder.saveBitmap(charts, 1, 3, file.toString(), BitmapEncoder.BitmapFormat.PNG);
  }

  private static CategoryChart bars(List<PhaseResult> results, String title, ToDoubleFunction<PhaseResult> f) {
    CategoryChart c = new CategoryChartBuilder().width(560).height(400).title(title).build();
    c.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
    c.getStyler().setLegendLayout(Styler.LegendLayout.Horizontal);
    c.getStyler().setChartBackgroundColor(Color.WHITE);
    c.getStyler().setPlotGridVerticalLinesVisible(false);
    c.getStyler().setXAxisLabelRotation(0);
    List<String> phases = new ArrayList<>();
    for (Phase p : Phase.values()) {
      if (results.stream().anyMatch(r -> r.phase() == p)) phases.add(p.label);
    }
    Set<String> engines = new LinkedHashSet<>();
    results.forEach(r -> engines.add(r.engine()));
    for (String e : engines) {
      List<Double> ys = new ArrayList<>();
      for (Phase p : Phase.values()) {
        if (!phases.contains(p.label)) continue;
        PhaseResult r = find(results, e, results.get(0).mix(), p);
        double y = r == null ? 0 : f.applyAsDouble(r);
        ys.add(Double.isNaN(y) ? 0 : y);
      }
      c.addSeries(e, phases, ys).setFillColor(COLORS.getOrDefault(e, Color.GRAY));
    }
    return c;
  }
}
