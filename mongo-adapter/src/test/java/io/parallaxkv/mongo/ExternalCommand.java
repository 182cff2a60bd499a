package io.parallaxkv.mongo;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs a client tool (python3, pip, npm, mongosh) to completion, bounded in time. */
final class ExternalCommand {
  private ExternalCommand() {}

  /** Its exit code (-1 when it timed out) and its output, stdout and stderr together. */
  record Result(int exit, String output) {}

  static Result run(List<String> command, int timeoutSeconds)
      throws IOException, InterruptedException {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    p.getOutputStream().close();
    byte[] out = p.getInputStream().readAllBytes();
    if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      return new Result(-1, "timed out: " + command);
    }
    return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
  }
}
