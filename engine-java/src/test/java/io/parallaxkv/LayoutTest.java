package io.parallaxkv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.parallaxkv.internal.Backend;
import io.parallaxkv.internal.Layout;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The struct offsets and limits the Java side hard-codes match the library's, on each backend. */
class LayoutTest {
  @Test
  void javaLayoutMatchesTheLibrary() {
    assertArrayEquals(Layout.expected(), Backend.api().layout());
  }

  @Test
  void aLibraryFromAnotherBuildIsRefusedNamingTheDifference() {
    long[] other = Layout.expected();
    other[1] += 8; // an option moved
    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> Layout.check(other, "lib.so"));
    assertTrue(e.getMessage().contains("lib.so") && e.getMessage().contains("layout value 1"),
        e.getMessage());
    long[] shorter = Arrays.copyOf(Layout.expected(), 5);
    assertThrows(IllegalStateException.class, () -> Layout.check(shorter, "lib.so"));
    long[] newer = Arrays.copyOf(Layout.expected(), Layout.expected().length + 2);
    assertDoesNotThrow(() -> Layout.check(newer, "lib.so"), "a newer library that appended");
  }
}
