package io.parallaxkv;

/**
 * An empty argument, a bad option or an unusable buffer ({@code PAR_EINVAL}). A null argument
 * throws {@link NullPointerException} instead, as Java APIs do.
 */
public class InvalidArgumentException extends ParallaxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with an engine status code (0: detected in Java) and a message. */
  public InvalidArgumentException(int status, String message) {
    super(status, message);
  }

  /** Creates the exception with a message and a Java-side status of {@code EINVAL}. */
  public InvalidArgumentException(String message) {
    super(EINVAL, message);
  }
}
