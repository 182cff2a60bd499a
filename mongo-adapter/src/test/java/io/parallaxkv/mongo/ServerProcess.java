package io.parallaxkv.mongo;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The server as a child JVM ({@link ServerCommand}) on 127.0.0.1 and a free port. */
final class ServerProcess implements AutoCloseable {
  private static final Pattern LISTENING = Pattern.compile("listening on (mongodb://\\S+)");

  private final Process process;
  private final String uri;
  private final StringBuffer output = new StringBuffer();

  ServerProcess(Path dbPath) throws Exception {
    this(dbPath, List.of("-Xmx512m"));
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

  /** With {@code jvmOptions} (its heap size, say) instead of the default's {@code -Xmx512m}. */
  ServerProcess(Path dbPath, List<String> jvmOptions) throws Exception {
    List<String> cmd = new ArrayList<>(diesWithParent());
    cmd.add(System.getProperty("mongo.java", Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    cmd.addAll(jvmOptions);
    for (String p : List.of("parallax.backend", "parallax.cache.dir")) {
      if (System.getProperty(p) != null) cmd.add("-D" + p + "=" + System.getProperty(p));
    }
    cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), ServerCommand.class.getName(),
        "--dbpath", dbPath.toString(), "--port", "0"));
    process = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    CompletableFuture<String> listening = new CompletableFuture<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          output.append(line).append('\n');
          Matcher m = LISTENING.matcher(line);
          if (m.find()) listening.complete(m.group(1));
        }
      } catch (IOException e) {
        // the process died; the future below reports it
      }
      listening.completeExceptionally(new IllegalStateException("server exited:\n" + output));
    }, "server-output");
    reader.setDaemon(true);
    reader.start();
    try {
      uri = listening.get(60, TimeUnit.SECONDS);
    } catch (Exception e) {
      process.destroyForcibly();
      throw e;
    }
  }

  String uri() {
    return uri;
  }

  /** SIGKILL: no shutdown hook, no close, no final sync. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }

  String output() {
    return output.toString();
  }

  @Override
  public void close() {
    process.destroy(); // SIGTERM: the shutdown hook closes the volume
    try {
      if (!process.waitFor(30, TimeUnit.SECONDS)) process.destroyForcibly();
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }
}
