package io.parallaxkv;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.nio.file.Path;

/** Helpers shared by the tests. */
final class TestSupport {
  private TestSupport() {}

  static byte[] b(String s) {
    return s.getBytes(UTF_8);
  }

  static String s(byte[] b) {
    return b == null ? null : new String(b, UTF_8);
  }

  /** Small L0 so that tests reach compactions quickly; short durability interval. */
  static Options small() {
    return Options.builder().l0Size(256 << 10).durabilityInterval(java.time.Duration.ofMillis(5))
        .build();
  }

  static Parallax open(Path dir) {
    return Parallax.open(dir.resolve("test.vol"), small());
  }
}
