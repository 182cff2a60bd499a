package io.parallaxkv.systemtest;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Command lines for child JVMs that run a test main class on this JVM's java and backend. */
final class ChildJvm {
  private ChildJvm() {}

  static List<String> command(Class<?> main, List<String> args) {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> cmd = new ArrayList<>(diesWithParent());
    cmd.addAll(List.of(java, "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"));
    if (Runtime.version().feature() >= 22) cmd.add("--enable-native-access=ALL-UNNAMED");
    for (String p : List.of("parallax.backend", "parallax.cache.dir", "parallax.library.path")) {
      String v = System.getProperty(p);
      if (v != null) cmd.add("-D" + p + "=" + v);
    }
    // Surefire runs tests from a manifest-only jar; the real class path is in this property.
    cmd.add("-cp");
    cmd.add(System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
    cmd.add(main.getName());
    cmd.addAll(args);
    return cmd;
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
}
