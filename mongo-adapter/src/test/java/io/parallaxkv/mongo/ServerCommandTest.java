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

/** Without authentication the server only listens on loopback unless told it may not. */
class ServerCommandTest {
  @TempDir Path dir;

  @Test
  void refusesNonLoopbackWithoutInsecureFlag() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ParallaxMongoServer.start(dir, "0.0.0.0", 0, false, false));
    assertTrue(e.getMessage().contains("--insecure-no-auth"), e.getMessage());
    assertTrue(!Files.exists(dir.resolve(MongoVolume.VOLUME_FILE)), "nothing opened");

    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream saved = System.err;
    int exit;
    try {
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      exit = new CommandLine(new ServerCommand()).execute("--dbpath", dir.toString(),
          "--bind_ip", "0.0.0.0", "--port", "0");
    } finally {
      System.setErr(saved);
    }
    assertEquals(2, exit);
    assertTrue(err.toString(StandardCharsets.UTF_8).contains("refusing to listen on 0.0.0.0"));
  }

  @Test
  void listensOnLoopbackByDefault() {
    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir, 0)) {
      assertTrue(server.connectionString().startsWith("mongodb://127.0.0.1:"));
      assertTrue(server.port() > 0);
    }
  }
}
