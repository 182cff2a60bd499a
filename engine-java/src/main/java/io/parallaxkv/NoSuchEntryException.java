package io.parallaxkv;

/** No such region, or no volume file and {@link Options.Builder#createIfMissing(boolean)} is off ({@code PAR_ENOENT}). */
public class NoSuchEntryException extends ParallaxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with an engine status code (0: detected in Java) and a message. */
  public NoSuchEntryException(int status, String message) {
    super(status, message);
  }

  /** Creates the exception with a message and a Java-side status of {@code ENOENT}. */
  public NoSuchEntryException(String message) {
    super(ENOENT, message);
  }
}
