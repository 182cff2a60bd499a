package io.parallaxkv.replication;

import java.io.BufferedReader;
import java.io.Closeable;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingServer;

/**
 * A test cluster on one machine: ZooKeeper in this JVM (Curator's TestingServer), region
 * servers as separate JVMs on 127.0.0.x, each with its own volume directory.
 */
final class Cluster implements Closeable {
  static final int SESSION_MS = 2000;

  final TestingServer zk;
  final Path dir;
  final String mode;
  final Map<String, Process> servers = new LinkedHashMap<>();
  /** With -Drepl.memory=BYTES (benchmarks at equal memory): each server's memory group. */
  private final List<MemoryGroup> groups = new ArrayList<>();
  private int next = 1;

  private final int rf, regions;
  private final long l0Size;
  /** --placement, or null for the mode's default. */
  private final String placement;

  Cluster(Path dir, String mode) throws Exception {
    this(dir, mode, 3, 2, 64 << 10);
  }

  Cluster(Path dir, String mode, int rf, int regions, long l0Size) throws Exception {
    this(dir, mode, rf, regions, l0Size, null);
  }

  Cluster(Path dir, String mode, int rf, int regions, long l0Size, String placement) throws Exception {
    this.placement = placement;
    this.dir = dir;
    this.mode = mode;
    this.rf = rf;
    this.regions = regions;
    this.l0Size = l0Size;
    // tickTime 200 ms: sessions of 400 ms .. 10 s can be negotiated
    zk = new TestingServer(new InstanceSpec(null, -1, -1, -1, true, -1, 200, -1,
        Map.of("maxSessionTimeout", "10000")), true);
  }

  /** Starts one more region server; returns its id (host:port). */
  String start() throws Exception {
    return start(null);
  }

  /** Starts a server that halts at a crash point ({@code POINT:N}, see Faults), or none. */
  String start(String crashAt) throws Exception {
    return startWith(crashAt == null ? List.of() : List.of("-Dparallax.repl.crashAt=" + crashAt));
  }

  /**
   * The head of a child's command line: {@code setpriv --pdeathsig KILL} (util-linux), so that the
   * child is killed when the thread that started it ends, also when this JVM is killed and no
   * finally block runs (a fork timeout, kill -9); without setpriv, nothing.
   */
  private static List<String> diesWithParent() {
    Path setpriv = Path.of("/usr/bin/setpriv");
    return Files.isExecutable(setpriv) ? List.of(setpriv.toString(), "--pdeathsig", "KILL") : List.of();
  }

  /** Starts a server with extra JVM options (fault injection: see Faults). */
  String startWith(List<String> jvmOptions) throws Exception {
    return start(jvmOptions, zk.getConnectString(), SESSION_MS);
  }

  /** Starts a server that reaches ZooKeeper at zkConnect (a proxy) with its own session timeout. */
  String startVia(String zkConnect, int sessionMs) throws Exception {
    return start(List.of(), zkConnect, sessionMs);
  }

  private String start(List<String> jvmOptions, String zkConnect, int sessionMs) throws Exception {
    int n = next++;
    String host = "127.0.0." + n;
    int port = 17000 + (int) (ProcessHandle.current().pid() % 1000) * 10 + n;
    String id = host + ":" + port;
    Path sdir = Files.createDirectories(dir.resolve("s" + n));
    List<String> cmd = new ArrayList<>(diesWithParent());
    cmd.addAll(List.of(System.getProperty("repl.java", "java"), "-Xmx256m",
        "-Dparallax.backend=jni", "-Dorg.slf4j.simpleLogger.defaultLogLevel=info"));
    cmd.addAll(jvmOptions);
    cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), ServerMain.class.getName(),
        "--zk", zkConnect, "--dir", sdir.toString(), "--host", host, "--port", String.valueOf(port),
        "--rf", String.valueOf(rf), "--regions", String.valueOf(regions), "--mode", mode,
        "--session-timeout-ms", String.valueOf(sessionMs), "--l0-size", String.valueOf(l0Size)));
    if (placement != null) cmd.addAll(List.of("--placement", placement));
    // Levels shipped every 2 s (the servers' default is 10 s), so that short tests install often;
    // benchmarks set -Drepl.index.interval.
    cmd.addAll(List.of("--index-interval-ms", System.getProperty("repl.index.interval", "2000")));
    // -Drepl.sync.writes=true: primaries sync each write before shipping it (benchmarks compare).
    if (Boolean.getBoolean("repl.sync.writes")) cmd.add("--sync-writes");
    long memory = Long.getLong("repl.memory", 0);
    if (memory > 0) {
      groups.add(MemoryGroup.create("repl-" + ProcessHandle.current().pid() + "-s" + n, memory));
      cmd = groups.get(groups.size() - 1).wrap(cmd);
    }
    Process p = new ProcessBuilder(cmd).redirectError(sdir.resolve("server.log").toFile()).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    String line = out.readLine();
    if (line == null || !line.startsWith("READY")) {
      p.destroyForcibly();
      throw new IllegalStateException("server " + id + " did not start: " + Files.readString(sdir.resolve("server.log")));
    }
    servers.put(id, p);
    return id;
  }

  long pid(String id) {
    return servers.get(id).pid();
  }

  boolean alive(String id) {
    return servers.get(id).isAlive();
  }

  void kill(String id) throws Exception {
    Process p = servers.get(id);
    p.destroyForcibly();
    p.waitFor(10, TimeUnit.SECONDS);
  }

  void signal(String id, String sig) throws Exception {
    Process k = new ProcessBuilder("kill", "-" + sig, String.valueOf(servers.get(id).pid())).start();
    if (k.waitFor() != 0) throw new IllegalStateException("kill -" + sig + " failed");
  }

  /** A server's log (its standard error). */
  String log(String id) throws java.io.IOException {
    return Files.readString(dir.resolve("s" + id.substring(id.lastIndexOf('.') + 1, id.indexOf(':'))).resolve("server.log"));
  }

  /** The last lines of every server's log, for a failure's message. */
  String logs() {
    StringBuilder b = new StringBuilder();
    for (String id : servers.keySet()) {
      Path log = dir.resolve("s" + id.substring(id.lastIndexOf('.') + 1, id.indexOf(':'))).resolve("server.log");
      try {
        List<String> lines = Files.readAllLines(log);
        b.append("\n--- ").append(id).append(" ---\n");
        for (String l : lines.subList(Math.max(0, lines.size() - 30), lines.size())) b.append(l).append('\n');
      } catch (java.io.IOException e) {
        b.append("\n--- ").append(id).append(": no log\n");
      }
    }
    return b.toString();
  }

  @Override
  public void close() {
    for (Process p : servers.values()) p.destroyForcibly();
    for (Process p : servers.values()) {
      try {
        p.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    for (MemoryGroup g : groups) g.close();
    try {
      zk.close();
    } catch (Exception e) {
      // the test's outcome stands
    }
  }

  /** Each server's memory group's peak use (page cache included), with -Drepl.memory. */
  List<Long> peakMemory() throws java.io.IOException {
    List<Long> peaks = new ArrayList<>();
    for (MemoryGroup g : groups) peaks.add(g.peakBytes());
    return peaks;
  }
}
