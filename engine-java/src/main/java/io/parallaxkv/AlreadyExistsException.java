package io.parallaxkv;

/** The region already exists ({@code PAR_EEXIST}). */
public class AlreadyExistsException extends ParallaxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with an engine status code (0: detected in Java) and a message. */
  public AlreadyExistsException(int status, String message) {
    super(status, message);
  }

  /** Creates the exception with a message and a Java-side status of {@code EEXIST}. */
  public AlreadyExistsException(String message) {
    super(EEXIST, message);
  }
}
