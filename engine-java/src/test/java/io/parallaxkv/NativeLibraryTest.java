package io.parallaxkv;

import static org.junit.jupiter.api.Assertions.*;

import io.parallaxkv.internal.NativeLibrary;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NativeLibraryTest {
  @TempDir Path dir;

  @Test
  void extractionReusesOneFilePerContentHash() throws Exception {
    byte[] lib = "not really a library".getBytes();
    Path a = NativeLibrary.extract(lib, dir);
    FileTime t = Files.getLastModifiedTime(a);
    Path b = NativeLibrary.extract(lib, dir);
    assertEquals(a, b);
    assertEquals(t, Files.getLastModifiedTime(b), "not rewritten");
    Path c = NativeLibrary.extract("another build".getBytes(), dir);
    assertNotEquals(a, c);
    try (var files = Files.list(dir)) {
      assertEquals(2, files.count(), "no temporary files left behind");
    }
    Files.write(a, "corrupted".getBytes()); // a damaged cached copy is replaced
    assertEquals(a, NativeLibrary.extract(lib, dir));
    assertArrayEquals(lib, Files.readAllBytes(a));
  }

  @Test
  void embeddedLibraryWasExtractedToTheCache() throws Exception {
    Parallax.backend(); // loads
    String cache = System.getProperty(NativeLibrary.CACHE_PROPERTY);
    if (cache != null) {
      try (var files = Files.list(Path.of(cache))) {
        assertTrue(files.anyMatch(p -> p.getFileName().toString().matches("libparallax-[0-9a-f]{32}\\.so")));
      }
    }
  }

  @Test
  void loadFailuresNameTheReason() {
    Path p = Path.of("/tmp/x/libparallax.so");
    assertTrue(NativeLibrary.explain(p, "libparallax.so: version `GLIBC_2.99' not found").contains("C library"));
    assertTrue(NativeLibrary.explain(p, "failed to map segment from shared object").contains("noexec"));
    assertTrue(NativeLibrary.explain(p, "wrong ELF class: ELFCLASS32").contains("platform"));
    assertTrue(NativeLibrary.nativeAccessMessage(Object.class.getModule(), "FFM")
        .contains("--enable-native-access=java.base"));
  }
}
