package io.parallaxkv.internal;

import java.nio.file.Path;
import java.util.Locale;

/**
 * Chooses and loads the backend once per class loader: {@code -Dparallax.backend} (or
 * {@code PARALLAX_BACKEND}) = {@code ffm}, {@code jni} or {@code auto} (the default: FFM on
 * JDK 22+, JNI before).
 */
public final class Backend {
  /** System property selecting the backend. */
  public static final String PROPERTY = "parallax.backend";
  /** Environment variable selecting the backend. */
  public static final String ENV = "PARALLAX_BACKEND";

  private Backend() {}

  private static final class Holder {
    static final NativeApi API;
    static final RuntimeException FAILURE;

    static {
      NativeApi api = null;
      RuntimeException failure = null;
      try {
        api = load();
      } catch (RuntimeException | LinkageError e) {
        failure = e instanceof RuntimeException ? (RuntimeException) e
            : new IllegalStateException(e.toString(), e);
      }
      API = api;
      FAILURE = failure;
    }
  }

  /**
   * The backend, loading the native library on first use. Throws
   * {@link IllegalStateException} (with the reason) when it cannot be loaded; the public API
   * wraps it into {@code NativeLibraryException}.
   */
  public static NativeApi api() {
    NativeApi a = Holder.API;
    if (a == null) {
      throw new IllegalStateException(Holder.FAILURE.getMessage(), Holder.FAILURE);
    }
    return a;
  }

  /** The chosen backend over the located library, once its struct layout is checked. */
  private static NativeApi load() {
    Path lib = NativeLibrary.locate();
    NativeApi api = create(lib);
    Layout.check(api.layout(), lib);
    return api;
  }

  private static NativeApi create(Path lib) {
    String choice = System.getProperty(PROPERTY);
    if (choice == null || choice.isEmpty()) choice = System.getenv(ENV);
    if (choice == null || choice.isEmpty()) choice = "auto";
    choice = choice.toLowerCase(Locale.ROOT);
    switch (choice) {
      case "jni":
        return new JniBackend(lib);
      case "ffm": {
        NativeApi f = FfmSupport.create(lib);
        if (f == null) {
          throw new IllegalStateException("-D" + PROPERTY + "=ffm needs JDK 22 or later (running "
              + Runtime.version() + ") and the multi-release jar; use jni or auto");
        }
        return f;
      }
      case "auto": {
        NativeApi f = Runtime.version().feature() >= 22 ? FfmSupport.create(lib) : null;
        return f != null ? f : new JniBackend(lib);
      }
      default:
        throw new IllegalStateException("-D" + PROPERTY + "=" + choice
            + " is not a backend (ffm, jni or auto)");
    }
  }
}
