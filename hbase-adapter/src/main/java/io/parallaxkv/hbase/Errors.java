package io.parallaxkv.hbase;

import io.parallaxkv.InvalidArgumentException;
import io.parallaxkv.LimitException;
import io.parallaxkv.ParallaxClosedException;
import io.parallaxkv.ParallaxException;
import io.parallaxkv.TooBigException;
import java.io.IOException;
import org.apache.hadoop.hbase.DoNotRetryIOException;

/** Engine exceptions as the IOExceptions HBase callers handle. */
final class Errors {
  private Errors() {}

  /**
   * Input the engine refuses (too big, invalid, over a limit) is the caller's mistake and
   * retrying cannot help: DoNotRetryIOException, as a region server reports it. The rest are I/O
   * failures.
   */
  static IOException of(ParallaxException e) {
    if (e instanceof TooBigException || e instanceof InvalidArgumentException
        || e instanceof LimitException || e instanceof ParallaxClosedException) {
      return new DoNotRetryIOException(e.getMessage(), e);
    }
    return new IOException(e.getMessage(), e);
  }
}
