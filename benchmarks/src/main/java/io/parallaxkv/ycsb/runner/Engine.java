package io.parallaxkv.ycsb.runner;

import io.parallaxkv.ycsb.BlobDbClient;
import io.parallaxkv.ycsb.ParallaxClient;
import io.parallaxkv.ycsb.RocksDbClient;
import java.util.Locale;

/** The engines the runner compares, with their YCSB binding and directory property. */
public enum Engine {
  /** Parallax (hybrid placement unless {@code --parallax-placement} says otherwise). */
  PARALLAX("parallax", ParallaxClient.class.getName(), "parallax.dir"),
  /** RocksDB, values in place. */
  ROCKSDB("rocksdb", RocksDbClient.class.getName(), "rocksdb.dir"),
  /** RocksDB's BlobDB, large values in blob files. */
  BLOBDB("blobdb", BlobDbClient.class.getName(), "rocksdb.dir");

  /** Command-line and table name. */
  public final String id;
  /** The YCSB binding class. */
  public final String binding;
  /** The binding's directory property. */
  public final String dirProperty;

  Engine(String id, String binding, String dirProperty) {
    this.id = id;
    this.binding = binding;
    this.dirProperty = dirProperty;
  }

  /** The engine named {@code s}. */
  public static Engine parse(String s) {
    String t = s.trim().toLowerCase(Locale.ROOT);
    for (Engine e : values()) {
      if (e.id.equals(t)) return e;
    }
    throw new IllegalArgumentException("unknown engine " + s + " (parallax, rocksdb, blobdb)");
  }
}
