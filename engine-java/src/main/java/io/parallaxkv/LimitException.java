package io.parallaxkv;

/** Too many regions in the volume ({@code PAR_ELIMIT}). */
public class LimitException extends ParallaxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with an engine status code (0: detected in Java) and a message. */
  public LimitException(int status, String message) {
    super(status, message);
  }

  /** Creates the exception with a message and a Java-side status of {@code ELIMIT}. */
  public LimitException(String message) {
    super(ELIMIT, message);
  }
}
