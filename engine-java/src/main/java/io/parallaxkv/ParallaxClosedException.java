package io.parallaxkv;

/**
 * A handle (volume, region, snapshot, scanner, batch) was used after it was closed, directly
 * or because its parent was closed. Status 0: detected in Java, no native call was made.
 */
public class ParallaxClosedException extends ParallaxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception. */
  public ParallaxClosedException(String message) {
    super(0, message);
  }
}
