package io.parallaxkv;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

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
    List<String> cmd = new ArrayList<>();
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
}
