package io.parallaxkv.ycsb;

import java.util.Map;
import java.util.function.BiConsumer;

/** An ordered byte-key store, as the YCSB bindings need it; thread-safe. */
interface KvStore extends AutoCloseable {
  /** The value of {@code key}, or null. */
  byte[] get(byte[] key);

  void put(byte[] key, byte[] value);

  void delete(byte[] key);

  /** Calls {@code sink} with up to {@code count} pairs from the first key {@code >= start}. */
  void scan(byte[] start, int count, BiConsumer<byte[], byte[]> sink);

  /** Engine counters for the phase report (read before closing). */
  Map<String, String> stats();

  @Override
  void close();
}
