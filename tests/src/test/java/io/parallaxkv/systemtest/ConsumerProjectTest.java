package io.parallaxkv.systemtest;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's Java quick start, as a user runs it: a separate Maven project that only declares
 * {@code io.parallaxkv:parallax-engine} resolves it from a repository holding nothing but the
 * artifacts this build deployed there (the tests module's pom deploys the engine jar and its
 * parent pom before the tests), compiles the quick start copied from README.md, and runs it on
 * JDK 17 (JNI backend) and JDK 25 (FFM backend). It catches what tests run from class directories
 * cannot: a jar or pom that does not work once installed.
 */
class ConsumerProjectTest {
  private static final String REPO = System.getProperty("parallax.consumer.repo");

  @TempDir Path dir;

  static String quickStart() throws Exception {
    String text = Files.readString(Path.of("..", "README.md"));
    int begin = text.indexOf("<!-- java-quickstart:begin -->");
    int end = text.indexOf("<!-- java-quickstart:end -->");
    assertTrue(begin >= 0 && end > begin, "README.md has the quick start markers");
    String block = text.substring(begin, end);
    int code = block.indexOf("```java\n");
    int close = block.indexOf("```", code + 8);
    assertTrue(code >= 0 && close > code, "the quick start is a java code block");
    return block.substring(code + 8, close);
  }

  @Test
  void readmeQuickStartBuildsAndRunsFromTheDeployedArtifactOnJdk17AndJdk25() throws Exception {
    assumeTrue(REPO != null, "run by Maven, which deploys the artifact and sets parallax.consumer.repo");
    Path project = Files.createDirectories(dir.resolve("quickstart"));
    try (InputStream pom = getClass().getResourceAsStream("/consumer/pom.xml")) {
      assertNotNull(pom, "the consumer pom is a test resource");
      Files.copy(pom, project.resolve("pom.xml"));
    }
    Path src = Files.createDirectories(project.resolve("src/main/java"));
    Files.writeString(src.resolve("QuickStart.java"), quickStart());

    List<String> cmd = new ArrayList<>(List.of(System.getProperty("parallax.consumer.mvn"),
        "-B", "-U", "-f", project.resolve("pom.xml").toString(),
        "-Dparallax.repo=" + REPO,
        "-Dparallax.version=" + System.getProperty("parallax.consumer.version"),
        "-Djava17=" + System.getProperty("parallax.consumer.java17"),
        "-Djava25=" + System.getProperty("parallax.consumer.java25"),
        "-Dvolume17=" + dir.resolve("jdk17.vol"), "-Dvolume25=" + dir.resolve("jdk25.vol"),
        "compile", "exec:exec@jdk17", "exec:exec@jdk25"));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    // A user's shell: nothing set up for the engine, and no JAVA_HOME.
    pb.environment().remove("JAVA_HOME");
    pb.environment().remove("PARALLAX_LIBRARY_PATH");
    pb.environment().put("PARALLAX_CACHE_DIR", dir.resolve("cache").toString());
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(10, TimeUnit.MINUTES), "the consumer build finished");
    assertEquals(0, p.exitValue(), "the consumer build failed:\n" + out);

    // Each run prints the value and then the scanned key, once per JDK.
    List<String> printed = out.lines().filter(l -> l.equals("engineer") || l.equals("alice")).toList();
    assertEquals(List.of("engineer", "alice", "engineer", "alice"), printed, out);
    assertTrue(out.contains("Downloading from parallax-under-test")
        || out.contains("Downloaded from parallax-under-test"), "resolved from the deployed repository:\n" + out);
    assertTrue(Files.exists(dir.resolve("jdk17.vol")) && Files.exists(dir.resolve("jdk25.vol")));
  }
}
