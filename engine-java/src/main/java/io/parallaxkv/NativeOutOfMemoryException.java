package io.parallaxkv;

/** The engine could not allocate native memory ({@code PAR_ENOMEM}). */
public class NativeOutOfMemoryException extends ParallaxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with an engine status code (0: detected in Java) and a message. */
  public NativeOutOfMemoryException(int status, String message) {
    super(status, message);
  }

  /** Creates the exception with a message and a Java-side status of {@code ENOMEM}. */
  public NativeOutOfMemoryException(String message) {
    super(ENOMEM, message);
  }
}
