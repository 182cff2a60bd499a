package io.parallaxkv;

/**
 * Base class of every exception the Parallax API throws: unchecked, carrying the engine's
 * status code ({@code par_status} of {@code parallax.h}; 0 when the error was detected in Java
 * before any native call) and the engine's detailed message ({@code par_last_error()}).
 */
public class ParallaxException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** {@code PAR_EINVAL}. */
  public static final int EINVAL = -1;
  /** {@code PAR_ETOOBIG}. */
  public static final int ETOOBIG = -2;
  /** {@code PAR_ENOSPC}. */
  public static final int ENOSPC = -3;
  /** {@code PAR_EIO}. */
  public static final int EIO = -4;
  /** {@code PAR_ECORRUPT}. */
  public static final int ECORRUPT = -5;
  /** {@code PAR_ENOTVOLUME}. */
  public static final int ENOTVOLUME = -6;
  /** {@code PAR_EEXIST}. */
  public static final int EEXIST = -7;
  /** {@code PAR_ENOENT}. */
  public static final int ENOENT = -8;
  /** {@code PAR_EBUSY}. */
  public static final int EBUSY = -9;
  /** {@code PAR_ENOMEM}. */
  public static final int ENOMEM = -10;
  /** {@code PAR_ELIMIT}. */
  public static final int ELIMIT = -11;
  /** {@code PAR_EFAILED}. */
  public static final int EFAILED = -12;

  private final int status;

  /** An exception with the given engine status code and message. */
  public ParallaxException(int status, String message) {
    super(message);
    this.status = status;
  }

  /** An exception with a cause. */
  public ParallaxException(int status, String message, Throwable cause) {
    super(message, cause);
    this.status = status;
  }

  /** The engine status code ({@code PAR_E*}), or 0 for errors detected in Java. */
  public int status() {
    return status;
  }

  /** The most specific exception for an engine status code. */
  static ParallaxException of(int status, String message) {
    switch (status) {
      case EINVAL:
        return new InvalidArgumentException(status, message);
      case ETOOBIG:
        return new TooBigException(status, message);
      case ENOSPC:
        return new NoSpaceException(status, message);
      case EIO:
        return new ParallaxIOException(status, message);
      case ECORRUPT:
        return new CorruptionException(status, message);
      case ENOTVOLUME:
        return new NotAVolumeException(status, message);
      case EEXIST:
        return new AlreadyExistsException(status, message);
      case ENOENT:
        return new NoSuchEntryException(status, message);
      case EBUSY:
        return new BusyException(status, message);
      case ENOMEM:
        return new NativeOutOfMemoryException(status, message);
      case ELIMIT:
        return new LimitException(status, message);
      case EFAILED:
        return new RegionFailedException(status, message);
      default:
        return new ParallaxException(status, message);
    }
  }
}
