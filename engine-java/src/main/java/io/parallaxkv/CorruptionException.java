package io.parallaxkv;

/** A checksum or structural check of the volume failed ({@code PAR_ECORRUPT}). */
public class CorruptionException extends ParallaxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with an engine status code (0: detected in Java) and a message. */
  public CorruptionException(int status, String message) {
    super(status, message);
  }

  /** Creates the exception with a message and a Java-side status of {@code ECORRUPT}. */
  public CorruptionException(String message) {
    super(ECORRUPT, message);
  }
}
