package io.parallaxkv.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Finds {@code libparallax.so}: an explicit path ({@code -Dparallax.library.path} or
 * {@code PARALLAX_LIBRARY_PATH}), else the copy embedded in the jar for this platform at
 * {@code /native/<platform>/libparallax.so} ({@code linux-x86_64} and {@code linux-aarch64} for
 * glibc 2.17+, {@code linux-x86_64-musl}), extracted once per content hash into a cache
 * directory ({@code -Dparallax.cache.dir}, {@code PARALLAX_CACHE_DIR}, else
 * {@code $XDG_CACHE_HOME/parallax} or {@code ~/.cache/parallax}, else
 * {@code java.io.tmpdir/parallax-<user>}) and reused by every later run.
 */
public final class NativeLibrary {
  /** System property naming a libparallax.so to load instead of the embedded one. */
  public static final String PATH_PROPERTY = "parallax.library.path";
  /** Environment variable naming a libparallax.so to load instead of the embedded one. */
  public static final String PATH_ENV = "PARALLAX_LIBRARY_PATH";
  /** System property naming the extraction directory. */
  public static final String CACHE_PROPERTY = "parallax.cache.dir";
  /** Environment variable naming the extraction directory. */
  public static final String CACHE_ENV = "PARALLAX_CACHE_DIR";

  static final String RESOURCE_DIR = "/native/";
  static final String LIBRARY = "libparallax.so";
  private static final System.Logger LOG = System.getLogger("io.parallaxkv");
  private static final Set<PosixFilePermission> EXECUTABLE =
      PosixFilePermissions.fromString("rwxr-xr-x");

  private NativeLibrary() {}

  /** The platform directory name, or throws naming the unsupported platform. */
  static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    boolean musl = os.startsWith("linux") && isMusl();
    String platform = null;
    if (os.startsWith("linux") && (arch.equals("amd64") || arch.equals("x86_64"))) {
      platform = musl ? "linux-x86_64-musl" : "linux-x86_64";
    } else if (os.startsWith("linux") && arch.equals("aarch64") && !musl) {
      platform = "linux-aarch64";
    }
    if (platform == null) {
      throw new IllegalStateException("unsupported platform " + System.getProperty("os.name") + "/"
          + System.getProperty("os.arch") + (musl ? " (musl)" : "") + ": the jar embeds "
          + LIBRARY + " for linux-x86_64 and linux-aarch64 (glibc 2.17+) and linux-x86_64-musl;"
          + " build the engine for this platform and set -D" + PATH_PROPERTY + "=/path/to/"
          + LIBRARY);
    }
    return platform;
  }

  /** Whether this JVM runs on musl: its own dynamic loader is musl's ({@code ld-musl-*}). */
  static boolean isMusl() {
    try (Stream<String> maps = Files.lines(Paths.get("/proc/self/maps"))) {
      return maps.anyMatch(line -> line.contains("/ld-musl-"));
    } catch (IOException | UncheckedIOException | SecurityException e) {
      return false;
    }
  }

  /** The library file to load: the override, or the extracted embedded copy. */
  public static Path locate() {
    String p = System.getProperty(PATH_PROPERTY);
    if (p == null || p.isEmpty()) p = System.getenv(PATH_ENV);
    if (p != null && !p.isEmpty()) {
      Path path = Paths.get(p).toAbsolutePath();
      if (!Files.isRegularFile(path)) {
        throw new IllegalStateException(PATH_PROPERTY + "/" + PATH_ENV + " names " + path
            + ", which is not a file");
      }
      return path;
    }
    String resource = RESOURCE_DIR + platform() + "/" + LIBRARY;
    byte[] bytes;
    try (InputStream in = NativeLibrary.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("the jar has no " + resource
            + " (a build without the native engine?); set -D" + PATH_PROPERTY);
      }
      bytes = in.readAllBytes();
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + resource + ": " + e, e);
    }
    return extract(bytes, cacheDir());
  }

  /** The extraction directory. */
  static Path cacheDir() {
    String d = System.getProperty(CACHE_PROPERTY);
    if (d == null || d.isEmpty()) d = System.getenv(CACHE_ENV);
    if (d != null && !d.isEmpty()) return Paths.get(d).toAbsolutePath();
    String xdg = System.getenv("XDG_CACHE_HOME");
    if (xdg != null && !xdg.isEmpty()) return Paths.get(xdg, "parallax");
    String home = System.getProperty("user.home");
    if (home != null && !home.isEmpty() && !home.equals("?")) {
      Path h = Paths.get(home);
      if (Files.isWritable(h) || Files.isWritable(h.resolve(".cache"))) {
        return h.resolve(".cache").resolve("parallax");
      }
    }
    return Paths.get(System.getProperty("java.io.tmpdir"),
        "parallax-" + System.getProperty("user.name", "user"));
  }

  /**
   * Writes {@code bytes} to {@code dir/libparallax-<sha256 prefix>.so} unless a file with that
   * content is already there; concurrent JVMs race safely (write to a temporary name, then an
   * atomic rename). Returns the file.
   */
  public static Path extract(byte[] bytes, Path dir) {
    String hash = sha256(bytes);
    Path target = dir.resolve("libparallax-" + hash.substring(0, 32) + ".so");
    try {
      if (Files.isRegularFile(target) && Files.size(target) == bytes.length
          && Arrays.equals(bytes, Files.readAllBytes(target))) {
        if (!Files.isExecutable(target)) Files.setPosixFilePermissions(target, EXECUTABLE);
        return target;
      }
      Files.createDirectories(dir);
      Path tmp = Files.createTempFile(dir, ".libparallax-", ".tmp");
      try {
        Files.write(tmp, bytes);
        // Executable, as the loader installs libraries: explain() then tells a noexec mount by
        // access(X_OK) failing, since FFM's error does not say why dlopen failed.
        Files.setPosixFilePermissions(tmp, EXECUTABLE);
        try {
          Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
          Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
        }
      } finally {
        Files.deleteIfExists(tmp);
      }
      return target;
    } catch (IOException | SecurityException e) {
      throw new IllegalStateException("cannot extract " + LIBRARY + " to " + dir + " (" + e
          + "); point -D" + CACHE_PROPERTY + " at a writable directory, or -D" + PATH_PROPERTY
          + " at an installed copy", e);
    }
  }

  static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * {@code System.load} with an explanation of the usual failures. The JVM lets one class loader
   * load a library file through JNI; when another loader (an application server's, a test
   * framework's) already holds {@code file}, this loader loads a private copy, removed from the
   * directory as soon as it is loaded (the mapping outlives the name).
   */
  static void systemLoad(Path file) {
    try {
      System.load(file.toString());
      return;
    } catch (UnsatisfiedLinkError e) {
      String m = String.valueOf(e.getMessage());
      if (!m.contains("already loaded in another classloader")) {
        throw new IllegalStateException(explain(file, m), e);
      }
    }
    Path copy = null;
    try {
      copy = Files.createTempFile(file.getParent(), ".libparallax-loader-", ".so");
      Files.copy(file, copy, StandardCopyOption.REPLACE_EXISTING);
      System.load(copy.toString());
    } catch (IOException e) {
      throw new IllegalStateException("cannot copy " + file + " for a second class loader: " + e
          + "; point -D" + CACHE_PROPERTY + " at a writable directory", e);
    } catch (UnsatisfiedLinkError e) {
      throw new IllegalStateException(explain(copy, e.getMessage()), e);
    } finally {
      if (copy != null) {
        try {
          Files.deleteIfExists(copy);
        } catch (IOException e) {
          LOG.log(System.Logger.Level.WARNING, "cannot remove " + copy + ": " + e);
        }
      }
    }
  }

  /** A message for a dlopen failure that names the likely cause. */
  public static String explain(Path file, String dlerror) {
    String m = dlerror == null ? "" : dlerror;
    String hint;
    if (file != null && Files.isRegularFile(file) && !Files.isExecutable(file)) {
      hint = "the directory is probably mounted noexec; set -D" + CACHE_PROPERTY
          + " to a directory that allows executables";
    } else if (m.contains("GLIBC_") || m.contains("version `")) {
      hint = "the C library of this system is older than the one the engine was built against";
    } else if (m.contains("failed to map segment") || m.contains("Operation not permitted")) {
      hint = "the directory is probably mounted noexec; set -D" + CACHE_PROPERTY
          + " to a directory that allows executables";
    } else if (m.contains("wrong ELF class") || m.contains("ELF") || m.contains("architecture")) {
      hint = "the library was built for another platform (os.arch=" + System.getProperty("os.arch")
          + ")";
    } else if (m.contains("No such file")) {
      hint = "the file (or a library it needs) is missing";
    } else {
      hint = "see the loader's message";
    }
    return "cannot load " + file + ": " + m + " (" + hint + ")";
  }

  /**
   * On JDK 22+, logs (once per module and backend) how to enable native access when it is off:
   * JDK 24+ warns about it and a future JDK refuses without it.
   */
  static void checkNativeAccess(Module module, String what) {
    if (Runtime.version().feature() < 22) return;
    try {
      Method m = Module.class.getMethod("isNativeAccessEnabled");
      if (!(Boolean) m.invoke(module)) {
        LOG.log(System.Logger.Level.WARNING, nativeAccessMessage(module, what));
      }
    } catch (ReflectiveOperationException | RuntimeException e) {
      // nothing to report
    }
  }

  /** The message that explains the missing {@code --enable-native-access} flag. */
  public static String nativeAccessMessage(Module module, String what) {
    String name = module.isNamed() ? module.getName() : "ALL-UNNAMED";
    return "Parallax (" + what + " backend) calls native code but native access is not enabled for "
        + (module.isNamed() ? "module " + name : "the class path")
        + ": add --enable-native-access=" + name
        + " to the java command line (or Enable-Native-Access: ALL-UNNAMED to an executable"
        + " jar's manifest). JDK 24+ prints a warning without it; --illegal-native-access=deny"
        + " and future JDKs refuse to run.";
  }
}
