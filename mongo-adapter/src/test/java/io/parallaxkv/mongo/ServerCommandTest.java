package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Without authentication the server only listens on loopback unless told it may not; a TLS file
 * it cannot use is refused before anything opens.
 */
class ServerCommandTest {
  @TempDir Path dir;

  @Test
  void refusesNonLoopbackWithoutInsecureFlag() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ParallaxMongoServer.start(dir, "0.0.0.0", 0, false, false));
    assertTrue(e.getMessage().contains("--insecure-no-auth"), e.getMessage());
    assertTrue(!Files.exists(dir.resolve(MongoVolume.VOLUME_FILE)), "nothing opened");

    assertRefused("refusing to listen on 0.0.0.0", "--dbpath", dir.toString(),
        "--bind_ip", "0.0.0.0", "--port", "0");
  }

  @Test
  void refusesAMissingTlsFileWithAMessage() {
    assertRefused("cannot read --tlsCertificateKeyFile", "--dbpath", dir.toString(), "--port",
        "0", "--tlsCertificateKeyFile", dir.resolve("missing.pem").toString());
    assertTrue(!Files.exists(dir.resolve(MongoVolume.VOLUME_FILE)), "nothing opened");
  }

  /** The command line exits with 2 and says {@code message} on stderr. */
  private static void assertRefused(String message, String... args) {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream saved = System.err;
    int exit;
    try {
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      exit = new CommandLine(new ServerCommand()).execute(args);
    } finally {
      System.setErr(saved);
    }
    assertEquals(2, exit);
    assertTrue(err.toString(StandardCharsets.UTF_8).contains(message), err.toString(StandardCharsets.UTF_8));
  }

  @Test
  void listensOnLoopbackByDefault() {
    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir, 0)) {
      assertTrue(server.connectionString().startsWith("mongodb://127.0.0.1:"));
      assertTrue(server.port() > 0);
    }
  }
}
