package io.parallaxkv;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged multi-release jar, as users get it (the rest of the suite runs from class
 * directories, where the JDK ignores the {@code META-INF/versions/22} layer). A child JVM — the
 * JDK running this suite, so JDK 17 in the JNI run and JDK 25 in the FFM run — with nothing but
 * the jar on its class path compiles and runs a small program (source-launcher mode) that opens a
 * volume and puts and gets a key. The pom builds the jar before the tests and passes its path as
 * {@code -Dparallax.test.jar}.
 */
class PackagedJarTest {
  private static final String JAR = System.getProperty("parallax.test.jar");
  private static final String LIBRARY = "native/linux-x86_64/libparallax.so";
  private static final List<String> PLATFORMS =
      List.of("linux-x86_64", "linux-aarch64", "linux-x86_64-musl");
  private static final String PROBE = String.join("\n",
      "import io.parallaxkv.Parallax;",
      "import io.parallaxkv.Region;",
      "import java.nio.charset.StandardCharsets;",
      "import java.nio.file.Path;",
      "",
      "public class JarProbe {",
      "  public static void main(String[] args) {",
      "    byte[] k = \"k\".getBytes(StandardCharsets.UTF_8);",
      "    try (Parallax db = Parallax.open(Path.of(args[0])); Region r = db.region(\"r\")) {",
      "      r.put(k, \"v\".getBytes(StandardCharsets.UTF_8));",
      "      System.out.println(\"backend=\" + Parallax.backend() + \" value=\"",
      "          + new String(r.get(k), StandardCharsets.UTF_8));",
      "    }",
      "  }",
      "}",
      "");

  @TempDir Path dir;

  private static Path jar() {
    assumeTrue(JAR != null, "run by Maven, which builds the jar and sets -Dparallax.test.jar");
    Path p = Path.of(JAR);
    assertTrue(Files.isRegularFile(p), p + " was not built before the tests");
    return p;
  }

  @Test
  void jarHasTheFfmLayerAndTheLibrary() throws IOException {
    try (JarFile jar = new JarFile(jar().toFile())) {
      assertEquals("true", jar.getManifest().getMainAttributes().getValue("Multi-Release"));
      assertNotNull(jar.getJarEntry("META-INF/versions/22/io/parallaxkv/internal/FfmBackend.class"));
      assertNotNull(jar.getJarEntry("META-INF/versions/22/io/parallaxkv/ParallaxSegments.class"));
      assertNull(jar.getJarEntry("io/parallaxkv/internal/FfmBackend.class"),
          "the FFM backend exists only in the JDK 22 layer");
      assertNotNull(jar.getJarEntry("io/parallaxkv/internal/JniBackend.class"));
      for (String platform : PLATFORMS) {
        assertNotNull(jar.getJarEntry("native/" + platform + "/libparallax.so"), platform);
      }
      assertEquals("io.parallaxkv.internal.SelfCheck",
          jar.getManifest().getMainAttributes().getValue("Main-Class"));
    }
  }

  /**
   * Where {@code /tmp} is mounted noexec (hardened servers), loading works: the default cache is
   * under the user's home; where that is noexec too, the error names the way out, and the
   * override works. Needs root to mount a noexec tmpfs; skipped otherwise.
   */
  @Test
  void loadsWhereTmpIsNoexecAndExplainsANoexecCache() throws Exception {
    Path jar = jar();
    Path noexec = Files.createDirectories(dir.resolve("noexec"));
    Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "noexec,size=32m", "tmpfs",
        noexec.toString()).redirectErrorStream(true).start();
    String mountOut = new String(mount.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assumeTrue(mount.waitFor() == 0, "cannot mount a noexec tmpfs here (not root?): " + mountOut);
    try {
      Path home = Files.createDirectories(dir.resolve("home"));
      String expected = "backend=" + (Runtime.version().feature() >= 22 ? "ffm" : "jni") + " value=v";
      List<String> tmpNoexec = List.of("-Djava.io.tmpdir=" + noexec, "-Duser.home=" + home);
      assertEquals(expected, run(jar, tmpNoexec, dir.resolve("a.vol")).ok());

      List<String> allNoexec = List.of("-Djava.io.tmpdir=" + noexec,
          "-Duser.home=" + Files.createDirectories(noexec.resolve("home")));
      Result failed = run(jar, allNoexec, dir.resolve("b.vol"));
      assertEquals(1, failed.exit, "an exception, not a crash: " + failed.err);
      assertTrue(failed.err.contains("noexec") && failed.err.contains("parallax.cache.dir"),
          failed.err);

      List<String> overridden = new ArrayList<>(allNoexec);
      overridden.add("-Dparallax.cache.dir=" + dir.resolve("exec-cache"));
      assertEquals(expected, run(jar, overridden, dir.resolve("c.vol")).ok());
    } finally {
      new ProcessBuilder("umount", noexec.toString()).inheritIO().start().waitFor();
    }
  }

  @Test
  void theJarAloneRunsOnTheBackendOfItsJdkAndExtractsTheLibraryOnce() throws Exception {
    Path jar = jar();
    Path cache = dir.resolve("cache");
    String expected = "backend=" + (Runtime.version().feature() >= 22 ? "ffm" : "jni") + " value=v";
    assertEquals(expected, runProbe(jar, cache, dir.resolve("first.vol")));

    Path extracted = cache.resolve("libparallax-" + sha256(jar).substring(0, 32) + ".so");
    assertEquals(List.of(extracted), list(cache), "one file, named by the content hash");
    FileTime written = Files.getLastModifiedTime(extracted);

    assertEquals(expected, runProbe(jar, cache, dir.resolve("second.vol")));
    assertEquals(List.of(extracted), list(cache));
    assertEquals(written, Files.getLastModifiedTime(extracted), "reused, not extracted again");
  }

  /** A child JVM's exit code and output. */
  private record Result(int exit, String out, String err) {
    /** The output of a child that must have succeeded without warnings. */
    String ok() {
      assertEquals(0, exit, "child failed: " + out + "\n" + err);
      assertFalse(err.contains("WARNING"), "the child warned:\n" + err);
      return out;
    }
  }

  /** Runs the probe in a child JVM with only the jar on the class path; returns its output. */
  private String runProbe(Path jar, Path cache, Path volume) throws Exception {
    return run(jar, List.of("-Dparallax.cache.dir=" + cache), volume).ok();
  }

  /** Runs the probe in a child JVM with only the jar on the class path and these options. */
  private Result run(Path jar, List<String> jvmOptions, Path volume) throws Exception {
    Path source = dir.resolve("JarProbe.java");
    Files.writeString(source, PROBE);
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    if (Runtime.version().feature() >= 22) cmd.add("--enable-native-access=ALL-UNNAMED");
    cmd.addAll(jvmOptions);
    cmd.addAll(List.of("-cp", jar.toString(), source.toString(), volume.toString()));
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile());
    Map<String, String> env = pb.environment();
    // Nothing may steer the child to another backend, library or cache, or add JVM options.
    env.keySet().removeIf(k -> k.startsWith("PARALLAX_"));
    env.remove("XDG_CACHE_HOME");
    env.remove("JAVA_TOOL_OPTIONS");
    env.remove("JDK_JAVA_OPTIONS");
    env.remove("_JAVA_OPTIONS");
    pb.redirectError(dir.resolve("stderr.txt").toFile());
    Process p = pb.start();
    String out;
    try (InputStream in = p.getInputStream()) {
      out = new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
    }
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the child JVM did not finish");
    return new Result(p.exitValue(), out, Files.readString(dir.resolve("stderr.txt")));
  }

  private static List<Path> list(Path d) throws IOException {
    try (Stream<Path> s = Files.list(d)) {
      return s.sorted().collect(Collectors.toList());
    }
  }

  private static String sha256(Path jar) throws Exception {
    try (JarFile j = new JarFile(jar.toFile()); InputStream in = j.getInputStream(j.getJarEntry(LIBRARY))) {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(in.readAllBytes()));
    }
  }
}
