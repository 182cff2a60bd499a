package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static io.parallaxkv.mongo.ExternalCommand.run;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import io.parallaxkv.mongo.ExternalCommand.Result;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * pymongo (pinned, installed from PyPI into a venv under target/) runs
 * src/test/resources/pymongo_client.py against the server: CRUD, indexes, 11000, explain,
 * bulk writes, aggregation, a journaled write, validate, drop; and pymongo_auth.py against a
 * server with authentication.
 */
class PymongoClientTest {
  private static final Path VENV = Path.of("target", "pymongo-venv");

  @TempDir Path dir;

  @Test
  void pymongoScriptPasses() throws Exception {
    String version = System.getProperty("mongo.pymongo.version", "4.20.0");
    Path python = venvWithPymongo(version);
    Path script = Path.of("src", "test", "resources", "pymongo_client.py");
    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir, 0)) {
      Result r = run(List.of(python.toString(), script.toString(), server.connectionString()), 120);
      assertEquals(0, r.exit(), r.output());
      assertTrue(r.output().contains("pymongo " + version + " OK"), r.output());
    }
  }

  @Test
  void pymongoAuthenticatesWithScramSha256() throws Exception {
    String version = System.getProperty("mongo.pymongo.version", "4.20.0");
    Path python = venvWithPymongo(version);
    Path script = Path.of("src", "test", "resources", "pymongo_auth.py");
    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir, "127.0.0.1", 0, true, false)) {
      server.createUser("admin", "admin", "s3cret-pw");
      Result r = run(List.of(python.toString(), script.toString(), "127.0.0.1",
          Integer.toString(server.port()), "admin", "s3cret-pw"), 120);
      assertEquals(0, r.exit(), r.output());
      assertTrue(r.output().contains("pymongo " + version + " auth OK"), r.output());
    }
  }

  private static Path venvWithPymongo(String version) throws Exception {
    Path python = VENV.resolve("bin").resolve("python");
    Path marker = VENV.resolve("pymongo-" + version);
    if (Files.exists(marker)) return python;
    Result venv = run(List.of("python3", "-m", "venv", "--clear", VENV.toString()), 120);
    assertEquals(0, venv.exit(), "python3 -m venv failed:\n" + venv.output());
    String dnspython = System.getProperty("mongo.dnspython.version", "2.9.2");
    Result pip = run(List.of(python.toString(), "-m", "pip", "install", "--quiet",
        "--disable-pip-version-check", "pymongo==" + version, "dnspython==" + dnspython), 300);
    assertEquals(0, pip.exit(), "pip install pymongo==" + version + " failed:\n" + pip.output());
    Files.createFile(marker);
    return python;
  }
}
