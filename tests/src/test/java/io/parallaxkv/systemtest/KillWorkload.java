package io.parallaxkv.systemtest;

import io.parallaxkv.Options;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.zip.CRC32C;

/**
 * The kill loop's workload, shared by the writing child JVM and the verifying parent: every
 * operation is a pure function of (run seed, thread, sequence number), so the parent can rebuild
 * any thread's history and the value any put wrote. Each thread owns its own keys; its ops are
 * numbered 1, 2, 3, ... across all cycles, and a cycle that lost some acknowledged-but-unsynced
 * ops re-issues them with the same numbers (and so the same keys and values).
 */
final class KillWorkload {
  static final int THREADS = 4;
  static final int KEYS_PER_THREAD = 4096;
  /** Ops are grouped in blocks of this many; some blocks are written as one atomic batch. */
  static final int BLOCK = 8;
  static final String REGION = "kill";

  /** Value header: thread, seq, key index, length, crc32c of everything else. */
  static final int HEADER = 24;

  private KillWorkload() {}

  /**
   * Small L0 and growth factor so that a cycle of a second or two flushes and spills; a low GC
   * threshold so that large-log segments are collected; two workers so that merges overlap.
   */
  static Options options() {
    return Options.builder()
        .l0Size(1L << 20)
        .growthFactor(2)
        .compactionThreads(2)
        .gcThresholdPercent(5)
        .durabilityInterval(Duration.ofMillis(50))
        .build();
  }

  /** One operation of a thread's history. */
  record Op(int thread, long seq, int keyIndex, boolean delete, int valueLength, boolean sync) {
    byte[] key() {
      return KillWorkload.key(thread, keyIndex);
    }

    byte[] value() {
      return KillWorkload.value(thread, seq, keyIndex, valueLength);
    }
  }

  static Op op(long runSeed, int thread, long seq) {
    long h = mix(runSeed ^ mix(thread * 0x9E3779B97F4A7C15L + seq));
    // A quarter of the ops go to 64 hot keys, so that updates, deletes and garbage are common.
    int keyIndex = (h & 3) == 0 ? (int) ((h >>> 2) & 63) : (int) ((h >>> 8) % KEYS_PER_THREAD);
    int pick = (int) ((h >>> 20) % 1000);
    boolean delete = pick < 120;
    int valueLength = 0;
    if (!delete) {
      long r = (h >>> 32) & 0xffff;
      int keyLength = key(thread, keyIndex).length;
      if (pick < 450) {
        valueLength = HEADER + (int) (r % (119 - keyLength - HEADER)); // small: pair < 120 B
      } else if (pick < 700) {
        valueLength = 120 - keyLength + (int) (r % (1023 - 120)); // medium: 120..1023 B
      } else if (pick < 999 || inBatchBlock(runSeed, thread, seq)) {
        valueLength = 1024 + (int) (r % 12_000); // large
      } else {
        valueLength = (2 << 20) + (int) (r % (1 << 20)); // larger than a 2 MiB segment
      }
    }
    boolean sync = ((h >>> 52) % 40) == 0;
    return new Op(thread, seq, keyIndex, delete, valueLength, sync);
  }

  /** True if {@code seq} lies in a block that is written as one batch. */
  static boolean inBatchBlock(long runSeed, int thread, long seq) {
    long block = (seq - 1) / BLOCK;
    return (mix(runSeed * 31 + thread * 0x51L + block * 0x2545F4914F6CDD1DL) % 10) == 0;
  }

  /** True if a recovered prefix may end after {@code seq}: not strictly inside a batch. */
  static boolean isBoundary(long runSeed, int thread, long seq) {
    return seq % BLOCK == 0 || !inBatchBlock(runSeed, thread, seq);
  }

  static byte[] key(int thread, int keyIndex) {
    return String.format("t%d/%04d", thread, keyIndex).getBytes(StandardCharsets.US_ASCII);
  }

  /** Parses a key of {@code thread}'s space, or returns -1. */
  static int keyIndex(byte[] key, int thread) {
    String s = new String(key, StandardCharsets.US_ASCII);
    String prefix = "t" + thread + "/";
    if (!s.startsWith(prefix) || s.length() != prefix.length() + 4) return -1;
    try {
      int i = Integer.parseInt(s.substring(prefix.length()));
      return i >= 0 && i < KEYS_PER_THREAD ? i : -1;
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  static byte[] value(int thread, long seq, int keyIndex, int length) {
    ByteBuffer b = ByteBuffer.allocate(length);
    b.putInt(thread).putLong(seq).putInt(keyIndex).putInt(length);
    long x = mix(seq * 0x9E3779B97F4A7C15L + thread);
    for (int i = HEADER; i < length; i += 8) {
      x = mix(x);
      for (int j = 0; j < 8 && i + j < length; j++) b.put(i + j, (byte) (x >>> (8 * j)));
    }
    b.putInt(20, crc(b.array()));
    return b.array();
  }

  private static int crc(byte[] v) {
    CRC32C c = new CRC32C();
    c.update(v, 0, 20);
    c.update(v, HEADER, v.length - HEADER);
    return (int) c.getValue();
  }

  /** What a value says about itself, if it is well formed; null if it is torn or foreign. */
  record Header(int thread, long seq, int keyIndex) {}

  static Header header(byte[] v) {
    if (v.length < HEADER) return null;
    ByteBuffer b = ByteBuffer.wrap(v);
    if (b.getInt(16) != v.length || b.getInt(20) != crc(v)) return null;
    return new Header(b.getInt(0), b.getLong(4), b.getInt(12));
  }

  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
