package io.parallaxkv.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Random;

/**
 * The data every benchmark uses: {@code n} keys of {@link #KEY_SIZE} bytes
 * ({@code "user:%015d"}), one value of the benchmark's size (random, incompressible bytes),
 * direct-buffer copies of both for the zero-copy paths, and a xorshift sequence picking keys
 * uniformly at random. Single-threaded (the benchmarks run one thread).
 */
final class Workload {
  /** Bytes per key. */
  static final int KEY_SIZE = 20;

  final int n;
  final byte[][] keys;
  /** The keys again, as slices of one direct buffer (position 0, limit KEY_SIZE). */
  final ByteBuffer[] directKeys;
  final byte[] value;
  final ByteBuffer directValue;
  /** An absent key (same length, sorts after every present key). */
  final byte[] absentKey;
  final ByteBuffer directAbsentKey;
  private int x = 0x9E3779B9;

  Workload(int n, int valueSize) {
    this.n = n;
    keys = new byte[n][];
    directKeys = new ByteBuffer[n];
    ByteBuffer all = ByteBuffer.allocateDirect(n * KEY_SIZE);
    for (int i = 0; i < n; i++) {
      keys[i] = key("user:", i);
      all.put(i * KEY_SIZE, keys[i]);
      directKeys[i] = all.slice(i * KEY_SIZE, KEY_SIZE);
    }
    value = new byte[valueSize];
    new Random(42).nextBytes(value);
    directValue = ByteBuffer.allocateDirect(valueSize);
    directValue.put(0, value);
    absentKey = key("zzzz:", 7);
    directAbsentKey = ByteBuffer.allocateDirect(KEY_SIZE).put(absentKey).flip();
  }

  private static byte[] key(String prefix, int i) {
    byte[] k = String.format("%s%015d", prefix, i).getBytes(StandardCharsets.US_ASCII);
    if (k.length != KEY_SIZE) throw new IllegalStateException("key length " + k.length);
    return k;
  }

  /** A uniformly random key index (xorshift32, so no allocation and no contention). */
  int next() {
    int v = x;
    v ^= v << 13;
    v ^= v >>> 17;
    v ^= v << 5;
    x = v;
    return (int) (((v & 0xFFFFFFFFL) * n) >>> 32);
  }

  /** A fresh directory for one trial: {@code -Dbench.dir} or the temp directory. */
  static Path tempDir(String prefix) {
    try {
      String base = System.getProperty("bench.dir");
      return base == null ? Files.createTempDirectory(prefix)
          : Files.createTempDirectory(Files.createDirectories(Path.of(base)), prefix);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static void deleteRecursively(Path dir) {
    if (dir == null || !Files.exists(dir)) return;
    try {
      Files.walkFileTree(dir, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult visitFile(Path f, BasicFileAttributes a) throws IOException {
          Files.delete(f);
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
          Files.delete(d);
          return FileVisitResult.CONTINUE;
        }
      });
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
