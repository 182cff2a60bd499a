package io.parallaxkv;

/** The operating system reported an I/O error ({@code PAR_EIO}). */
public class ParallaxIOException extends ParallaxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with an engine status code (0: detected in Java) and a message. */
  public ParallaxIOException(int status, String message) {
    super(status, message);
  }

  /** Creates the exception with a message and a Java-side status of {@code EIO}. */
  public ParallaxIOException(String message) {
    super(EIO, message);
  }
}
