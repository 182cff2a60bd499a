package io.parallaxkv;

/** The volume or its file system is full ({@code PAR_ENOSPC}). */
public class NoSpaceException extends ParallaxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with an engine status code (0: detected in Java) and a message. */
  public NoSpaceException(int status, String message) {
    super(status, message);
  }

  /** Creates the exception with a message and a Java-side status of {@code ENOSPC}. */
  public NoSpaceException(String message) {
    super(ENOSPC, message);
  }
}
