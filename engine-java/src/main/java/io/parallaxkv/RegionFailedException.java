package io.parallaxkv;

/** An earlier I/O error made the region read-only ({@code PAR_EFAILED}); reopen it. */
public class RegionFailedException extends ParallaxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with an engine status code (0: detected in Java) and a message. */
  public RegionFailedException(int status, String message) {
    super(status, message);
  }

  /** Creates the exception with a message and a Java-side status of {@code EFAILED}. */
  public RegionFailedException(String message) {
    super(EFAILED, message);
  }
}
