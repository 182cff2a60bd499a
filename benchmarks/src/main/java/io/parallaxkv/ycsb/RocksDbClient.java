package io.parallaxkv.ycsb;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.function.BiConsumer;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.CompressionType;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteOptions;
import site.ycsb.DBException;

/**
 * YCSB binding of RocksDB (rocksdbjni), the in-place anchor of the comparison:
 * {@code -db io.parallaxkv.ycsb.RocksDbClient -p rocksdb.dir=/path}. One column family, WAL on,
 * no compression at any level, no bloom filters (BlobDB and Parallax have none either), an LRU
 * block cache, buffered (page-cache) I/O unless asked otherwise. Records are stored as
 * described in {@link KvClient}.
 *
 * <p>Properties:
 * <table>
 *   <caption>binding properties</caption>
 *   <tr><td>{@code rocksdb.dir}</td><td>required: the database directory (created if missing)</td></tr>
 *   <tr><td>{@code rocksdb.cachesize}</td><td>LRU block cache bytes, {@code k/m/g} allowed
 *       (256m)</td></tr>
 *   <tr><td>{@code rocksdb.writebuffersize}</td><td>memtable bytes, Parallax's L0 size (64m)</td></tr>
 *   <tr><td>{@code rocksdb.maxwritebuffers}</td><td>memtables, active + immutable, as
 *       Parallax's two L0s (2)</td></tr>
 *   <tr><td>{@code rocksdb.growthfactor}</td><td>{@code max_bytes_for_level_multiplier}, as
 *       Parallax's growth factor (8)</td></tr>
 *   <tr><td>{@code rocksdb.backgroundjobs}</td><td>{@code max_background_jobs} (2)</td></tr>
 *   <tr><td>{@code rocksdb.directreads}</td><td>{@code use_direct_reads} (false: page cache)</td></tr>
 *   <tr><td>{@code rocksdb.directwrites}</td><td>{@code use_direct_io_for_flush_and_compaction}
 *       (false)</td></tr>
 *   <tr><td>{@code rocksdb.sync}</td><td>true: every write syncs the WAL (false)</td></tr>
 *   <tr><td>{@code rocksdb.scanreadahead}</td><td>a scan's iterator reads its table files this
 *       many bytes at a time ({@code ReadOptions.readahead_size}, {@code k/m/g} allowed); 0:
 *       RocksDB's own readahead, which grows from 8 KiB once an iterator reads on in one file
 *       (0)</td></tr>
 *   <tr><td>{@code kv.update}</td><td>{@code merge} or {@code replace}, see {@link KvClient}</td></tr>
 * </table>
 */
public class RocksDbClient extends KvClient {
  @Override
  protected String engine() {
    return "rocksdb";
  }

  @Override
  protected String dirProperty() {
    return "rocksdb.dir";
  }

  /**
   * Loads the JNI library before the store opens: rocksdbjni extracts it to a temporary file in
   * every JVM, and those writes are not the engine's I/O, so they must precede the phase meter.
   */
  @Override
  public void init() throws DBException {
    RocksDB.loadLibrary();
    super.init();
  }

  /** Adds the engine-specific options ({@link BlobDbClient}: blob files) to {@code o}. */
  protected void configure(Options o, Properties p) {
  }

  static long bytes(Properties p, String name, String dflt) {
    return parseBytes(p.getProperty(name, dflt));
  }

  @Override
  protected KvStore open(Path dir, Properties p) throws DBException {
    LRUCache cache = new LRUCache(bytes(p, "rocksdb.cachesize", "256m"));
    Options o = new Options()
        .setCreateIfMissing(true)
        .setCompressionType(CompressionType.NO_COMPRESSION)
        .setBottommostCompressionType(CompressionType.NO_COMPRESSION)
        .setWriteBufferSize(bytes(p, "rocksdb.writebuffersize", "64m"))
        .setMaxWriteBufferNumber(Integer.parseInt(p.getProperty("rocksdb.maxwritebuffers", "2").trim()))
        .setMaxBytesForLevelMultiplier(Double.parseDouble(p.getProperty("rocksdb.growthfactor", "8").trim()))
        .setMaxBackgroundJobs(Integer.parseInt(p.getProperty("rocksdb.backgroundjobs", "2").trim()))
        .setUseDirectReads(Boolean.parseBoolean(p.getProperty("rocksdb.directreads", "false").trim()))
        .setUseDirectIoForFlushAndCompaction(
            Boolean.parseBoolean(p.getProperty("rocksdb.directwrites", "false").trim()))
        .setTableFormatConfig(new BlockBasedTableConfig().setBlockCache(cache));
    configure(o, p);
    WriteOptions wo = new WriteOptions()
        .setSync(Boolean.parseBoolean(p.getProperty("rocksdb.sync", "false").trim()));
    try {
      Files.createDirectories(dir);
      return new Store(RocksDB.open(o, dir.toString()), o, cache, wo, bytes(p, "rocksdb.scanreadahead", "0"));
    } catch (Exception e) {
      wo.close();
      o.close();
      cache.close();
      throw new DBException("cannot open RocksDB in " + dir + ": " + e.getMessage(), e);
    }
  }

  private static final class Store implements KvStore {
    private final RocksDB db;
    private final Options options;
    private final LRUCache cache;
    private final WriteOptions wo;
    private final ReadOptions ro = new ReadOptions();
    private final ReadOptions scanOptions;

    Store(RocksDB db, Options options, LRUCache cache, WriteOptions wo, long scanReadahead) {
      this.db = db;
      this.options = options;
      this.cache = cache;
      this.wo = wo;
      this.scanOptions = new ReadOptions().setReadaheadSize(scanReadahead);
    }

    @Override
    public byte[] get(byte[] key) {
      try {
        return db.get(ro, key);
      } catch (RocksDBException e) {
        throw new IllegalStateException(e.getMessage(), e);
      }
    }

    @Override
    public void put(byte[] key, byte[] value) {
      try {
        db.put(wo, key, value);
      } catch (RocksDBException e) {
        throw new IllegalStateException(e.getMessage(), e);
      }
    }

    @Override
    public void delete(byte[] key) {
      try {
        db.delete(wo, key);
      } catch (RocksDBException e) {
        throw new IllegalStateException(e.getMessage(), e);
      }
    }

    @Override
    public void scan(byte[] start, int count, BiConsumer<byte[], byte[]> sink) {
      try (RocksIterator it = db.newIterator(scanOptions)) {
        it.seek(start);
        for (int i = 0; i < count && it.isValid(); i++, it.next()) sink.accept(it.key(), it.value());
      }
    }

    @Override
    public Map<String, String> stats() {
      Map<String, String> m = new HashMap<>();
      for (String name : new String[] {"rocksdb.total-sst-files-size", "rocksdb.total-blob-file-size",
          "rocksdb.num-running-compactions", "rocksdb.block-cache-usage"}) {
        try {
          m.put("engine." + name.substring("rocksdb.".length()), Long.toString(db.getLongProperty(name)));
        } catch (RocksDBException e) {
          m.put("engine." + name.substring("rocksdb.".length()), "n/a");
        }
      }
      // Flushes (written into L0) and compactions since the DB opened, their SST bytes and their
      // blob files' (BlobDB); the rest of the device writes are the WAL's and the MANIFEST's
      // (docs/benchmarks.md, "Where Load A's bytes go").
      try {
        Map<String, String> cf = db.getMapProperty("rocksdb.cfstats");
        for (String k : new String[] {"compaction.Sum.ReadGB", "compaction.Sum.WriteGB", "compaction.L0.WriteGB",
            "compaction.Sum.RblobGB", "compaction.Sum.WblobGB"}) {
          m.put("engine." + k, cf.getOrDefault(k, "n/a"));
        }
      } catch (RocksDBException e) {
        m.put("engine.compaction.Sum.WriteGB", "n/a");
      }
      return m;
    }

    @Override
    public void close() {
      ro.close();
      scanOptions.close();
      db.close();
      wo.close();
      options.close();
      cache.close();
    }
  }
}
