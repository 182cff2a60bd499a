package io.parallaxkv.internal;

import java.nio.file.Path;

/** Creates the FFM backend (the JDK 22+ version of this class, in META-INF/versions/22). */
final class FfmSupport {
  private FfmSupport() {}

  /** The FFM backend. */
  static NativeApi create(Path library) {
    return new FfmBackend(library);
  }
}
