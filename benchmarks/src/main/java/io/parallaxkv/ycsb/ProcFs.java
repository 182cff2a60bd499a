package io.parallaxkv.ycsb;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The Linux process counters the benchmarks report: device I/O ({@code /proc/<pid>/io}), major
 * page faults ({@code /proc/<pid>/stat}), peak resident set ({@code VmHWM} of
 * {@code /proc/<pid>/status}), process CPU time and the nominal
 * clock rate ({@code /proc/cpuinfo}). Hardware counters are not available on the machines these
 * run on, so CPU time × clock rate stands in for cycles.
 */
public final class ProcFs {
  private ProcFs() {}

  /**
   * Device I/O of a process.
   *
   * @param readBytes           bytes the process caused to be read from storage
   * @param writeBytes          bytes it caused to be written (counted when dirtied or issued)
   * @param cancelledWriteBytes dirtied bytes later dropped before writeback (truncated files)
   */
  public record Io(long readBytes, long writeBytes, long cancelledWriteBytes) {
    /** This minus {@code earlier}. */
    public Io minus(Io earlier) {
      return new Io(readBytes - earlier.readBytes, writeBytes - earlier.writeBytes,
          cancelledWriteBytes - earlier.cancelledWriteBytes);
    }

    /** This plus {@code other}. */
    public Io plus(Io other) {
      return new Io(readBytes + other.readBytes, writeBytes + other.writeBytes,
          cancelledWriteBytes + other.cancelledWriteBytes);
    }
  }

  /** The I/O counters of this process ({@code /proc/self/io}). */
  public static Io selfIo() {
    return io(Path.of("/proc/self/io"));
  }

  /** Parses an {@code io} file of procfs. */
  public static Io io(Path file) {
    List<String> lines = readLines(file);
    return new Io(field(lines, "read_bytes:"), field(lines, "write_bytes:"),
        field(lines, "cancelled_write_bytes:"));
  }

  /** Peak resident set of this process in bytes ({@code VmHWM}). */
  public static long selfPeakRssBytes() {
    return field(readLines(Path.of("/proc/self/status")), "VmHWM:") * 1024;
  }

  /** Major page faults of this process so far ({@code /proc/self/stat}). */
  public static long selfMajorFaults() {
    return majorFaults(readLines(Path.of("/proc/self/stat")).get(0));
  }

  /**
   * The {@code majflt} field (the 12th) of a {@code stat} line of procfs: faults that had to wait
   * for a device read. The command name (2nd field) may hold spaces and parentheses, so fields
   * are counted from its last closing parenthesis.
   */
  public static long majorFaults(String statLine) {
    String[] rest = statLine.substring(statLine.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(rest[12 - 3]);
  }

  /**
   * CPU time of a thread or process in clock ticks ({@code utime} and {@code stime}, the 14th and
   * 15th fields of a {@code stat} line of procfs; counted from the last closing parenthesis, as
   * {@link #majorFaults(String)} does).
   */
  public record Cpu(long userTicks, long systemTicks) {
    /** Parses a {@code stat} line. */
    public static Cpu of(String statLine) {
      String[] rest = statLine.substring(statLine.lastIndexOf(')') + 2).split(" ");
      return new Cpu(Long.parseLong(rest[14 - 3]), Long.parseLong(rest[15 - 3]));
    }

    /** This minus {@code earlier}. */
    public Cpu minus(Cpu earlier) {
      return new Cpu(userTicks - earlier.userTicks, systemTicks - earlier.systemTicks);
    }

    /** This plus {@code other}. */
    public Cpu plus(Cpu other) {
      return new Cpu(userTicks + other.userTicks, systemTicks + other.systemTicks);
    }
  }

  /** User and system CPU of this process so far ({@code /proc/self/stat}). */
  public static Cpu selfCpu() {
    return Cpu.of(readLines(Path.of("/proc/self/stat")).get(0));
  }

  /**
   * A thread's name, CPU and device I/O ({@code stat} and {@code io} of
   * {@code /proc/self/task/<tid>}: the kernel counts I/O per thread, so the engine's own threads'
   * reads and writes show apart from the clients').
   */
  public record ThreadSample(String name, Cpu cpu, Io io) {
    /** This minus {@code earlier} (same thread). */
    public ThreadSample minus(ThreadSample earlier) {
      return new ThreadSample(name, cpu.minus(earlier.cpu), io.minus(earlier.io));
    }

    /** This plus {@code other}, under this one's name. */
    public ThreadSample plus(ThreadSample other) {
      return new ThreadSample(name, cpu.plus(other.cpu), io.plus(other.io));
    }
  }

  /**
   * The live threads of this process ({@code /proc/self/task}): thread id → its sample. A thread
   * that ends while the table is read is left out.
   */
  public static Map<Long, ThreadSample> selfThreads() {
    Map<Long, ThreadSample> m = new TreeMap<>();
    try (var tasks = Files.list(Path.of("/proc/self/task"))) {
      for (Path t : tasks.toList()) {
        String stat;
        Io io;
        try {
          stat = Files.readString(t.resolve("stat"));
          io = io(t.resolve("io"));
        } catch (IOException | UncheckedIOException ended) {
          continue;
        }
        String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        m.put(Long.parseLong(t.getFileName().toString()), new ThreadSample(name, Cpu.of(stat), io));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return m;
  }

  /**
   * What each kind of thread used between two {@link #selfThreads()} tables, by thread name with
   * trailing digits and separators dropped ({@code par-compaction}, {@code rocksdb:low},
   * {@code C2 CompilerThre}, {@code GC Thread#}). Threads that ended meanwhile are not in it.
   */
  public static Map<String, ThreadSample> byThreadKind(Map<Long, ThreadSample> before, Map<Long, ThreadSample> after) {
    Map<String, ThreadSample> m = new TreeMap<>();
    after.forEach((tid, a) -> {
      ThreadSample b = before.get(tid);
      String kind = a.name().replaceAll("[-_#: ]*[0-9]+$", "");
      ThreadSample d = b == null || !b.name().equals(a.name()) ? a : a.minus(b);
      m.merge(kind, new ThreadSample(kind, d.cpu(), d.io()), ThreadSample::plus);
    });
    return m;
  }

  /** CPU time (user + system, all threads) this process has used, in nanoseconds. */
  public static long selfCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  /** The clock rate in Hz of the first CPU listed in {@code /proc/cpuinfo}. */
  public static double cpuHz(Path cpuinfo) {
    for (String l : readLines(cpuinfo)) {
      if (l.startsWith("cpu MHz")) {
        return Double.parseDouble(l.substring(l.indexOf(':') + 1).trim()) * 1e6;
      }
    }
    throw new IllegalStateException("no 'cpu MHz' line in " + cpuinfo);
  }

  /** The CPU model name from {@code /proc/cpuinfo}. */
  public static String cpuModel(Path cpuinfo) {
    for (String l : readLines(cpuinfo)) {
      if (l.startsWith("model name")) return l.substring(l.indexOf(':') + 1).trim();
    }
    return "unknown";
  }

  /** The first number after {@code name} on the line that starts with it. */
  static long field(List<String> lines, String name) {
    for (String l : lines) {
      if (l.startsWith(name)) {
        String[] parts = l.substring(name.length()).trim().split("\\s+");
        return Long.parseLong(parts[0]);
      }
    }
    throw new IllegalStateException("no '" + name + "' field");
  }

  private static List<String> readLines(Path file) {
    try {
      return Files.readAllLines(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
