package io.parallaxkv;

/** A key, value, batch or name over its limit ({@code PAR_ETOOBIG}); see {@link Parallax#MAX_KEY_SIZE}. */
public class TooBigException extends ParallaxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with an engine status code (0: detected in Java) and a message. */
  public TooBigException(int status, String message) {
    super(status, message);
  }

  /** Creates the exception with a message and a Java-side status of {@code ETOOBIG}. */
  public TooBigException(String message) {
    super(ETOOBIG, message);
  }
}
