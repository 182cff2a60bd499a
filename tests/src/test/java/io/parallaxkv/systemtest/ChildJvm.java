package io.parallaxkv.systemtest;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Command lines for child JVMs that run a test main class on this JVM's java and backend. */
final class ChildJvm {
  private ChildJvm() {}

  static List<String> command(Class<?> main, List<String> args) {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> cmd = new ArrayList<>(
        List.of(java, "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"));
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
}
