package io.parallaxkv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.parallaxkv.internal.Backend;
import io.parallaxkv.internal.Layout;
import io.parallaxkv.internal.NativeLibrary;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The struct offsets and limits the Java side hard-codes match the library's, on each backend. */
class LayoutTest {
  @TempDir Path dir;

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

  /**
   * The check runs when the library loads, on the backend of this run: a copy of the library in
   * which par_abi_layout reports that an option moved is refused in a child JVM, naming the
   * difference; an unchanged copy loads. The copy is made by rewriting, in the library's
   * read-only data, every 16 bytes holding layout values 2 and 3 (an option's offset, and the
   * next): gcc keeps the values as one table, clang also as 16-byte constants its code loads.
   */
  @Test
  void aLibraryFromAnotherBuildIsRefusedWhenItLoads() throws Exception {
    byte[] lib = Files.readAllBytes(NativeLibrary.locate());
    Path same = dir.resolve("same").resolve("libparallax.so");
    Files.createDirectories(same.getParent());
    Files.write(same, lib);
    String loaded = runChild(same);
    assertTrue(loaded.startsWith("LOADED " + Parallax.backend()), loaded);

    long[] want = Layout.expected();
    byte[] pair = pair(want[2], want[3]);
    byte[] moved = pair(want[2] + 8, want[3]);
    int found = 0;
    for (int at = indexOf(lib, pair, 0); at >= 0; at = indexOf(lib, pair, at + 1), found++) {
      System.arraycopy(moved, 0, lib, at, moved.length);
    }
    assertTrue(found > 0, "layout values 2 and 3 are in the library");
    Path other = dir.resolve("other").resolve("libparallax.so");
    Files.createDirectories(other.getParent());
    Files.write(other, lib);
    String out = runChild(other);
    assertTrue(out.startsWith("REFUSED ") && out.contains("layout value 2 is " + (want[2] + 8))
        && out.contains(other.toString()), out);
  }

  private static byte[] pair(long a, long b) {
    return ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(a).putLong(b).array();
  }

  private static String runChild(Path library) throws Exception {
    Process p = TestSupport.startChild(AbiChild.class, library.toString());
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), out);
    return out;
  }

  private static int indexOf(byte[] hay, byte[] needle, int from) {
    for (int i = from; i + needle.length <= hay.length; i++) {
      if (Arrays.equals(hay, i, i + needle.length, needle, 0, needle.length)) return i;
    }
    return -1;
  }
}
