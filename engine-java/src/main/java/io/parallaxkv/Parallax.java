package io.parallaxkv;

import io.parallaxkv.internal.HandleState;
import io.parallaxkv.internal.Layout;
import io.parallaxkv.internal.NativeApi;
import io.parallaxkv.internal.Scratch;
import java.nio.ByteBuffer;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * An open Parallax volume: one file holding named {@linkplain Region regions}, each an
 * independent ordered key-value store. Entry point of the API.
 *
 * <pre>{@code
 * try (Parallax db = Parallax.open(Path.of("data.vol"), Options.DEFAULTS);
 *      Region users = db.region("users")) {
 *   users.put(key, value);
 *   byte[] v = users.get(key);
 * }
 * }</pre>
 *
 * <h2>Backends and the native library</h2>
 * The engine is native code ({@code libparallax.so}, embedded in the jar for linux-x86_64 and
 * extracted once per content hash to {@code ~/.cache/parallax}, or {@code -Dparallax.cache.dir}).
 * {@code -Dparallax.library.path} (or {@code PARALLAX_LIBRARY_PATH}) loads another copy. On JDK
 * 22+ the FFM backend ({@code java.lang.foreign}) is used, else JNI; {@code -Dparallax.backend=jni}
 * or {@code ffm} forces one. On JDK 24+ run with {@code --enable-native-access=ALL-UNNAMED}
 * (class path) or {@code =<module>} (module path); without it the JDK warns, and a JDK run with
 * {@code --illegal-native-access=deny} refuses to load the engine.
 *
 * <h2>Threads and lifecycle</h2>
 * All methods are thread-safe. {@link #close()} closes the regions still open (which close their
 * scanners and snapshots), waits for calls in flight, and makes every write durable; afterwards
 * every method throws {@link ParallaxClosedException}. A volume is used by one handle at a time
 * (a second open fails with {@link BusyException}).
 *
 * <h2>Errors</h2>
 * Every exception the API throws for the engine is a {@link ParallaxException}, unchecked, with
 * the engine's status code. Two Java conventions hold across the API: a null argument throws
 * {@link NullPointerException} (except where a method documents null as meaning "none", such as
 * a range bound), and a call that needs a state the object is not in throws
 * {@link IllegalStateException} (a scanner not on an entry).
 */
public final class Parallax implements AutoCloseable {
  /** Largest key in bytes (keys are 1..1024 bytes). */
  public static final int MAX_KEY_SIZE = Layout.MAX_KEY_SIZE;
  /** Largest value in bytes (values are 0..64 MiB; those over 1 MiB always go to the large log). */
  public static final int MAX_VALUE_SIZE = Layout.MAX_VALUE_SIZE;
  /** Largest encoded batch in bytes. */
  public static final int MAX_BATCH_SIZE = Layout.MAX_BATCH_SIZE;
  /** Largest region name in UTF-8 bytes. */
  public static final int MAX_REGION_NAME = Layout.MAX_REGION_NAME;
  /** Device levels L1..L8. */
  public static final int MAX_LEVELS = Layout.MAX_LEVELS;

  final NativeApi api;
  final HandleState state;
  private final Path path;

  private Parallax(NativeApi api, long ptr, Path path) {
    this.api = api;
    this.path = path;
    this.state = new HandleState("Volume " + path, ptr, null,
        p -> Native.closeError(api, api.close(p)), Native.HANDLE_ERRORS, true);
    state.register(this);
  }

  /** Opens (or, by default, creates) the volume at {@code path} with the engine defaults. */
  public static Parallax open(Path path) {
    return open(path, Options.DEFAULTS);
  }

  /**
   * Opens (or creates, unless {@link Options.Builder#createIfMissing} is off) the volume at
   * {@code path}.
   *
   * @throws NoSuchEntryException  no file and createIfMissing is off
   * @throws NotAVolumeException   the file is not a volume
   * @throws BusyException         the volume is open elsewhere (this or another process)
   * @throws NativeLibraryException the engine could not be loaded
   */
  public static Parallax open(Path path, Options options) {
    Objects.requireNonNull(path, "path is null");
    Objects.requireNonNull(options, "options are null");
    NativeApi api = Native.api();
    Path abs = path.toAbsolutePath();
    byte[] p = abs.toString().getBytes(pathCharset());
    for (byte c : p) {
      if (c == 0) throw new InvalidArgumentException("path contains a NUL character");
    }
    int optsOff = 0;
    int pathOff = Layout.STRUCT_SLACK;
    Scratch s = Scratch.get(pathOff + p.length + 1);
    try {
      long opts = s.address() + Scratch.DATA + optsOff;
      ByteBuffer b = s.buffer();
      for (int i = 0; i < Layout.STRUCT_SLACK; i += 8) b.putLong(Scratch.DATA + i, 0);
      api.optionsInit(opts);
      int o = Scratch.DATA + optsOff;
      if (options.l0Size != null) b.putLong(o + Layout.OPT_L0_SIZE, options.l0Size);
      if (options.growthFactor != null) b.putInt(o + Layout.OPT_GROWTH_FACTOR, options.growthFactor);
      if (options.durabilityIntervalMs != null) {
        b.putInt(o + Layout.OPT_DURABILITY_MS, options.durabilityIntervalMs);
      }
      if (options.compactionThreads != null) {
        b.putInt(o + Layout.OPT_COMPACTION_THREADS, options.compactionThreads);
      }
      if (options.useDirectIo != null) b.putInt(o + Layout.OPT_DIRECT_IO, options.useDirectIo ? 1 : 0);
      if (options.maxVolumeSize != null) b.putLong(o + Layout.OPT_MAX_VOLUME_SIZE, options.maxVolumeSize);
      if (options.createIfMissing != null) {
        b.putInt(o + Layout.OPT_CREATE_IF_MISSING, options.createIfMissing ? 1 : 0);
      }
      if (options.placement != null) b.putInt(o + Layout.OPT_PLACEMENT, options.placement.ordinal());
      if (options.smallThreshold != null) b.putInt(o + Layout.OPT_SMALL_THRESHOLD, options.smallThreshold);
      if (options.largeThreshold != null) b.putInt(o + Layout.OPT_LARGE_THRESHOLD, options.largeThreshold);
      if (options.gcThresholdPercent != null) {
        b.putInt(o + Layout.OPT_GC_THRESHOLD_PCT, options.gcThresholdPercent);
      }
      if (options.mediumMergeLevel != null) {
        b.putInt(o + Layout.OPT_MEDIUM_MERGE_LEVEL, options.mediumMergeLevel);
      }
      if (options.memoryBudgetMiB != null) {
        b.putInt(o + Layout.OPT_MEMORY_BUDGET_MIB, options.memoryBudgetMiB);
      }
      if (options.sortLargeValues != null) {
        b.putInt(o + Layout.OPT_SORT_LARGE_VALUES, options.sortLargeValues ? 1 : 0);
      }
      if (options.warmMiB != null) b.putInt(o + Layout.OPT_WARM_MIB, options.warmMiB);
      b.put(Scratch.DATA + pathOff, p);
      b.put(Scratch.DATA + pathOff + p.length, (byte) 0);
      b.putLong(Scratch.OUT, 0);
      int rc = api.open(s.address() + Scratch.DATA + pathOff, opts, s.address() + Scratch.OUT);
      Native.check(api, rc);
      return new Parallax(api, s.out(0), abs);
    } finally {
      s.release();
    }
  }

  private static Charset pathCharset() {
    String jnu = System.getProperty("sun.jnu.encoding");
    try {
      return jnu != null ? Charset.forName(jnu) : StandardCharsets.UTF_8;
    } catch (RuntimeException e) {
      return StandardCharsets.UTF_8;
    }
  }

  /** The backend in use: {@code "ffm"} or {@code "jni"} (loads the engine if needed). */
  public static String backend() {
    return Native.api().name();
  }

  /** The volume file. */
  public Path path() {
    return path;
  }

  /**
   * Writes a batch whose ops name their regions ({@link WriteBatch#put(Region, byte[], byte[])})
   * all-or-nothing across those regions: a {@linkplain #snapshot(Region...) snapshot of several
   * regions} sees all of it or none of it, and after a crash every region has its part or none
   * has. Durable when it returns (a sync write). Batches across regions commit one at a time
   * per volume and cost two rounds of fdatasync; a batch naming one region is an ordinary write.
   *
   * @throws InvalidArgumentException an op names no region, or a region of another volume
   * @throws ParallaxClosedException  a region or this volume is closed
   */
  public void write(WriteBatch batch) {
    write(batch, WriteOptions.SYNC);
  }

  /**
   * {@link #write(WriteBatch)}; {@code options} may not disable the WAL (a batch across regions
   * is always logged and synced; the sync flag is implied).
   */
  public void write(WriteBatch batch, WriteOptions options) {
    Objects.requireNonNull(batch, "batch");
    int flags = Native.opts(options).flags();
    List<Region> regions = batch.regions();
    for (Region r : regions)
      if (r.volume != this)
        throw new InvalidArgumentException("the batch names region '" + r.name()
            + "' of another volume");
    long v = state.acquire();
    int held = 0;
    try {
      for (Region r : regions) {
        r.state.acquire();
        held++;
      }
      long b = batch.state.acquire();
      try {
        Native.check(api, api.writeVolume(v, b, flags));
      } finally {
        batch.state.release();
      }
    } finally {
      for (int i = 0; i < held; i++) regions.get(i).state.release();
      state.release();
    }
  }

  /**
   * Snapshots of several regions of this volume taken at one consistent point: no batch written
   * with {@link #write(WriteBatch)} is half in them. The i-th snapshot is of {@code regions[i]};
   * close each.
   *
   * @throws InvalidArgumentException no regions, or a region of another volume
   */
  public List<Snapshot> snapshot(Region... regions) {
    Objects.requireNonNull(regions, "regions");
    if (regions.length == 0) throw new InvalidArgumentException("no regions to snapshot");
    for (Region r : regions) {
      Objects.requireNonNull(r, "region");
      if (r.volume != this)
        throw new InvalidArgumentException("region '" + r.name() + "' belongs to another volume");
    }
    int n = regions.length;
    long v = state.acquire();
    int held = 0;
    try {
      Scratch s = Scratch.get(16 * n);
      try {
        for (Region r : regions) {
          s.buffer().putLong(Scratch.DATA + 8 * held, r.state.acquire());
          held++;
        }
        long base = s.address() + Scratch.DATA;
        Native.check(api, api.snapshotCreateMany(n, base, base + 8L * n));
        List<Snapshot> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++)
          out.add(new Snapshot(regions[i], s.buffer().getLong(Scratch.DATA + 8 * (n + i))));
        return Collections.unmodifiableList(out);
      } finally {
        s.release();
      }
    } finally {
      for (int i = 0; i < held; i++) regions[i].state.release();
      state.release();
    }
  }

  /** Opens the region {@code name}, creating it if it does not exist. */
  public Region region(String name) {
    return openRegion(name, true);
  }

  /**
   * Opens an existing region.
   *
   * @throws NoSuchEntryException no such region
   * @throws BusyException        the region is already open
   */
  public Region openRegion(String name) {
    return openRegion(name, false);
  }

  /**
   * Creates a region and opens it.
   *
   * @throws AlreadyExistsException the region exists
   * @throws LimitException         the volume holds the maximum number of regions
   */
  public Region createRegion(String name) {
    byte[] n = Native.name(name);
    long v = state.acquire();
    try {
      Scratch s = Scratch.get(n.length);
      try {
        Native.check(api, api.regionCreate(v, Native.in(n, s, 0)));
      } finally {
        s.release();
      }
    } finally {
      state.release();
    }
    return openRegion(name, false);
  }

  private Region openRegion(String name, boolean create) {
    byte[] n = Native.name(name);
    long v = state.acquire();
    try {
      Scratch s = Scratch.get(n.length);
      try {
        s.buffer().putLong(Scratch.OUT, 0);
        Native.check(api, api.regionOpen(v, Native.in(n, s, 0), create ? 1 : 0,
            s.address() + Scratch.OUT));
        return new Region(this, name, s.out(0));
      } finally {
        s.release();
      }
    } finally {
      state.release();
    }
  }

  /** The names of all regions, in creation order. */
  public List<String> regions() {
    long v = state.acquire();
    try {
      List<byte[]> raw = new ArrayList<>();
      Native.check(api, api.regionList(v, raw));
      List<String> names = new ArrayList<>(raw.size());
      for (byte[] b : raw) names.add(new String(b, StandardCharsets.UTF_8));
      return Collections.unmodifiableList(names);
    } finally {
      state.release();
    }
  }

  /**
   * Drops a region that is not open and frees its space.
   *
   * @throws NoSuchEntryException no such region
   * @throws BusyException        the region is open
   */
  public void dropRegion(String name) {
    byte[] n = Native.name(name);
    long v = state.acquire();
    try {
      Scratch s = Scratch.get(n.length);
      try {
        Native.check(api, api.regionDrop(v, Native.in(n, s, 0)));
      } finally {
        s.release();
      }
    } finally {
      state.release();
    }
  }

  /**
   * Writes a consistent copy of the volume, or of the regions named, into the file at
   * {@code target} while writes go on; it opens with {@link #open(Path)} as a volume holding
   * those regions as a crash at the checkpoint's consistency point would have left them. Every
   * write acknowledged before the call is in it, none made after it returns, and a
   * {@linkplain #write(WriteBatch) batch across regions} is in it wholly or not at all. Writes
   * made with {@linkplain WriteOptions#disableWal(boolean) the WAL disabled} that no flush covered yet are not in it (flush
   * the region first to keep them).
   *
   * <p>Incremental: into a target holding an earlier checkpoint of this volume only the segments
   * whose content differs are written ({@link CheckpointStats#bytesCopied()}), so the file can
   * be shipped as a backup (rsync-style tools then move about as much). The target's catalog
   * and superblock are written last, after a sync: if the call fails or the process dies while
   * it runs, the source is untouched and opening the target fails with {@link
   * NotAVolumeException} ("an incomplete checkpoint") until a checkpoint into it completes.
   * One checkpoint runs at a time per volume; region opens and closes wait for its first step
   * (one sync of each open region's log).
   *
   * @param target  the file to write: new, empty, an earlier checkpoint or a volume not in use
   * @param regions the regions to copy; none: all of them
   * @return what was read and written
   * @throws InvalidArgumentException {@code target} is this volume, or a file that is neither a
   *                                  volume nor an incomplete checkpoint (left untouched)
   * @throws NoSuchEntryException     a region named does not exist, or the target's directory
   * @throws BusyException            the target is open as a volume
   * @throws ParallaxIOException      the target cannot be created or written
   */
  public CheckpointStats checkpoint(Path target, String... regions) {
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(regions, "regions");
    byte[] p = target.toAbsolutePath().toString().getBytes(pathCharset());
    for (byte c : p) {
      if (c == 0) throw new InvalidArgumentException("path contains a NUL character");
    }
    byte[][] names = new byte[regions.length][];
    int namesLen = 0;
    for (int i = 0; i < regions.length; i++) {
      names[i] = Native.name(Objects.requireNonNull(regions[i], "region name"));
      namesLen += names[i].length;
    }
    int ptrsOff = Layout.CHECKPOINT_STATS_SIZE;
    int pathOff = ptrsOff + 8 * names.length;
    int namesOff = pathOff + p.length + 1;
    long v = state.acquire();
    try {
      Scratch s = Scratch.get(Layout.STRUCT_SLACK + namesOff + namesLen);
      try {
        ByteBuffer b = s.buffer();
        long base = s.address() + Scratch.DATA;
        b.put(Scratch.DATA + pathOff, p);
        b.put(Scratch.DATA + pathOff + p.length, (byte) 0);
        int off = namesOff;
        for (int i = 0; i < names.length; i++) {
          b.putLong(Scratch.DATA + ptrsOff + 8 * i, Native.in(names[i], s, off));
          off += names[i].length;
        }
        long ptrs = names.length == 0 ? 0 : base + ptrsOff;
        Native.check(api, api.checkpoint(v, base + pathOff, ptrs, names.length, base));
        int o = Scratch.DATA;
        return new CheckpointStats(b.getLong(o), b.getLong(o + 8), b.getLong(o + 16),
            b.getLong(o + 24));
      } finally {
        s.release();
      }
    } finally {
      state.release();
    }
  }

  /** Space counters of the volume. */
  public VolumeStats stats() {
    long v = state.acquire();
    try {
      Scratch s = Scratch.get(Layout.STRUCT_SLACK);
      try {
        long out = s.address() + Scratch.DATA;
        Native.check(api, api.volumeStats(v, out));
        ByteBuffer b = s.buffer();
        int o = Scratch.DATA;
        int m = o + Layout.VOLUME_STATS_MEMORY;
        return new VolumeStats(b.getLong(o), b.getLong(o + 8), b.getLong(o + 16), b.getLong(o + 24),
            b.getLong(m), b.getLong(m + 8), b.getLong(m + 16), b.getLong(o + Layout.VOLUME_STATS_RELEASED));
      } finally {
        s.release();
      }
    } finally {
      state.release();
    }
  }

  /** True until {@link #close()} starts. */
  public boolean isOpen() {
    return !state.isClosed();
  }

  /**
   * Closes the open regions (and their scanners and snapshots), waits for calls in flight,
   * makes every write durable and releases the volume. Every region is closed even when closing
   * another fails. Idempotent once the volume is freed.
   *
   * @throws ParallaxException the engine's error closing the volume (it is closed and freed
   *     anyway), or, when only regions failed, a {@code ParallaxException} naming them, with the
   *     status of the first; the regions' errors are suppressed in it (a region's failed close
   *     still freed that region)
   * @throws BusyException if a snapshot could not be released yet (a call still reads one of
   *     its views): every other handle is closed and freed, the volume and that snapshot's region
   *     are closed to callers but stay allocated, and closing the volume again frees them (see
   *     {@link Snapshot#close()})
   */
  @Override
  public void close() {
    state.close();
  }

  @Override
  public String toString() {
    return "Parallax{" + path + (state.isClosed() ? ", closed" : "") + "}";
  }
}
