package io.parallaxkv;

/**
 * The native library could not be located, extracted or loaded; the message names the reason
 * (unsupported platform, missing glibc symbol, noexec directory, missing native access, ...).
 * Status 0.
 */
public class NativeLibraryException extends ParallaxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception. */
  public NativeLibraryException(String message, Throwable cause) {
    super(0, message, cause);
  }
}
