package io.parallaxkv.internal;

import io.parallaxkv.ParallaxIOException;
import java.lang.reflect.Field;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The JNI backend (JDK 17+). Direct-buffer addresses are read from {@code Buffer.address}
 * through {@code sun.misc.Unsafe} on JDK 17..22 (no native call); on later JDKs, where those
 * Unsafe methods warn, through {@code GetDirectBufferAddress}.
 */
final class JniBackend extends NativeApi {
  private static final sun.misc.Unsafe UNSAFE;
  private static final long ADDRESS_OFFSET;

  static {
    sun.misc.Unsafe u = null;
    long off = -1;
    if (Runtime.version().feature() < 23) {
      try {
        Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        u = (sun.misc.Unsafe) f.get(null);
        off = u.objectFieldOffset(Buffer.class.getDeclaredField("address"));
      } catch (ReflectiveOperationException | RuntimeException e) {
        u = null;
        off = -1;
      }
    }
    UNSAFE = u;
    ADDRESS_OFFSET = off;
  }

  JniBackend(java.nio.file.Path library) {
    NativeLibrary.checkNativeAccess(JniBackend.class.getModule(), "JNI");
    NativeLibrary.systemLoad(library);
    try {
      JniNative.layout();
    } catch (UnsatisfiedLinkError e) {
      throw new IllegalStateException(
          library + " has no JNI bridge (built without JDK headers? see engine-native/CMakeLists.txt)",
          e);
    }
  }

  @Override
  public long[] layout() {
    return JniNative.layout();
  }

  @Override
  public String name() {
    return "jni";
  }

  @Override
  public String strerror(int status) {
    return JniNative.strerror(status);
  }

  @Override
  public String lastError() {
    byte[] m = JniNative.lastError();
    return m == null ? "" : new String(m, StandardCharsets.UTF_8);
  }

  @Override
  public void optionsInit(long opts) {
    JniNative.optionsInit(opts);
  }

  @Override
  public int open(long path, long opts, long out) {
    return JniNative.open(path, opts, out);
  }

  @Override
  public int close(long vol) {
    return JniNative.close(vol);
  }

  @Override
  public int regionCreate(long vol, long name) {
    return JniNative.regionCreate(vol, name);
  }

  @Override
  public int regionOpen(long vol, long name, int create, long out) {
    return JniNative.regionOpen(vol, name, create, out);
  }

  @Override
  public int regionClose(long region) {
    return JniNative.regionClose(region);
  }

  @Override
  public int regionDrop(long vol, long name) {
    return JniNative.regionDrop(vol, name);
  }

  @Override
  public int regionList(long vol, List<byte[]> out) {
    return JniNative.regionList(vol, out);
  }

  @Override
  public int put(long region, long key, long keyLen, long value, long valueLen, int flags) {
    return JniNative.put(region, key, keyLen, value, valueLen, flags);
  }

  @Override
  public int delete(long region, long key, long keyLen, int flags) {
    return JniNative.delete(region, key, keyLen, flags);
  }

  @Override
  public int batchCreate(long out) {
    return JniNative.batchCreate(out);
  }

  @Override
  public int batchPut(long batch, long key, long keyLen, long value, long valueLen) {
    return JniNative.batchPut(batch, key, keyLen, value, valueLen);
  }

  @Override
  public int batchDelete(long batch, long key, long keyLen) {
    return JniNative.batchDelete(batch, key, keyLen);
  }

  @Override
  public void batchClear(long batch) {
    JniNative.batchClear(batch);
  }

  @Override
  public long batchCount(long batch) {
    return JniNative.batchCount(batch);
  }

  @Override
  public void batchDestroy(long batch) {
    JniNative.batchDestroy(batch);
  }

  @Override
  public int write(long region, long batch, int flags) {
    return JniNative.write(region, batch, flags);
  }

  @Override
  public int sync(long region) {
    return JniNative.sync(region);
  }

  @Override
  public int snapshotCreate(long region, long out) {
    return JniNative.snapshotCreate(region, out);
  }

  @Override
  public void snapshotRelease(long snapshot) {
    JniNative.snapshotRelease(snapshot);
  }

  @Override
  public int get(long region, long snap, long key, long keyLen, long buf, long cap, long vlen) {
    return JniNative.get(region, snap, key, keyLen, buf, cap, vlen);
  }

  @Override
  public int snapshotGetView(long snap, long key, long keyLen, long valueOut, long lenOut) {
    return JniNative.snapshotGetView(snap, key, keyLen, valueOut, lenOut);
  }

  @Override
  public int exists(long region, long snap, long key, long keyLen) {
    return JniNative.exists(region, snap, key, keyLen);
  }

  @Override
  public int multiGet(long snap, long n, long keys, long keyLens, long values, long valueLens,
      long statuses) {
    return JniNative.multiGet(snap, n, keys, keyLens, values, valueLens, statuses);
  }

  @Override
  public int scannerOpen(long region, long snap, long out) {
    return JniNative.scannerOpen(region, snap, out);
  }

  @Override
  public int scannerSeek(long scanner, long key, long keyLen, int mode, long entry) {
    return JniNative.scannerSeek(scanner, key, keyLen, mode, entry);
  }

  @Override
  public int scannerNext(long scanner, long entry) {
    return JniNative.scannerNext(scanner, entry);
  }

  @Override
  public int scannerPrev(long scanner, long entry) {
    return JniNative.scannerPrev(scanner, entry);
  }

  @Override
  public int scannerValue(long scanner, long out) {
    return JniNative.scannerValue(scanner, out);
  }

  @Override
  public void scannerClose(long scanner) {
    JniNative.scannerClose(scanner);
  }

  @Override
  public int scannerSetReadahead(long scanner, int entries) {
    return JniNative.scannerSetReadahead(scanner, entries);
  }

  @Override
  public int flush(long region) {
    return JniNative.flush(region);
  }

  @Override
  public int compact(long region) {
    return JniNative.compact(region);
  }

  @Override
  public int batchPutIn(long batch, long region, long key, long keyLen, long value,
      long valueLen) {
    return JniNative.batchPutIn(batch, region, key, keyLen, value, valueLen);
  }

  @Override
  public int batchDeleteIn(long batch, long region, long key, long keyLen) {
    return JniNative.batchDeleteIn(batch, region, key, keyLen);
  }

  @Override
  public int deleteRange(long region, long begin, long beginLen, long end, long endLen, int flags) {
    return JniNative.deleteRange(region, begin, beginLen, end, endLen, flags);
  }

  @Override
  public int batchDeleteRange(long batch, long begin, long beginLen, long end, long endLen) {
    return JniNative.batchDeleteRange(batch, begin, beginLen, end, endLen);
  }

  @Override
  public int batchDeleteRangeIn(long batch, long region, long begin, long beginLen, long end,
      long endLen) {
    return JniNative.batchDeleteRangeIn(batch, region, begin, beginLen, end, endLen);
  }

  @Override
  public int writeVolume(long vol, long batch, int flags) {
    return JniNative.writeVolume(vol, batch, flags);
  }

  @Override
  public int snapshotCreateMany(long n, long regions, long out) {
    return JniNative.snapshotCreateMany(n, regions, out);
  }

  @Override
  public int regionStats(long region, long out) {
    return JniNative.regionStats(region, out);
  }

  @Override
  public int estimateRange(long region, long begin, long beginLen, long end, long endLen,
      long out) {
    return JniNative.estimateRange(region, begin, beginLen, end, endLen, out);
  }

  @Override
  public int volumeStats(long vol, long out) {
    return JniNative.volumeStats(vol, out);
  }

  @Override
  public int checkpoint(long vol, long path, long names, long n, long stats) {
    return JniNative.checkpoint(vol, path, names, n, stats);
  }

  @Override
  public long addressAtPosition(ByteBuffer buf) {
    long base = UNSAFE != null ? UNSAFE.getLong(buf, ADDRESS_OFFSET) : JniNative.directAddress(buf);
    return base + buf.position();
  }

  @Override
  public void copyToArray(long src, byte[] dst, int off, int len) {
    copied(JniNative.copyToArray(src, dst, off, len));
  }

  @Override
  public void copyMemory(long src, long dst, long len) {
    copied(JniNative.copyMemory(src, dst, len));
  }

  private void copied(int rc) {
    if (rc != 0) throw new ParallaxIOException(rc, lastError() + " (" + strerror(rc) + ")");
  }

  @Override
  public NativeMemory allocate(int size) {
    ByteBuffer b = ByteBuffer.allocateDirect(Math.max(size, 1));
    long addr = addressAtPosition(b);
    return new NativeMemory(addr, b, () -> free(b));
  }

  private static void free(ByteBuffer b) {
    if (UNSAFE != null) {
      try {
        UNSAFE.invokeCleaner(b);
      } catch (RuntimeException e) {
        // left to the garbage collector
      }
    }
  }

  // ---- replication.h ----

  @Override
  public int replSetRole(long region, int role) {
    return JniNative.replSetRole(region, role);
  }

  @Override
  public int replCursorOpen(long region, long fromLsn, long out) {
    return JniNative.replCursorOpen(region, fromLsn, out);
  }

  @Override
  public int replCursorRead(long cursor, long buf, long cap, long lenOut, long lastOut) {
    return JniNative.replCursorRead(cursor, buf, cap, lenOut, lastOut);
  }

  @Override
  public void replCursorClose(long cursor) {
    JniNative.replCursorClose(cursor);
  }

  @Override
  public int replCursorSetLimit(long cursor, int segments) {
    return JniNative.replCursorSetLimit(cursor, segments);
  }

  @Override
  public int replCursorShipWritten(long cursor) {
    return JniNative.replCursorShipWritten(cursor);
  }

  @Override
  public int replApply(long region, long records, long len, int flags, long appliedOut) {
    return JniNative.replApply(region, records, len, flags, appliedOut);
  }

  @Override
  public int replExportOpen(long region, long out) {
    return JniNative.replExportOpen(region, out);
  }

  @Override
  public int replExportLayout(long export, long buf, long cap, long lenOut) {
    return JniNative.replExportLayout(export, buf, cap, lenOut);
  }

  @Override
  public long replExportCovered(long export) {
    return JniNative.replExportCovered(export);
  }

  @Override
  public int replExportSegment(long export, int seg, long buf, long lenOut) {
    return JniNative.replExportSegment(export, seg, buf, lenOut);
  }

  @Override
  public void replExportClose(long export) {
    JniNative.replExportClose(export);
  }

  @Override
  public int replInstallBegin(long region, long layout, long len, long out) {
    return JniNative.replInstallBegin(region, layout, len, out);
  }

  @Override
  public long replInstallNeeded(long install, long segs, long cap) {
    return JniNative.replInstallNeeded(install, segs, cap);
  }

  @Override
  public int replInstallSegment(long install, int seg, long data, long len) {
    return JniNative.replInstallSegment(install, seg, data, len);
  }

  @Override
  public int replInstallCommit(long install) {
    return JniNative.replInstallCommit(install);
  }

  @Override
  public int replSnapshot(long region, long out, long lsnOut) {
    return JniNative.replSnapshot(region, out, lsnOut);
  }

  @Override
  public int replRebase(long region, long lsn) {
    return JniNative.replRebase(region, lsn);
  }

  @Override
  public void replInstallClose(long install) {
    JniNative.replInstallClose(install);
  }

  @Override
  public long replStats(long region, long out, long cap) {
    return JniNative.replStats(region, out, cap);
  }
}
