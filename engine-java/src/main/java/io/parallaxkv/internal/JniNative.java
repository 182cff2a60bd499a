package io.parallaxkv.internal;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * The JNI entry points of {@code libparallax.so} ({@code engine-native/jni/parallax_jni.c}).
 * Addresses are raw native pointers; see {@link NativeApi} for the conventions.
 */
final class JniNative {
  private JniNative() {}

  static native long[] layout();

  static native String strerror(int status);

  static native byte[] lastError();

  static native void optionsInit(long opts);

  static native int open(long path, long opts, long out);

  static native int close(long vol);

  static native int regionCreate(long vol, long name);

  static native int regionOpen(long vol, long name, int create, long out);

  static native int regionClose(long r);

  static native int regionDrop(long vol, long name);

  static native int regionList(long vol, List<byte[]> out);

  static native int put(long r, long k, long kl, long v, long vl, int flags);

  static native int delete(long r, long k, long kl, int flags);

  static native int batchCreate(long out);

  static native int batchPut(long b, long k, long kl, long v, long vl);

  static native int batchDelete(long b, long k, long kl);

  static native void batchClear(long b);

  static native long batchCount(long b);

  static native void batchDestroy(long b);

  static native int write(long r, long b, int flags);

  static native int sync(long r);

  static native int snapshotCreate(long r, long out);

  static native void snapshotRelease(long s);

  static native int get(long r, long snap, long k, long kl, long buf, long cap, long vlen);

  static native int exists(long r, long snap, long k, long kl);

  static native int snapshotGetView(long snap, long k, long kl, long value, long vlen);

  static native int multiGet(long snap, long n, long keys, long lens, long vals, long vlens,
      long st);

  static native int scannerOpen(long r, long snap, long out);

  static native int scannerSeek(long s, long k, long kl, int mode, long entry);

  static native int scannerNext(long s, long entry);

  static native int scannerPrev(long s, long entry);

  static native int scannerValue(long s, long out);

  static native void scannerClose(long s);

  static native int scannerSetReadahead(long s, int entries);

  static native int flush(long r);

  static native int compact(long r);

  static native int batchPutIn(long b, long r, long k, long kl, long v, long vl);

  static native int batchDeleteIn(long b, long r, long k, long kl);

  static native int deleteRange(long r, long b, long bl, long e, long el, int flags);

  static native int batchDeleteRange(long batch, long b, long bl, long e, long el);

  static native int batchDeleteRangeIn(long batch, long r, long b, long bl, long e, long el);

  static native int writeVolume(long vol, long b, int flags);

  static native int snapshotCreateMany(long n, long regions, long out);

  static native int regionStats(long r, long out);

  static native int estimateRange(long r, long b, long bl, long e, long el, long out);

  static native int volumeStats(long vol, long out);

  static native int checkpoint(long vol, long path, long names, long n, long stats);

  static native long directAddress(ByteBuffer buf);

  /** 0, or PAR_EIO when a page of the volume's map could not be read (SIGBUS, guarded). */
  static native int copyToArray(long src, byte[] dst, int off, int len);

  /** As {@link #copyToArray}. */
  static native int copyMemory(long src, long dst, long len);

  // replication.h
  static native int replSetRole(long region, int role);
  static native int replCursorOpen(long region, long fromLsn, long out);
  static native int replCursorRead(long cursor, long buf, long cap, long lenOut, long lastOut);
  static native void replCursorClose(long cursor);
  static native int replCursorSetLimit(long cursor, int segments);

  static native int replCursorShipWritten(long cursor);
  static native int replApply(long region, long records, long len, int flags, long appliedOut);
  static native int replExportOpen(long region, long out);
  static native int replExportLayout(long export, long buf, long cap, long lenOut);
  static native long replExportCovered(long export);
  static native int replExportSegment(long export, int seg, long buf, long lenOut);
  static native void replExportClose(long export);
  static native int replInstallBegin(long region, long layout, long len, long out);
  static native long replInstallNeeded(long install, long segs, long cap);
  static native int replInstallSegment(long install, int seg, long data, long len);
  static native int replInstallCommit(long install);
  static native void replInstallClose(long install);
  static native long replStats(long region, long out, long cap);
  static native int replSnapshot(long region, long out, long lsnOut);
  static native int replRebase(long region, long lsn);
}
