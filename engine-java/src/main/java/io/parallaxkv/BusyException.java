package io.parallaxkv;

/** The region is already open, or the volume is locked by another handle or process ({@code PAR_EBUSY}). */
public class BusyException extends ParallaxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with an engine status code (0: detected in Java) and a message. */
  public BusyException(int status, String message) {
    super(status, message);
  }

  /** Creates the exception with a message and a Java-side status of {@code EBUSY}. */
  public BusyException(String message) {
    super(EBUSY, message);
  }
}
