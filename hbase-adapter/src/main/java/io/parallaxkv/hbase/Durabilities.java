package io.parallaxkv.hbase;

import io.parallaxkv.WriteOptions;
import org.apache.hadoop.hbase.client.Durability;

/**
 * HBase durability levels as engine writes. SYNC_WAL and FSYNC_WAL wait for the engine's log to
 * be on disk. ASYNC_WAL is the engine's group commit. USE_DEFAULT takes the table's durability,
 * and a table left at USE_DEFAULT gets group commit (HBase's own default is SYNC_WAL; this
 * adapter keeps the engine's default). SKIP_WAL is the engine's write without its log: durable
 * once the region's in-memory level is flushed, as HBase's is once the memstore is.
 */
final class Durabilities {
  private Durabilities() {}

  static WriteOptions of(Durability mutation, Durability table) {
    Durability d = mutation == Durability.USE_DEFAULT ? table : mutation;
    return switch (d) {
      case SYNC_WAL, FSYNC_WAL -> WriteOptions.SYNC;
      case SKIP_WAL -> WriteOptions.NO_WAL;
      default -> WriteOptions.DEFAULT;
    };
  }
}
