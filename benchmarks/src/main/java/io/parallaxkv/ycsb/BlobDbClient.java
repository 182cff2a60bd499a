package io.parallaxkv.ycsb;

import java.util.Properties;
import org.rocksdb.Options;

/**
 * YCSB binding of RocksDB's integrated BlobDB (key-value separation), the in-log anchor of the
 * comparison: {@code -db io.parallaxkv.ycsb.BlobDbClient -p rocksdb.dir=/path}. Everything of
 * {@link RocksDbClient} (same {@code rocksdb.*} properties and defaults), plus blob files with
 * garbage collection:
 * <table>
 *   <caption>additional properties</caption>
 *   <tr><td>{@code blobdb.minblobsize}</td><td>values of at least this many bytes go to blob
 *       files (1000: with YCSB's 24-byte keys that is Parallax's large threshold of 1024 bytes
 *       per pair, so the same values are separated)</td></tr>
 *   <tr><td>{@code blobdb.gcagecutoff}</td><td>{@code blob_garbage_collection_age_cutoff}: the
 *       oldest fraction of blob files whose live values compaction relocates (0.3, the share
 *       the paper's BlobDB scanned)</td></tr>
 *   <tr><td>{@code blobdb.gcforcethreshold}</td><td>{@code blob_garbage_collection_force_threshold}
 *       (1.0, RocksDB's default)</td></tr>
 *   <tr><td>{@code blobdb.blobfilesize}</td><td>{@code blob_file_size} (256m, RocksDB's
 *       default; a flush closes its blob file, so files are at most a memtable's worth)</td></tr>
 * </table>
 */
public class BlobDbClient extends RocksDbClient {
  @Override
  protected String engine() {
    return "blobdb";
  }

  @Override
  protected void configure(Options o, Properties p) {
    o.setEnableBlobFiles(true)
        .setMinBlobSize(bytes(p, "blobdb.minblobsize", "1000"))
        .setBlobFileSize(bytes(p, "blobdb.blobfilesize", "256m"))
        .setEnableBlobGarbageCollection(true)
        .setBlobGarbageCollectionAgeCutoff(Double.parseDouble(p.getProperty("blobdb.gcagecutoff", "0.3").trim()))
        .setBlobGarbageCollectionForceThreshold(
            Double.parseDouble(p.getProperty("blobdb.gcforcethreshold", "1.0").trim()));
  }
}
