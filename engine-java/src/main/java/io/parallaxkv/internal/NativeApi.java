package io.parallaxkv.internal;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * The engine's C interface ({@code parallax.h}) as seen from Java: one method per C entry point,
 * every pointer passed as a raw native address ({@code long}), so both backends stay thin.
 * Out parameters are written to caller-supplied native addresses.
 *
 * <p>Implementations: {@link JniBackend} (JDK 17+) and {@code FfmBackend} (JDK 22+, in the
 * multi-release layer). The public classes never call a backend without holding the
 * in-flight guard ({@link HandleState}) of every handle whose pointer they pass.
 */
public abstract class NativeApi {
  /** Short name of the backend: {@code "jni"} or {@code "ffm"}. */
  public abstract String name();

  /** {@code par_abi_layout}: the struct sizes, offsets and limits the library was built with. */
  public abstract long[] layout();

  /** {@code par_strerror}. */
  public abstract String strerror(int status);

  /** {@code par_last_error} of the calling thread. */
  public abstract String lastError();

  public abstract void optionsInit(long opts);

  public abstract int open(long path, long opts, long out);

  public abstract int close(long vol);

  public abstract int regionCreate(long vol, long name);

  public abstract int regionOpen(long vol, long name, int create, long out);

  public abstract int regionClose(long region);

  public abstract int regionDrop(long vol, long name);

  /** Appends every region name, as bytes, to {@code out}. */
  public abstract int regionList(long vol, List<byte[]> out);

  public abstract int put(long region, long key, long keyLen, long value, long valueLen, int flags);

  public abstract int delete(long region, long key, long keyLen, int flags);

  public abstract int batchCreate(long out);

  public abstract int batchPut(long batch, long key, long keyLen, long value, long valueLen);

  public abstract int batchDelete(long batch, long key, long keyLen);

  public abstract void batchClear(long batch);

  public abstract long batchCount(long batch);

  public abstract void batchDestroy(long batch);

  public abstract int write(long region, long batch, int flags);

  public abstract int sync(long region);

  public abstract int snapshotCreate(long region, long out);

  public abstract void snapshotRelease(long snapshot);

  public abstract int get(long region, long snap, long key, long keyLen, long buf, long cap,
      long valueLenOut);

  public abstract int exists(long region, long snap, long key, long keyLen);

  /** {@code par_snapshot_get_view}: the value's address and length go to the two out slots. */
  public abstract int snapshotGetView(long snap, long key, long keyLen, long valueOut, long lenOut);

  /**
   * {@code par_multi_get}: {@code n} keys (arrays of addresses and lengths) looked up in a
   * snapshot; value addresses, lengths and per-key statuses go to the three out arrays.
   */
  public abstract int multiGet(long snap, long n, long keys, long keyLens, long values,
      long valueLens, long statuses);

  public abstract int scannerOpen(long region, long snap, long out);

  /**
   * Seeks and reads the current entry's key: returns a negative status, or the valid flag (0/1);
   * when valid, {@code entry + 8..24} holds the key's address and length. The value is not read
   * ({@link #scannerValue}).
   */
  public abstract int scannerSeek(long scanner, long key, long keyLen, int mode, long entry);

  /** Advances; same result convention as {@link #scannerSeek}. */
  public abstract int scannerNext(long scanner, long entry);

  /** Steps back; same result convention as {@link #scannerSeek}. */
  public abstract int scannerPrev(long scanner, long entry);

  /**
   * {@code par_scanner_value}: reads the current entry's value (from a value log if it lives
   * there); its address and length go to {@code out} and {@code out + 8}. Blocking (file I/O,
   * checksums of up to 64 MiB): never a critical downcall.
   */
  public abstract int scannerValue(long scanner, long out);

  public abstract void scannerClose(long scanner);

  /** {@code par_scanner_set_readahead}: the entries the caller reads after each seek (a hint). */
  public abstract int scannerSetReadahead(long scanner, int entries);

  public abstract int flush(long region);

  public abstract int compact(long region);

  /** par_batch_put_in: a put for {@code region} (a batch across regions). */
  public abstract int batchPutIn(long batch, long region, long key, long keyLen, long value,
      long valueLen);

  /** par_batch_delete_in. */
  public abstract int batchDeleteIn(long batch, long region, long key, long keyLen);

  /** par_delete_range: deletes the keys in [begin, end) with one range tombstone. */
  public abstract int deleteRange(long region, long begin, long beginLen, long end, long endLen,
      int flags);

  /** par_batch_delete_range. */
  public abstract int batchDeleteRange(long batch, long begin, long beginLen, long end, long endLen);

  /** par_batch_delete_range_in: a range delete for {@code region} (a batch across regions). */
  public abstract int batchDeleteRangeIn(long batch, long region, long begin, long beginLen, long end,
      long endLen);

  /** par_write_volume: a batch across the regions of {@code vol}, all-or-nothing. */
  public abstract int writeVolume(long vol, long batch, int flags);

  /** par_snapshot_create_many: {@code n} region pointers at {@code regions}, snapshots to out. */
  public abstract int snapshotCreateMany(long n, long regions, long out);

  public abstract int regionStats(long region, long out);

  /** {@code par_estimate_range}; a bound of address 0 and length 0 is unbounded. */
  public abstract int estimateRange(long region, long begin, long beginLen, long end, long endLen,
      long out);

  public abstract int volumeStats(long vol, long out);

  /** {@code par_checkpoint}; names is an array of n C-string pointers (0 and 0: every region). */
  public abstract int checkpoint(long vol, long path, long names, long n, long stats);

  // ---- replication.h (each a call of the C function of that name) -------------------------

  /** {@code par_repl_set_role}. */
  public abstract int replSetRole(long region, int role);

  /** {@code par_repl_cursor_open}. */
  public abstract int replCursorOpen(long region, long fromLsn, long out);

  /** {@code par_repl_cursor_read}. */
  public abstract int replCursorRead(long cursor, long buf, long cap, long lenOut, long lastOut);

  /** {@code par_repl_cursor_close}. */
  public abstract void replCursorClose(long cursor);

  /** {@code par_repl_cursor_set_limit}. */
  public abstract int replCursorSetLimit(long cursor, int segments);

  /** {@code par_repl_cursor_ship_written}. */
  public abstract int replCursorShipWritten(long cursor);

  /** {@code par_repl_apply}. */
  public abstract int replApply(long region, long records, long len, int flags, long appliedOut);

  /** {@code par_repl_export_open}. */
  public abstract int replExportOpen(long region, long out);

  /** {@code par_repl_export_layout}. */
  public abstract int replExportLayout(long export, long buf, long cap, long lenOut);

  /** {@code par_repl_export_covered}. */
  public abstract long replExportCovered(long export);

  /** {@code par_repl_export_segment}. */
  public abstract int replExportSegment(long export, int seg, long buf, long lenOut);

  /** {@code par_repl_export_close}. */
  public abstract void replExportClose(long export);

  /** {@code par_repl_install_begin}. */
  public abstract int replInstallBegin(long region, long layout, long len, long out);

  /** {@code par_repl_install_needed}. */
  public abstract long replInstallNeeded(long install, long segs, long cap);

  /** {@code par_repl_install_segment}. */
  public abstract int replInstallSegment(long install, int seg, long data, long len);

  /** {@code par_repl_install_commit}. */
  public abstract int replInstallCommit(long install);

  /** {@code par_repl_snapshot}. */
  public abstract int replSnapshot(long region, long out, long lsnOut);

  /** {@code par_repl_rebase}. */
  public abstract int replRebase(long region, long lsn);

  /** {@code par_repl_install_close}. */
  public abstract void replInstallClose(long install);

  /** {@code par_repl_stats}. */
  public abstract long replStats(long region, long out, long cap);

  /** Native address of {@code buf}'s element at its current position; {@code buf} is direct. */
  public abstract long addressAtPosition(ByteBuffer buf);

  /** Copies {@code len} bytes of native memory at {@code src} into {@code dst[off..]}. */
  public abstract void copyToArray(long src, byte[] dst, int off, int len);

  /** Copies {@code len} bytes between native addresses. */
  public abstract void copyMemory(long src, long dst, long len);

  /**
   * Allocates native memory that the caller frees with {@link NativeMemory#close()}; on FFM only
   * the allocating thread may use and free it (a block for the length of one call).
   */
  public abstract NativeMemory allocate(int size);

  /**
   * Like {@link #allocate}, but any thread may use and free the block: a buffer an object keeps
   * across calls that come from several threads.
   */
  public NativeMemory allocateShared(int size) {
    return allocate(size);
  }

  /**
   * Opens a lifetime scope for zero-copy views of engine memory (FFM: a shared arena whose
   * closing invalidates the views), or returns null when the backend cannot check lifetimes
   * (JNI: a direct buffer cannot be revoked), in which case callers copy instead.
   */
  public Object openViewScope() {
    return null;
  }

  /** A read-only view of {@code len} bytes at {@code addr}, valid while {@code scope} is open. */
  public ByteBuffer view(Object scope, long addr, int len) {
    throw new UnsupportedOperationException();
  }

  /**
   * Closes a scope from {@link #openViewScope()}, after which its views throw on access, and
   * returns true (also when it was closed already); or returns false, leaving it open, while a
   * call holds it (an NIO read or write of a view, a downcall given a view's memory).
   */
  public boolean tryCloseViewScope(Object scope) {
    throw new UnsupportedOperationException();
  }

  /** Closes a scope from {@link #openThreadViewScope}; its views then throw on access. */
  public void closeThreadViewScope(Object scope) {
    throw new UnsupportedOperationException();
  }

  /** True when {@link #openThreadViewScope} gives zero-copy views (FFM), false on JNI. */
  public boolean supportsThreadViews() {
    return false;
  }

  /**
   * Opens a scope for zero-copy views that only the calling thread can read and close (FFM: a
   * confined arena, whose close costs nanoseconds where a shared arena's handshakes with every
   * thread). {@code keepAlive} stays reachable for as long as any view of the scope is.
   * Closed with {@link #closeThreadViewScope}, by the same thread.
   */
  public Object openThreadViewScope(Object keepAlive) {
    throw new UnsupportedOperationException();
  }
}
