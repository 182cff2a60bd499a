package io.parallaxkv.ycsb.runner;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A memory-limited child group in the cgroup v1 memory hierarchy, for one child JVM. It is
 * created under this process's own memory group (from {@code /proc/self/cgroup}), and the child
 * joins it before anything runs: the command is wrapped in {@code sh -c 'echo $$ >
 * GROUP/cgroup.procs && exec "$@"'}, so the JVM's whole life, page cache included, is charged
 * to the limit. {@link #close()} empties the group (reclaiming its page cache, so the next phase
 * starts cold under the same budget) and removes it.
 */
final class CgroupV1 implements AutoCloseable {
  static final Path MEMORY_ROOT = Path.of("/sys/fs/cgroup/memory");

  final Path dir;

  private CgroupV1(Path dir) {
    this.dir = dir;
  }

  /** The memory group of this process, relative to the hierarchy's root. */
  static String ownGroup(List<String> procSelfCgroup) {
    for (String l : procSelfCgroup) {
      String[] f = l.split(":", 3);
      if (f.length == 3 && List.of(f[1].split(",")).contains("memory")) return f[2];
    }
    throw new IllegalStateException("no cgroup v1 memory controller in /proc/self/cgroup"
        + " (cgroup v2 or no memory controller): --memory-mode cgroup needs cgroup v1");
  }

  /** Creates the group {@code name} with a limit of {@code limitBytes}. */
  static CgroupV1 create(String name, long limitBytes) {
    Path dir;
    try {
      String own = ownGroup(Files.readAllLines(Path.of("/proc/self/cgroup")));
      dir = MEMORY_ROOT.resolve(own.replaceFirst("^/", "")).resolve(name);
      Files.createDirectories(dir);
    } catch (IOException | RuntimeException e) {
      throw new IllegalStateException("--memory-mode cgroup: cannot create a memory cgroup under "
          + MEMORY_ROOT + " (" + e + "); it needs a writable cgroup v1 memory hierarchy"
          + " (root, or a delegated group); use --memory-mode page-cache instead", e);
    }
    CgroupV1 g = new CgroupV1(dir);
    try {
      Files.writeString(dir.resolve("memory.limit_in_bytes"), Long.toString(limitBytes));
    } catch (IOException e) {
      g.close();
      throw new IllegalStateException("--memory-mode cgroup: cannot set " + dir
          + "/memory.limit_in_bytes: " + e, e);
    }
    return g;
  }

  /**
   * Null if a memory-limited group can be created here (one is created and removed to find out),
   * else why not.
   */
  static String unavailableReason() {
    try (CgroupV1 probe = create("ycsb-probe-" + ProcessHandle.current().pid(), 1L << 30)) {
      return null;
    } catch (IllegalStateException e) {
      return e.getMessage();
    }
  }

  /** {@code command}, run so that its process joins this group before it starts. */
  List<String> wrap(List<String> command) {
    List<String> c = new ArrayList<>(List.of("/bin/sh", "-c",
        "echo $$ > \"$0/cgroup.procs\" && exec \"$@\"", dir.toString()));
    c.addAll(command);
    return c;
  }

  /** The group's peak memory use (page cache included), or -1 if unreadable. */
  long peakBytes() {
    try {
      return Long.parseLong(Files.readString(dir.resolve("memory.max_usage_in_bytes")).trim());
    } catch (IOException | NumberFormatException e) {
      return -1;
    }
  }

  @Override
  public void close() {
    try {
      Files.writeString(dir.resolve("memory.force_empty"), "0");
    } catch (IOException e) {
      System.err.println("warning: cannot empty " + dir + ": " + e);
    }
    try {
      Files.deleteIfExists(dir);
    } catch (IOException e) {
      System.err.println("warning: cannot remove " + dir + ": " + e);
    }
  }
}
