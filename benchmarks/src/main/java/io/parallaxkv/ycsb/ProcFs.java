package io.parallaxkv.ycsb;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

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
