package io.parallaxkv.ycsb;

import io.parallaxkv.LevelStats;
import io.parallaxkv.Options;
import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import io.parallaxkv.RegionStats;
import io.parallaxkv.ScanOptions;
import io.parallaxkv.Scanner;
import io.parallaxkv.VolumeStats;
import io.parallaxkv.WriteOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.function.BiConsumer;
import site.ycsb.DBException;

/**
 * YCSB binding of the Parallax engine, for YCSB's own client:
 * {@code java -cp benchmarks.jar site.ycsb.Client -db io.parallaxkv.ycsb.ParallaxClient
 * -p parallax.dir=/path ...}. Records are stored as described in {@link KvClient}; all client
 * threads share one open volume.
 *
 * <p>Properties (every engine option is optional; unset means the engine default):
 * <table>
 *   <caption>binding properties</caption>
 *   <tr><td>{@code parallax.dir}</td><td>required: directory of the volume file
 *       {@code parallax.vol} (created if missing)</td></tr>
 *   <tr><td>{@code parallax.region}</td><td>region holding the records (default {@code ycsb})</td></tr>
 *   <tr><td>{@code parallax.l0size}</td><td>bytes of one in-memory L0, {@code k/m/g} suffixes
 *       allowed (engine default 64m)</td></tr>
 *   <tr><td>{@code parallax.growthfactor}</td><td>size ratio of adjacent levels (8)</td></tr>
 *   <tr><td>{@code parallax.placement}</td><td>{@code HYBRID}, {@code IN_PLACE} or
 *       {@code IN_LOG} (HYBRID)</td></tr>
 *   <tr><td>{@code parallax.smallthreshold}</td><td>a pair (key + value) is small below this
 *       many bytes (120)</td></tr>
 *   <tr><td>{@code parallax.largethreshold}</td><td>a pair is large from this many bytes on
 *       (1024)</td></tr>
 *   <tr><td>{@code parallax.gcthreshold}</td><td>garbage percent at which a large-log segment
 *       is collected (10)</td></tr>
 *   <tr><td>{@code parallax.mediummergelevel}</td><td>0: medium values merge in place at the
 *       last level, 1: at the last but one (0)</td></tr>
 *   <tr><td>{@code parallax.durabilityms}</td><td>unsynced writes are durable within this
 *       many milliseconds (100)</td></tr>
 *   <tr><td>{@code parallax.compactionthreads}</td><td>background compaction workers (1)</td></tr>
 *   <tr><td>{@code parallax.directio}</td><td>O_DIRECT for log and level writes (true)</td></tr>
 *   <tr><td>{@code parallax.maxvolumesize}</td><td>largest size of the volume file, 0 = the
 *       largest supported (0)</td></tr>
 *   <tr><td>{@code parallax.warmmib}</td><td>MiB of the levels' nodes read into the page
 *       cache when the region opens, 0 = none (engine default: half of the memory available)</td></tr>
 *   <tr><td>{@code parallax.sync}</td><td>true: every write waits until durable (false)</td></tr>
 *   <tr><td>{@code parallax.scanreadahead}</td><td>true: a scan tells its scanner how many
 *       entries it reads ({@link ScanOptions.Builder#readahead(int)}) (true)</td></tr>
 *   <tr><td>{@code kv.update}</td><td>{@code merge} or {@code replace}, see {@link KvClient}</td></tr>
 * </table>
 */
public class ParallaxClient extends KvClient {
  /** File name of the volume inside {@code parallax.dir}. */
  public static final String VOLUME_FILE = "parallax.vol";

  @Override
  protected String engine() {
    return "parallax";
  }

  @Override
  protected String dirProperty() {
    return "parallax.dir";
  }

  /**
   * Loads the engine before the store opens, so that a first extraction of the native library
   * into the cache directory is not counted as the phase's I/O.
   */
  @Override
  public void init() throws DBException {
    Parallax.backend();
    super.init();
  }

  /** The engine options the properties ask for. */
  static Options options(Properties p) {
    Options.Builder b = Options.builder();
    String v;
    if ((v = p.getProperty("parallax.l0size")) != null) b.l0Size(parseBytes(v));
    if ((v = p.getProperty("parallax.growthfactor")) != null) b.growthFactor(Integer.parseInt(v.trim()));
    if ((v = p.getProperty("parallax.placement")) != null) {
      b.placement(Options.Placement.valueOf(v.trim().toUpperCase(Locale.ROOT)));
    }
    if ((v = p.getProperty("parallax.smallthreshold")) != null) b.smallThreshold(Integer.parseInt(v.trim()));
    if ((v = p.getProperty("parallax.largethreshold")) != null) b.largeThreshold(Integer.parseInt(v.trim()));
    if ((v = p.getProperty("parallax.gcthreshold")) != null) b.gcThresholdPercent(Integer.parseInt(v.trim()));
    if ((v = p.getProperty("parallax.mediummergelevel")) != null) {
      b.mediumMergeLevel(Integer.parseInt(v.trim()));
    }
    if ((v = p.getProperty("parallax.durabilityms")) != null) {
      b.durabilityInterval(Duration.ofMillis(Long.parseLong(v.trim())));
    }
    if ((v = p.getProperty("parallax.compactionthreads")) != null) {
      b.compactionThreads(Integer.parseInt(v.trim()));
    }
    if ((v = p.getProperty("parallax.directio")) != null) b.useDirectIo(Boolean.parseBoolean(v.trim()));
    if ((v = p.getProperty("parallax.sortlargevalues")) != null) {
      b.sortLargeValues(Boolean.parseBoolean(v.trim()));
    }
    if ((v = p.getProperty("parallax.maxvolumesize")) != null) b.maxVolumeSize(parseBytes(v));
    if ((v = p.getProperty("parallax.warmmib")) != null) b.warmMiB(Integer.parseInt(v.trim()));
    return b.build();
  }

  @Override
  protected KvStore open(Path dir, Properties p) throws DBException {
    Options options;
    try {
      options = options(p);
      Files.createDirectories(dir);
    } catch (Exception e) {
      throw new DBException("bad parallax option: " + e.getMessage(), e);
    }
    WriteOptions wo = WriteOptions.sync(Boolean.parseBoolean(p.getProperty("parallax.sync", "false")));
    boolean scanReadahead = Boolean.parseBoolean(p.getProperty("parallax.scanreadahead", "true"));
    Parallax db = Parallax.open(dir.resolve(VOLUME_FILE), options);
    try {
      return new Store(db, db.region(p.getProperty("parallax.region", "ycsb")), wo, scanReadahead);
    } catch (RuntimeException e) {
      db.close();
      throw e;
    }
  }

  private static final class Store implements KvStore {
    private final Parallax db;
    private final Region region;
    private final WriteOptions wo;
    private final boolean scanReadahead;

    Store(Parallax db, Region region, WriteOptions wo, boolean scanReadahead) {
      this.db = db;
      this.region = region;
      this.wo = wo;
      this.scanReadahead = scanReadahead;
    }

    @Override
    public byte[] get(byte[] key) {
      return region.get(key);
    }

    @Override
    public void put(byte[] key, byte[] value) {
      region.put(key, value, wo);
    }

    @Override
    public void delete(byte[] key) {
      region.delete(key, wo);
    }

    @Override
    public void scan(byte[] start, int count, BiConsumer<byte[], byte[]> sink) {
      ScanOptions.Builder o = ScanOptions.builder().lowerBound(start);
      if (scanReadahead) o.readahead(count);
      try (Scanner s = region.scanner(o.build())) {
        // No step past the last entry read: it would ask ahead for what is not read.
        for (int i = 0; i < count && s.isValid(); i++) {
          sink.accept(s.key(), s.value());
          if (i + 1 < count) s.next();
        }
      }
    }

    @Override
    public Map<String, String> stats() {
      Map<String, String> m = new HashMap<>();
      m.put("engine.backend", Parallax.backend());
      RegionStats r = region.stats();
      m.put("engine.compactions", Long.toString(r.compactions()));
      m.put("engine.writeStalls", Long.toString(r.writeStalls()));
      m.put("engine.walBytesAppended", Long.toString(r.walBytesAppended()));
      m.put("engine.deepestLevel", Integer.toString(r.deepestLevel()));
      m.put("engine.largeLogBytesAppended", Long.toString(r.placement().largeLogBytesAppended()));
      m.put("engine.gcBytesRelocated", Long.toString(r.placement().gcBytesRelocated()));
      // With parallax.sortlargevalues: the large values merges copied into the last level.
      m.put("engine.largeLogBytesSorted", Long.toString(r.placement().largeLogBytesSorted()));
      // Where the device bytes go (docs/benchmarks.md, "Where Load A's bytes go"): beside the
      // WAL and the large log, the merges' reads and writes and the medium log's flushes.
      m.put("engine.userBytesWritten", Long.toString(r.userBytesWritten()));
      m.put("engine.mediumLogBytesWritten", Long.toString(r.placement().mediumLogBytesWritten()));
      m.put("engine.compactionBytesRead", Long.toString(r.levels().stream().mapToLong(LevelStats::compactionBytesRead).sum()));
      m.put("engine.compactionBytesWritten",
          Long.toString(r.levels().stream().mapToLong(LevelStats::compactionBytesWritten).sum()));
      VolumeStats v = db.stats();
      m.put("engine.segmentsUsed", Long.toString(v.segmentsUsed()));
      m.put("engine.warmBytesRead", Long.toString(r.warmBytesRead()));
      return m;
    }

    @Override
    public void close() {
      region.close();
      db.close();
    }
  }
}
