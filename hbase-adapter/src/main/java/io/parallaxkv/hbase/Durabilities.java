package io.parallaxkv.hbase;

import io.parallaxkv.WriteOptions;
import org.apache.hadoop.hbase.client.Durability;

/**
 * HBase durability levels as engine writes. SYNC_WAL and FSYNC_WAL wait for the engine's log to
 * be on disk. ASYNC_WAL is the engine's group commit. USE_DEFAULT takes the table's durability,
 * and a table left at USE_DEFAULT gets group commit (HBase's own default is SYNC_WAL; this
 * adapter keeps the engine's default). SKIP_WAL: the engine has no write without its log yet,
 * so it is group commit too.
 */
final class Durabilities {
  private Durabilities() {}

  static WriteOptions of(Durability mutation, Durability table) {
    Durability d = mutation == Durability.USE_DEFAULT ? table : mutation;
    return d == Durability.SYNC_WAL || d == Durability.FSYNC_WAL ? WriteOptions.SYNC
        : WriteOptions.DEFAULT;
  }
}
