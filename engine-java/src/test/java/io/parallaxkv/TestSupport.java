package io.parallaxkv;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/** Helpers shared by the tests. */
final class TestSupport {
  private TestSupport() {}

  static byte[] b(String s) {
    return s.getBytes(UTF_8);
  }

  static String s(byte[] b) {
    return b == null ? null : new String(b, UTF_8);
  }

  /** Small L0 so that tests reach compactions quickly; short durability interval. */
  static Options small() {
    return Options.builder().l0Size(256 << 10).durabilityInterval(java.time.Duration.ofMillis(5))
        .build();
  }

  static Parallax open(Path dir) {
    return Parallax.open(dir.resolve("test.vol"), small());
  }

  /**
   * Starts {@code main} in a child JVM like this one (same java, class path, parallax.*
   * properties and backend), its stderr merged into its stdout.
   */
  static Process startChild(Class<?> main, String... args) throws java.io.IOException {
    List<String> cmd = new ArrayList<>(diesWithParent());
    cmd.add(ProcessHandle.current().info().command().orElse("java"));
    for (String k : System.getProperties().stringPropertyNames())
      if (k.startsWith("parallax.")) cmd.add("-D" + k + "=" + System.getProperty(k));
    if (Runtime.version().feature() >= 22) cmd.add("--enable-native-access=ALL-UNNAMED");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(main.getName());
    cmd.addAll(List.of(args));
    return new ProcessBuilder(cmd).redirectErrorStream(true).start();
  }

  /**
   * The head of a child's command line: {@code setpriv --pdeathsig KILL} (util-linux), so that the
   * child is killed when the thread that started it ends, also when this JVM is killed and no
   * finally block runs (a fork timeout, kill -9); without setpriv, nothing.
   */
  static List<String> diesWithParent() {
    Path setpriv = Path.of("/usr/bin/setpriv");
    return Files.isExecutable(setpriv) ? List.of(setpriv.toString(), "--pdeathsig", "KILL") : List.of();
  }

  /** What a child reported: the last number of each tag (lines "TAG n") and its other lines. */
  record ChildReport(Map<String, Long> last, List<String> other) {
    /** The last number reported under {@code tag}, or -1. */
    long last(String tag) {
      return last.getOrDefault(tag, -1L);
    }
  }

  /**
   * Reads a child's reports until {@code enough} holds or its output ends, waits
   * {@code killDelayMillis}, then kills it (kill -9) and waits for it to be gone.
   */
  static ChildReport killWhen(Process p, Predicate<ChildReport> enough, long killDelayMillis)
      throws IOException, InterruptedException {
    ChildReport r = new ChildReport(new HashMap<>(), new ArrayList<>());
    try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), UTF_8))) {
      String line;
      while (!enough.test(r) && (line = in.readLine()) != null) {
        int space = line.indexOf(' ');
        Long n = space > 0 ? parseOrNull(line.substring(space + 1)) : null;
        if (n != null) r.last().put(line.substring(0, space), n);
        else r.other().add(line);
      }
      Thread.sleep(killDelayMillis);
      p.destroyForcibly();
      if (!p.waitFor(30, TimeUnit.SECONDS)) throw new AssertionError("the child outlived kill -9");
    }
    return r;
  }

  private static Long parseOrNull(String s) {
    try {
      return Long.parseLong(s);
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
