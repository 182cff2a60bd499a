package io.parallaxkv;

/** The file is not a Parallax volume ({@code PAR_ENOTVOLUME}). */
public class NotAVolumeException extends ParallaxException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with an engine status code (0: detected in Java) and a message. */
  public NotAVolumeException(int status, String message) {
    super(status, message);
  }

  /** Creates the exception with a message and a Java-side status of {@code ENOTVOLUME}. */
  public NotAVolumeException(String message) {
    super(ENOTVOLUME, message);
  }
}
