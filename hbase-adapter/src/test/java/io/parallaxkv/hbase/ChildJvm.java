package io.parallaxkv.hbase;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A JVM child process with this module's test class path (written by Maven to
 * {@code target/child-classpath.txt}) plus any extra entries in front: a directory holding an
 * hbase-site.xml, YCSB's binding jar. Bounded in time.
 */
final class ChildJvm {
  private ChildJvm() {}

  /** Its exit code (-1 when it timed out) and its output, stdout and stderr together. */
  record Result(int exit, String output) {}

  /** The java command and class path for {@code mainClass}; {@code front} goes first. */
  static List<String> command(List<Path> front, String mainClass, List<String> args)
      throws IOException {
    List<String> cp = new ArrayList<>();
    for (Path p : front) cp.add(p.toString());
    cp.add(System.getProperty("hbase.child.classes"));
    cp.add(Files.readString(Path.of(System.getProperty("hbase.child.classpath"))).trim());
    List<String> cmd = new ArrayList<>(diesWithParent());
    cmd.add(System.getProperty("hbase.child.java", "java"));
    cmd.add("-Xmx512m");
    for (String o : System.getProperty("hbase.child.opens", "").split(" ")) {
      if (!o.isBlank()) cmd.add(o);
    }
    cmd.add("-Dparallax.backend=" + System.getProperty("parallax.backend", "jni"));
    String cache = System.getProperty("parallax.cache.dir");
    if (cache != null) cmd.add("-Dparallax.cache.dir=" + cache);
    cmd.add("-cp");
    cmd.add(String.join(File.pathSeparator, cp));
    cmd.add(mainClass);
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

  static Result run(List<Path> front, String mainClass, List<String> args, int timeoutSeconds)
      throws IOException, InterruptedException {
    Process p = new ProcessBuilder(command(front, mainClass, args)).redirectErrorStream(true)
        .start();
    p.getOutputStream().close();
    StringBuilder out = new StringBuilder();
    Thread reader = new Thread(() -> {
      try {
        out.append(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
      } catch (IOException e) {
        out.append("(output lost: ").append(e).append(')');
      }
    });
    reader.start();
    if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      p.waitFor();
      reader.join();
      return new Result(-1, "timed out after " + timeoutSeconds + " s\n" + out);
    }
    reader.join();
    return new Result(p.exitValue(), out.toString());
  }

  /** A directory with an hbase-site.xml selecting the adapter on {@code volume}. */
  static Path siteDir(Path parent, Path volume) throws IOException {
    Path d = Files.createDirectories(parent.resolve("conf"));
    Files.writeString(d.resolve("hbase-site.xml"), """
        <?xml version="1.0"?>
        <configuration>
          <property><name>hbase.client.connection.impl</name><value>%s</value></property>
          <property><name>%s</name><value>%s</value></property>
          <property><name>hbase.client.async.connection.impl</name><value>%s</value></property>
          <property><name>hbase.client.registry.impl</name><value>%s</value></property>
          <property><name>hbase.zookeeper.quorum</name><value>127.0.0.1:1</value></property>
        </configuration>
        """.formatted(ParallaxConnection.class.getName(), ParallaxConnection.PATH, volume,
            ParallaxAsyncConnection.class.getName(), ParallaxRegistry.class.getName()));
    return d;
  }
}
