package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * mongosh (pinned, installed from npm under target/) runs src/test/resources/mongosh_client.js
 * against the server: inserts, a descending and a multikey index, sorts, explain, an update
 * found through the index, 11000, validate, getIndexes, drop.
 */
class MongoshClientTest {
  private static final Path PREFIX = Path.of("target", "mongosh");

  @TempDir Path dir;

  @Test
  void mongoshScriptPasses() throws Exception {
    String version = System.getProperty("mongo.mongosh.version", "2.12.0");
    Path mongosh = installed(version);
    Path script = Path.of("src", "test", "resources", "mongosh_client.js");
    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir, 0)) {
      Result r = run(List.of(mongosh.toString(), server.connectionString() + "/shell",
          "--quiet", "--norc", "--file", script.toString()), 120);
      assertEquals(0, r.exit(), r.output());
      assertTrue(r.output().contains("mongosh OK"), r.output());
    }
  }

  private static Path installed(String version) throws Exception {
    Path mongosh = PREFIX.resolve("node_modules").resolve(".bin").resolve("mongosh");
    Path marker = PREFIX.resolve("mongosh-" + version);
    if (Files.exists(marker)) return mongosh;
    Files.createDirectories(PREFIX);
    Result npm = run(List.of("npm", "install", "--prefix", PREFIX.toString(), "--no-audit",
        "--no-fund", "--loglevel=error", "mongosh@" + version), 600);
    assertEquals(0, npm.exit(), "npm install mongosh@" + version + " failed:\n" + npm.output());
    Files.createFile(marker);
    return mongosh;
  }

  private record Result(int exit, String output) {}

  private static Result run(List<String> command, int timeoutSeconds)
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
