package io.parallaxkv;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Compiles and runs the Java quick start of the repository's README.md, as written there. */
class ReadmeQuickStartTest {
  @TempDir Path dir;

  static String quickStart() throws Exception {
    Path readme = Path.of("..", "README.md");
    String text = Files.readString(readme);
    int begin = text.indexOf("<!-- java-quickstart:begin -->");
    int end = text.indexOf("<!-- java-quickstart:end -->");
    assertTrue(begin >= 0 && end > begin, "README.md has the quick start markers");
    String block = text.substring(begin, end);
    int code = block.indexOf("```java\n");
    int close = block.indexOf("```", code + 8);
    return block.substring(code + 8, close);
  }

  @Test
  void readmeQuickStartCompilesAndRuns() throws Exception {
    String src = quickStart();
    Path srcDir = Files.createDirectories(dir.resolve("src"));
    Path file = srcDir.resolve("QuickStart.java");
    Files.writeString(file, src);
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    assertNotNull(javac, "tests run on a JDK");
    Path out = Files.createDirectories(dir.resolve("classes"));
    int rc = javac.run(null, null, null, "-d", out.toString(), "-classpath",
        System.getProperty("java.class.path"), file.toString());
    assertEquals(0, rc, "the README quick start compiles");
    PrintStream old = System.out;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    Path vol = dir.resolve("quickstart.vol");
    try (URLClassLoader cl = new URLClassLoader(new URL[] {out.toUri().toURL()},
        getClass().getClassLoader())) {
      System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
      cl.loadClass("QuickStart").getMethod("main", String[].class)
          .invoke(null, (Object) new String[] {vol.toString()});
    } finally {
      System.setOut(old);
    }
    List<String> lines = captured.toString(StandardCharsets.UTF_8).lines().toList();
    assertEquals(List.of("engineer", "alice"), lines);
    assertTrue(Files.exists(vol));
  }
}
