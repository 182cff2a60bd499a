package io.parallaxkv.internal;

import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import io.parallaxkv.Scanner;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * The jar's main class: {@code java -jar parallax-engine.jar} loads the engine for this
 * platform through the backend this JDK picks (or {@code -Dparallax.backend}), writes, reads and
 * scans a few pairs in a temporary volume, and prints what it used. The build runs it on JDK 17
 * (JNI) and JDK 25 (FFM) before it calls the jar built; users run it to check a machine.
 */
public final class SelfCheck {
  private SelfCheck() {}

  public static void main(String[] args) throws IOException {
    Path dir = Files.createTempDirectory("parallax-selfcheck-");
    try {
      check(dir.resolve("check.vol"));
    } finally {
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  private static void check(Path volume) {
    byte[][] keys = new byte[3][];
    try (Parallax db = Parallax.open(volume); Region r = db.region("selfcheck")) {
      for (int i = 0; i < keys.length; i++) {
        keys[i] = ("key" + i).getBytes(StandardCharsets.UTF_8);
        r.put(keys[i], new byte[i * 700]); // small, medium and large pairs
      }
      for (int i = 0; i < keys.length; i++) {
        if (!Arrays.equals(new byte[i * 700], r.get(keys[i]))) {
          throw new IllegalStateException("self-check: wrong value for key" + i);
        }
      }
      int n = 0;
      try (Scanner s = r.scanner()) {
        for (; s.isValid(); s.next()) n++;
      }
      if (n != keys.length) throw new IllegalStateException("self-check: scanned " + n + " pairs");
    }
    String version = Parallax.class.getPackage().getImplementationVersion();
    System.out.println("parallax-engine " + (version == null ? "(unpackaged)" : version)
        + ": backend " + Parallax.backend() + " on Java " + Runtime.version() + ", "
        + NativeLibrary.platform() + ", library " + NativeLibrary.locate() + ": ok");
  }
}
