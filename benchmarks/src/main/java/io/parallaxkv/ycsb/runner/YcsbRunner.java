package io.parallaxkv.ycsb.runner;

import io.parallaxkv.ycsb.KvClient;
import io.parallaxkv.ycsb.MixWorkload;
import io.parallaxkv.ycsb.PhaseMeter;
import io.parallaxkv.ycsb.ProcFs;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Runs YCSB Load A and Run A–F against Parallax, RocksDB and BlobDB and reports, per engine and
 * phase: throughput, latency percentiles, I/O amplification, cycles/op, space amplification and
 * peak RSS (docs/benchmarks.md). Each (engine, phase) is a child JVM running YCSB's own
 * {@code site.ycsb.Client} with the engine's binding and {@link MixWorkload}, so its
 * {@code /proc} counters are the phase's alone; the database directory persists from phase to
 * phase. With no arguments: an SD comparison of the three engines, 100 000 records, in
 * {@code target/ycsb-data}, results in {@code target/ycsb-results}.
 */
@Command(name = "ycsb-runner", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Runs YCSB Load A, Run A-F on Parallax, RocksDB and BlobDB; writes CSV, markdown and PNG charts.")
public final class YcsbRunner implements Callable<Integer> {
  @Option(names = {"-e", "--engines"}, split = ",", converter = EngineConverter.class,
      defaultValue = "parallax,rocksdb,blobdb", description = "Engines, in run order (default: ${DEFAULT-VALUE}).")
  List<Engine> engines;

  @Option(names = {"-m", "--mixes"}, split = ",", defaultValue = "SD",
      description = "KV-size mixes: S, M, L, SD, MD, LD or small/medium/large percentages (default: ${DEFAULT-VALUE}).")
  List<String> mixes;

  @Option(names = {"-w", "--phases"}, split = ",", converter = PhaseConverter.class,
      defaultValue = "load-a,a,b,c,d,e,f", description = "Phases, in order (default: ${DEFAULT-VALUE}).")
  List<Phase> phases;

  @Option(names = {"-n", "--records"}, defaultValue = "100000", description = "Records loaded (default: ${DEFAULT-VALUE}).")
  long records;

  @Option(names = {"-o", "--operations"}, defaultValue = "100000",
      description = "Operations of each run phase but E (default: ${DEFAULT-VALUE}).")
  long operations;

  @Option(names = "--scan-operations", defaultValue = "0",
      description = "Operations of Run E (scans); 0: a fifth of --operations.")
  long scanOperations;

  @Option(names = {"-t", "--threads"}, defaultValue = "2", description = "YCSB client threads (default: ${DEFAULT-VALUE}).")
  int threads;

  @Option(names = "--dir", defaultValue = "target/ycsb-data", description = "Data directory (default: ${DEFAULT-VALUE}).")
  Path dataDir;

  @Option(names = "--out", defaultValue = "target/ycsb-results", description = "Results directory (default: ${DEFAULT-VALUE}).")
  Path outDir;

  @Option(names = "--memory-mode", defaultValue = "auto",
      description = "cgroup: each child in a cgroup v1 memory group limited to --cgroup-limit (equal memory,"
          + " page cache included); page-cache: buffered reads, no limit; auto: cgroup where a memory group"
          + " can be created here, else page-cache, saying why (default: ${DEFAULT-VALUE}).")
  String memoryMode;

  @Option(names = "--memory-budget", defaultValue = "256m",
      description = "Block cache of RocksDB and BlobDB (Parallax reads through the page cache) (default: ${DEFAULT-VALUE}).")
  String memoryBudget;

  @Option(names = "--l0-size", defaultValue = "64m",
      description = "Parallax L0 size = RocksDB write buffer size; two of each (default: ${DEFAULT-VALUE}).")
  String l0Size;

  @Option(names = "--cgroup-limit", defaultValue = "2g",
      description = "memory.limit_in_bytes of each child's group in cgroup mode (default: ${DEFAULT-VALUE}).")
  String cgroupLimit;

  @Option(names = "--parallax-placement", defaultValue = "HYBRID",
      description = "HYBRID, IN_PLACE or IN_LOG (default: ${DEFAULT-VALUE}).")
  String placement;

  @Option(names = "--large-threshold", defaultValue = "1024",
      description = "Parallax's large threshold (key + value); BlobDB's min_blob_size is this minus the 24-byte key (default: ${DEFAULT-VALUE}).")
  int largeThreshold;

  @Option(names = "--java", description = "java of the child JVMs (default: the runner's).")
  Path java;

  @Option(names = "--jvm-opts", defaultValue = "-Xms1g -Xmx1g", description = "Child JVM options (default: ${DEFAULT-VALUE}).")
  String jvmOpts;

  @Option(names = "--backend", description = "Parallax backend, ffm or jni (default: ffm on JDK 22+, else jni).")
  String backend;

  @Option(names = "--allocator", defaultValue = "auto",
      description = "auto (jemalloc if installed), jemalloc or glibc, for every child (default: ${DEFAULT-VALUE}).")
  String allocator;

  @Option(names = {"-p", "--prop"}, description = "Extra YCSB/binding property for every child, name=value (repeatable).")
  Map<String, String> extra = new LinkedHashMap<>();

  @Option(names = "--keep-data", description = "Keep each engine's data directory after its phases.")
  boolean keepData;

  static final String JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
  private static final Pattern STATUS = Pattern.compile("(\\d+) sec: (\\d+) operations;\\s*([\\d.]+) current ops/sec");

  /** Parses {@link Engine} names for picocli. */
  static final class EngineConverter implements CommandLine.ITypeConverter<Engine> {
    @Override
    public Engine convert(String value) {
      return Engine.parse(value);
    }
  }

  /** Parses {@link Phase} names for picocli. */
  static final class PhaseConverter implements CommandLine.ITypeConverter<Phase> {
    @Override
    public Phase convert(String value) {
      return Phase.parse(value);
    }
  }

  /** Runs the command line and exits with its status. */
  public static void main(String[] args) {
    System.exit(new CommandLine(new YcsbRunner()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    for (String m : mixes) MixWorkload.Mix.parse(m);
    switch (memoryMode) {
      case "cgroup", "page-cache" -> { }
      case "auto" -> {
        String why = CgroupV1.unavailableReason();
        memoryMode = why == null ? "cgroup" : "page-cache";
        if (why != null) {
          System.out.println("memory mode: page-cache, NOT equal memory (no memory cgroup here: " + why
              + "); the engines' results are then measured with the whole dataset cacheable.");
        }
      }
      default -> throw new CommandLine.ParameterException(new CommandLine(this),
          "--memory-mode must be auto, cgroup or page-cache");
    }
    System.out.println("memory mode: " + memoryMode + (memoryMode.equals("cgroup")
        ? " (equal memory: each engine's JVM limited to " + cgroupLimit + ", page cache included)"
        : " (no limit: the page cache may hold the whole dataset)"));
    Path javaBin = java != null ? java : Path.of(System.getProperty("java.home"), "bin", "java");
    String preload = preload();
    double hz = ProcFs.cpuHz(Path.of("/proc/cpuinfo"));
    long scanOps = scanOperations > 0 ? scanOperations : Math.max(1, operations / 5);
    List<PhaseResult> results = new ArrayList<>();
    Files.createDirectories(outDir);
    int total = engines.size() * mixes.size() * phases.size();
    int step = 0;
    String header = header(javaBin, preload, hz, scanOps);
    System.out.print(header);
    for (String mixName : mixes) {
      MixWorkload.Mix mix = MixWorkload.Mix.parse(mixName);
      double meanRecord = mix.meanRecordBytes(new int[] {9, 104, 1004});
      for (Engine engine : engines) {
        Path dir = dataDir.resolve(mix.name().replace('/', '-')).resolve(engine.id).toAbsolutePath();
        long live = 0;
        for (Phase phase : phases) {
          step++;
          if (phase.load) {
            deleteRecursively(dir);
            live = 0;
          }
          long present = phase.load ? records : Math.max(live, records);
          long ops = phase.load ? records : phase == Phase.RUN_E ? scanOps : operations;
          String tag = String.format(Locale.ROOT, "[%d/%d] %s %s %s", step, total, engine.id, mix.name(), phase.label);
          PhaseResult r = runPhase(engine, mix.name(), phase, dir, present, ops, javaBin, preload, hz, tag);
          YcsbReport.Latency ins = r.ycsb().latencies().get("INSERT");
          live = (phase.load ? 0 : present) + (ins == null ? 0 : ins.count());
          long disk = diskBytes(dir);
          r = new PhaseResult(r.engine(), r.mix(), r.phase(), r.ycsb(), r.readBytes(), r.writeBytes(),
              r.cancelledWriteBytes(), r.appBytesWritten(), r.appBytesReturned(), r.cpuNanos(), r.cpuHz(),
              r.peakRssBytes(), r.cgroupPeakBytes(), disk, live * meanRecord, r.engineStats());
          results.add(r);
          System.out.printf(Locale.ROOT, "%-40s %9.1f Kops/s  I/O amp %6.2f  %8.1f Kcycles/op  space amp %5.2f  errors %d%n",
              tag, r.ycsb().throughput() / 1000, r.ioAmplification(), r.cyclesPerOp() / 1000,
              r.spaceAmplification(), r.ycsb().errors());
          Reports.writeAll(outDir, results, header);
        }
        if (!keepData) deleteRecursively(dir);
      }
    }
    System.out.println(Reports.markdown(results));
    System.out.println("results: " + outDir.toAbsolutePath() + " (results.csv, latency.csv, results.md, ycsb-*.png)");
    return results.stream().anyMatch(r -> r.ycsb().errors() > 0) ? 2 : 0;
  }

  private String preload() {
    switch (allocator) {
      case "glibc":
        return null;
      case "jemalloc":
        if (!Files.exists(Path.of(JEMALLOC))) throw new IllegalStateException("--allocator jemalloc: no " + JEMALLOC);
        return JEMALLOC;
      case "auto":
        return Files.exists(Path.of(JEMALLOC)) ? JEMALLOC : null;
      default:
        throw new IllegalArgumentException("--allocator must be auto, jemalloc or glibc");
    }
  }

  private String header(Path javaBin, String preload, double hz, long scanOps) {
    return "# YCSB: " + engines.stream().map(e -> e.id).reduce((a, b) -> a + ", " + b).orElse("") + "\n\n"
        + "Run " + LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME) + " on "
        + ProcFs.cpuModel(Path.of("/proc/cpuinfo")) + " (" + Runtime.getRuntime().availableProcessors()
        + " CPUs, " + Reports.fmt(hz / 1e9, 2) + " GHz nominal). " + records + " records, " + operations
        + " operations per run phase (" + scanOps + " for Run E), " + threads + " client threads; memory mode "
        + memoryMode + (memoryMode.equals("cgroup") ? " (limit " + cgroupLimit + " per child)" : "")
        + "; block cache " + memoryBudget + ", L0 / write buffer " + l0Size + " (x2); Parallax placement "
        + placement + (backend != null ? ", backend " + backend : "") + "; child JVM " + javaBin + " " + jvmOpts
        + "; allocator " + (preload != null ? "jemalloc" : "glibc malloc") + ".\n";
  }

  /** The YCSB properties of one child: workload, sizes, measurement, engine options. */
  Map<String, String> properties(Engine engine, String mix, Phase phase, Path dir, long present, long ops, Path export) {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("workload", MixWorkload.class.getName());
    p.put("mix", mix);
    p.put("recordcount", Long.toString(present));
    p.put("operationcount", Long.toString(ops));
    p.putAll(phase.properties());
    p.put("measurementtype", "hdrhistogram");
    p.put("hdrhistogram.percentiles", "50,99,99.9");
    p.put("exportfile", export.toString());
    p.put("status.interval", "1");
    p.put(KvClient.UPDATE_PROPERTY, "replace");
    p.put(engine.dirProperty, dir.toString());
    switch (engine) {
      case PARALLAX:
        p.put("parallax.l0size", l0Size);
        p.put("parallax.placement", placement);
        p.put("parallax.largethreshold", Integer.toString(largeThreshold));
        break;
      case BLOBDB:
        p.put("blobdb.minblobsize", Integer.toString(largeThreshold - MixWorkload.KEY_BYTES));
        p.putAll(rocksProperties());
        break;
      default:
        p.putAll(rocksProperties());
    }
    p.putAll(extra);
    return p;
  }

  private Map<String, String> rocksProperties() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("rocksdb.cachesize", memoryBudget);
    p.put("rocksdb.writebuffersize", l0Size);
    p.put("rocksdb.maxwritebuffers", "2");
    p.put("rocksdb.directreads", "false");
    return p;
  }

  private PhaseResult runPhase(Engine engine, String mix, Phase phase, Path dir, long present, long ops,
      Path javaBin, String preload, double hz, String tag) throws IOException, InterruptedException {
    String base = engine.id + "-" + mix.replace('/', '-') + "-" + phase.id;
    Path logs = outDir.resolve("logs");
    Files.createDirectories(logs);
    Path export = logs.resolve(base + ".ycsb.txt").toAbsolutePath();
    Path report = logs.resolve(base + ".phase.properties").toAbsolutePath();
    Path log = logs.resolve(base + ".log").toAbsolutePath();
    Files.deleteIfExists(export);
    Files.deleteIfExists(report);
    List<String> cmd = new ArrayList<>();
    cmd.add(javaBin.toString());
    if (javaFeature(javaBin) >= 17) cmd.add("--enable-native-access=ALL-UNNAMED");
    for (String o : jvmOpts.trim().split("\\s+")) {
      if (!o.isEmpty()) cmd.add(o);
    }
    cmd.add("-D" + PhaseMeter.REPORT_PROPERTY + "=" + report);
    if (backend != null) cmd.add("-Dparallax.backend=" + backend);
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add("site.ycsb.Client");
    cmd.add(phase.load ? "-load" : "-t");
    cmd.add("-db");
    cmd.add(engine.binding);
    cmd.add("-threads");
    cmd.add(Integer.toString(threads));
    cmd.add("-s");
    properties(engine, mix, phase, dir, present, ops, export).forEach((k, v) -> {
      cmd.add("-p");
      cmd.add(k + "=" + v);
    });
    CgroupV1 group = memoryMode.equals("cgroup")
        ? CgroupV1.create("ycsb-" + ProcessHandle.current().pid() + "-" + base, KvClient.parseBytes(cgroupLimit))
        : null;
    long cgroupPeak = -1;
    try {
      ProcessBuilder pb = new ProcessBuilder(group != null ? group.wrap(cmd) : cmd)
          .redirectErrorStream(true).redirectOutput(log.toFile());
      if (preload != null) pb.environment().put("LD_PRELOAD", preload);
      Process child = pb.start();
      progress(child, log, tag, ops);
      int rc = child.waitFor();
      if (group != null) cgroupPeak = group.peakBytes();
      if (rc != 0 || !Files.exists(export) || !Files.exists(report)) {
        throw new IllegalStateException(tag + ": child JVM failed (exit " + rc + "), see " + log);
      }
    } finally {
      if (group != null) group.close();
    }
    YcsbReport ycsb = YcsbReport.parse(Files.readAllLines(export));
    Properties rp = new Properties();
    try (InputStream in = Files.newInputStream(report)) {
      rp.load(in);
    }
    Map<String, String> engineStats = new HashMap<>();
    rp.stringPropertyNames().stream().filter(k -> k.startsWith("engine.")).forEach(k -> engineStats.put(k, rp.getProperty(k)));
    return new PhaseResult(engine.id, mix, phase, ycsb, num(rp, "readBytes"), num(rp, "writeBytes"),
        num(rp, "cancelledWriteBytes"), num(rp, "appBytesWritten"), num(rp, "appBytesReturned"),
        num(rp, "cpuNanos"), hz, num(rp, "peakRssBytes"), cgroupPeak, 0, 0, engineStats);
  }

  private static long num(Properties p, String k) {
    return Long.parseLong(p.getProperty(k));
  }

  /** Shows the child's progress: one updating line on a terminal, a line every 10 s otherwise. */
  private static void progress(Process child, Path log, String tag, long ops) throws IOException, InterruptedException {
    boolean tty = System.console() != null;
    long start = System.nanoTime();
    long lastPrint = 0;
    while (!child.waitFor(1, TimeUnit.SECONDS)) {
      long secs = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
      String status = lastStatus(log);
      String line = String.format(Locale.ROOT, "%s: %d s%s", tag, secs,
          status == null ? "" : ", " + status + " of " + ops);
      if (tty) {
        System.out.print("\r" + line + "   ");
        System.out.flush();
      } else if (secs - lastPrint >= 10) {
        System.out.println(line);
        lastPrint = secs;
      }
    }
    if (tty) System.out.print("\r");
  }

  private static String lastStatus(Path log) throws IOException {
    String last = null;
    if (!Files.exists(log)) return null;
    for (String l : Files.readAllLines(log)) {
      Matcher m = STATUS.matcher(l);
      if (m.find()) last = m.group(2) + " ops, " + Math.round(Double.parseDouble(m.group(3))) + " ops/s";
    }
    return last;
  }

  private static int javaFeature(Path javaBin) {
    Path release = javaBin.toAbsolutePath().getParent().getParent().resolve("release");
    try {
      for (String l : Files.readAllLines(release)) {
        if (l.startsWith("JAVA_VERSION=")) {
          String v = l.substring("JAVA_VERSION=".length()).replace("\"", "");
          return Integer.parseInt(v.split("[.+-]")[0]);
        }
      }
    } catch (IOException | NumberFormatException e) {
      return 0;
    }
    return 0;
  }

  /** Bytes allocated on disk under {@code dir} ({@code du -s -B1}: sparse files count what they use). */
  static long diskBytes(Path dir) throws IOException, InterruptedException {
    if (!Files.exists(dir)) return 0;
    Process du = new ProcessBuilder("du", "-s", "-B1", dir.toString()).redirectErrorStream(true).start();
    String out = new String(du.getInputStream().readAllBytes()).trim();
    if (du.waitFor() != 0) throw new IOException("du failed: " + out);
    return Long.parseLong(out.split("\\s+")[0]);
  }

  static void deleteRecursively(Path dir) {
    if (!Files.exists(dir)) return;
    try {
      Files.walkFileTree(dir, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult visitFile(Path f, BasicFileAttributes a) throws IOException {
          Files.delete(f);
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
          Files.delete(d);
          return FileVisitResult.CONTINUE;
        }
      });
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
