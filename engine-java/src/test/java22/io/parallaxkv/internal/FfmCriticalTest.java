package io.parallaxkv.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A critical downcall runs without the thread-state transition, so the JVM cannot reach a
 * safepoint (a GC, a handshake) until it returns: only calls that never block or take long may
 * be linked so. The set linked critical is exactly these reviewed helpers; in particular never
 * {@code par_scanner_value}, which may read and checksum a 64 MiB value from a log under a lock.
 */
class FfmCriticalTest {
  /** Each returns from memory at hand without locks, I/O or allocation. */
  private static final Set<String> TRIVIAL = Set.of("par_abi_layout", "par_strerror",
      "par_last_error", "par_options_init", "par_batch_clear", "par_batch_count",
      "par_scanner_valid", "par_scanner_key");

  @Test
  void onlyTrivialHelpersAreCriticalDowncalls() {
    NativeApi api = Backend.api();
    assumeTrue(api instanceof FfmBackend, "a property of the FFM backend");
    assertEquals(TRIVIAL, ((FfmBackend) api).criticalSymbols());
  }
}
