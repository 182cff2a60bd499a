package io.parallaxkv.internal;

import java.nio.file.Path;

/**
 * Creates the FFM backend. This base version (JDK 17..21) has none; the multi-release layer
 * {@code META-INF/versions/22} replaces this class with one that does.
 */
final class FfmSupport {
  private FfmSupport() {}

  /** The FFM backend, or null when this JDK (or this build) has none. */
  static NativeApi create(Path library) {
    return null;
  }
}
