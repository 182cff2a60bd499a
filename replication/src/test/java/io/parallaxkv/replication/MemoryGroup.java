package io.parallaxkv.replication;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A cgroup v1 memory group for one server JVM of a benchmark at equal memory: heap, engine
 * memory and page cache together under one limit. Created under this JVM's own memory group;
 * the server joins it before it starts ({@link #wrap}). The YCSB runner's {@code CgroupV1}
 * (benchmarks module, built after this one) does the same for its engines' JVMs.
 */
final class MemoryGroup implements AutoCloseable {
  private static final Path ROOT = Path.of("/sys/fs/cgroup/memory");

  private final Path dir;

  private MemoryGroup(Path dir) {
    this.dir = dir;
  }

  /** A group called name limited to limitBytes; fails with the reason where none can be made. */
  static MemoryGroup create(String name, long limitBytes) throws IOException {
    String own = null;
    for (String l : Files.readAllLines(Path.of("/proc/self/cgroup"))) {
      String[] f = l.split(":", 3);
      if (f.length == 3 && List.of(f[1].split(",")).contains("memory")) own = f[2];
    }
    if (own == null) throw new IllegalStateException("no cgroup v1 memory controller in /proc/self/cgroup");
    MemoryGroup g = new MemoryGroup(Files.createDirectories(ROOT.resolve(own.replaceFirst("^/", "")).resolve(name)));
    try {
      Files.writeString(g.dir.resolve("memory.limit_in_bytes"), Long.toString(limitBytes));
    } catch (IOException e) {
      g.close();
      throw e;
    }
    return g;
  }

  /** command, run so that its process joins this group before it execs. */
  List<String> wrap(List<String> command) {
    List<String> c = new ArrayList<>(List.of("/bin/sh", "-c", "echo $$ > \"$0/cgroup.procs\" && exec \"$@\"", dir.toString()));
    c.addAll(command);
    return c;
  }

  /** The most the group held (page cache included), in bytes. */
  long peakBytes() throws IOException {
    return Long.parseLong(Files.readString(dir.resolve("memory.max_usage_in_bytes")).trim());
  }

  /** Removes the group; its processes must have exited. */
  @Override
  public void close() {
    try {
      Files.writeString(dir.resolve("memory.force_empty"), "0");
      Files.deleteIfExists(dir);
    } catch (IOException e) {
      System.err.println("warning: cannot remove the memory group " + dir + ": " + e);
    }
  }
}
