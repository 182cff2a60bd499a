package io.parallaxkv.hbase;

import io.parallaxkv.Parallax;
import io.parallaxkv.ParallaxException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * An open engine volume with its tables and row locks, shared by every connection of this
 * process to the same path: the engine lets one process open a volume once, and row locks must
 * be common to all connections for per-row atomicity to hold between them. Reference counted;
 * the last connection to close closes the volume.
 */
final class HBaseVolume {
  private static final Map<Path, HBaseVolume> OPEN = new HashMap<>();

  private final Path path;
  private final Parallax volume;
  private final Tables tables;
  private final RowLocks locks;
  private final Sweeper sweeper;
  private int references;

  private HBaseVolume(Path path, Parallax volume, Tables tables, RowLocks locks, Sweeper sweeper) {
    this.path = path;
    this.volume = volume;
    this.tables = tables;
    this.locks = locks;
    this.sweeper = sweeper;
  }

  /**
   * The open volume at {@code path}, opened now if this process has not yet; the sweep
   * thresholds ({@link Sweeper#MIN_CELLS}, {@link Sweeper#ROW_CELLS}) are the opening
   * connection's.
   */
  static HBaseVolume acquire(Path path, long sweepMinCells, long sweepRowCells)
      throws IOException {
    Path key = path.toAbsolutePath().normalize();
    synchronized (OPEN) {
      HBaseVolume v = OPEN.get(key);
      if (v == null) {
        Parallax volume;
        try {
          volume = Parallax.open(key);
        } catch (ParallaxException e) {
          throw new IOException("cannot open the Parallax volume " + key + ": " + e.getMessage(), e);
        }
        RowLocks locks = new RowLocks();
        Sweeper sweeper = new Sweeper(sweepMinCells, sweepRowCells, locks);
        try {
          v = new HBaseVolume(key, volume, new Tables(volume, sweeper), locks, sweeper);
        } catch (IOException | RuntimeException e) {
          sweeper.close();
          volume.close();
          throw e;
        }
        OPEN.put(key, v);
      }
      v.references++;
      return v;
    }
  }

  void release() {
    synchronized (OPEN) {
      if (--references > 0) return;
      OPEN.remove(path);
      sweeper.close();
      tables.close();
      volume.close();
    }
  }

  Tables tables() {
    return tables;
  }

  RowLocks locks() {
    return locks;
  }

  Sweeper sweeper() {
    return sweeper;
  }
}
