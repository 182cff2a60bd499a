package io.parallaxkv;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Several class loaders in one JVM, each with its own copy of the API from the jar (an
 * application server's web apps, a test framework's isolated loaders), all use the engine while
 * this loader has it loaded too. JNI binds a library file to the first loader that loads it; the
 * others must still get a working engine.
 */
class ClassLoadersTest {
  @TempDir Path dir;

  @Test
  void loadersThatEachLoadTheJarUseTheEngineSideBySide() throws Exception {
    String jar = System.getProperty("parallax.test.jar");
    assumeTrue(jar != null, "run by Maven, which builds the jar and sets -Dparallax.test.jar");
    byte[] key = "k".getBytes(StandardCharsets.UTF_8);
    try (Parallax db = Parallax.open(dir.resolve("app.vol")); Region r = db.region("r")) {
      r.put(key, "app".getBytes(StandardCharsets.UTF_8));
      for (int i = 0; i < 2; i++) {
        try (URLClassLoader loader = new URLClassLoader(
            new URL[] {Path.of(jar).toUri().toURL()}, ClassLoader.getPlatformClassLoader())) {
          assertNotSame(Parallax.class, loader.loadClass(Parallax.class.getName()));
          assertEquals("loader" + i, roundTrip(loader, dir.resolve("loader" + i + ".vol"), "loader" + i));
        }
      }
      assertArrayEquals("app".getBytes(StandardCharsets.UTF_8), r.get(key));
    }
    try (var files = Files.list(Path.of(System.getProperty("parallax.cache.dir")))) {
      assertTrue(files.noneMatch(f -> f.getFileName().toString().startsWith(".libparallax-loader-")),
          "the private copies are removed once loaded");
    }
  }

  /** Opens a volume through the API classes of {@code loader}, puts and gets one pair. */
  private static String roundTrip(ClassLoader loader, Path volume, String value) throws Exception {
    Class<?> parallax = loader.loadClass(Parallax.class.getName());
    Class<?> region = loader.loadClass(Region.class.getName());
    Method put = region.getMethod("put", byte[].class, byte[].class);
    Method get = region.getMethod("get", byte[].class);
    byte[] key = "k".getBytes(StandardCharsets.UTF_8);
    try (AutoCloseable db = (AutoCloseable) parallax.getMethod("open", Path.class).invoke(null, volume);
         AutoCloseable r = (AutoCloseable) parallax.getMethod("region", String.class).invoke(db, "r")) {
      put.invoke(r, key, value.getBytes(StandardCharsets.UTF_8));
      return new String((byte[]) get.invoke(r, key), StandardCharsets.UTF_8);
    }
  }
}
