/*
 * parallax_jni.c — the JNI bridge of the Java API (engine-java, class
 * io.parallaxkv.internal.JniNative), compiled into libparallax.so.
 *
 * Deliberately thin: every pointer travels as a jlong raw address (the Java
 * side passes direct-buffer or scratch-buffer addresses), so each entry point
 * is one cast and one call into the public C API of parallax.h. Out parameters
 * (handles, lengths) are written to caller-supplied native addresses. Nothing
 * here keeps a reference to Java memory after a call returns.
 */
#include <jni.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parallax/parallax.h"
#include "parallax/replication.h"
#include "io/mapguard.h"

#define JNI_FN(ret, name) JNIEXPORT ret JNICALL Java_io_parallaxkv_internal_JniNative_##name
#define P(a) ((void *)(uintptr_t)(a))
#define CP(a) ((const void *)(uintptr_t)(a))

/* Every exported function below has a prototype here (-Wmissing-prototypes). */
#define DECL(ret, name, ...) JNIEXPORT ret JNICALL Java_io_parallaxkv_internal_JniNative_##name(JNIEnv *env, jclass cls, ##__VA_ARGS__);
DECL(jlongArray, layout)
DECL(jstring, strerror, jint status)
DECL(jbyteArray, lastError)
DECL(void, optionsInit, jlong opts)
DECL(jint, open, jlong path, jlong opts, jlong out)
DECL(jint, close, jlong vol)
DECL(jint, regionCreate, jlong vol, jlong name)
DECL(jint, regionOpen, jlong vol, jlong name, jint create, jlong out)
DECL(jint, regionClose, jlong r)
DECL(jint, regionDrop, jlong vol, jlong name)
DECL(jint, regionList, jlong vol, jobject list)
DECL(jint, put, jlong r, jlong k, jlong kl, jlong v, jlong vl, jint flags)
DECL(jint, delete, jlong r, jlong k, jlong kl, jint flags)
DECL(jint, batchCreate, jlong out)
DECL(jint, batchPut, jlong b, jlong k, jlong kl, jlong v, jlong vl)
DECL(jint, batchDelete, jlong b, jlong k, jlong kl)
DECL(void, batchClear, jlong b)
DECL(jlong, batchCount, jlong b)
DECL(void, batchDestroy, jlong b)
DECL(jint, write, jlong r, jlong b, jint flags)
DECL(jint, sync, jlong r)
DECL(jint, snapshotCreate, jlong r, jlong out)
DECL(void, snapshotRelease, jlong s)
DECL(jint, get, jlong r, jlong snap, jlong k, jlong kl, jlong buf, jlong cap, jlong vlen)
DECL(jint, exists, jlong r, jlong snap, jlong k, jlong kl)
DECL(jint, snapshotGetView, jlong snap, jlong k, jlong kl, jlong value, jlong vlen)
DECL(jint, multiGet, jlong snap, jlong n, jlong keys, jlong lens, jlong vals, jlong vlens, jlong st)
DECL(jint, scannerOpen, jlong r, jlong snap, jlong out)
DECL(jint, scannerSeek, jlong s, jlong k, jlong kl, jint mode, jlong entry)
DECL(jint, scannerNext, jlong s, jlong entry)
DECL(jint, scannerPrev, jlong s, jlong entry)
DECL(jint, scannerValue, jlong s, jlong out)
DECL(void, scannerClose, jlong s)
DECL(jint, scannerSetReadahead, jlong s, jint entries)
DECL(jint, flush, jlong r)
DECL(jint, compact, jlong r)
DECL(jint, batchPutIn, jlong b, jlong r, jlong k, jlong kl, jlong v, jlong vl)
DECL(jint, batchDeleteIn, jlong b, jlong r, jlong k, jlong kl)
DECL(jint, deleteRange, jlong r, jlong b, jlong bl, jlong e, jlong el, jint flags)
DECL(jint, batchDeleteRange, jlong batch, jlong b, jlong bl, jlong e, jlong el)
DECL(jint, batchDeleteRangeIn, jlong batch, jlong r, jlong b, jlong bl, jlong e, jlong el)
DECL(jint, writeVolume, jlong vol, jlong b, jint flags)
DECL(jint, snapshotCreateMany, jlong n, jlong regions, jlong out)
DECL(jint, regionStats, jlong r, jlong out)
DECL(jint, replSetRole, jlong region, jint role)
DECL(jint, replCursorOpen, jlong region, jlong fromLsn, jlong out)
DECL(jint, replCursorRead, jlong cursor, jlong buf, jlong cap, jlong lenOut, jlong lastOut)
DECL(void, replCursorClose, jlong cursor)
DECL(jint, replCursorSetLimit, jlong cursor, jint segments)
DECL(jint, replCursorShipWritten, jlong cursor)
DECL(jint, replApply, jlong region, jlong records, jlong len, jint flags, jlong appliedOut)
DECL(jint, replExportOpen, jlong region, jlong out)
DECL(jint, replExportLayout, jlong export, jlong buf, jlong cap, jlong lenOut)
DECL(jlong, replExportCovered, jlong export)
DECL(jint, replExportSegment, jlong export, jint seg, jlong buf, jlong lenOut)
DECL(void, replExportClose, jlong export)
DECL(jint, replInstallBegin, jlong region, jlong layout, jlong len, jlong out)
DECL(jlong, replInstallNeeded, jlong install, jlong segs, jlong cap)
DECL(jint, replInstallSegment, jlong install, jint seg, jlong data, jlong len)
DECL(jint, replInstallCommit, jlong install)
DECL(void, replInstallClose, jlong install)
DECL(jlong, replStats, jlong region, jlong out, jlong cap)
DECL(jint, replSnapshot, jlong region, jlong out, jlong lsnOut)
DECL(jint, replRebase, jlong region, jlong lsn)
DECL(jint, estimateRange, jlong r, jlong b, jlong bl, jlong e, jlong el, jlong out)
DECL(jint, volumeStats, jlong vol, jlong out)
DECL(jint, checkpoint, jlong vol, jlong path, jlong names, jlong n, jlong stats)
DECL(jlong, directAddress, jobject buf)
DECL(jint, copyToArray, jlong src, jbyteArray dst, jint off, jint len)
DECL(jint, copyMemory, jlong src, jlong dst, jlong len)

/* The struct layout the library was built with (par_abi_layout), which the
 * Java side checks at load. */
JNI_FN(jlongArray, layout)(JNIEnv *env, jclass cls) {
  jlong v[64];
  size_t n = par_abi_layout((int64_t *)v, sizeof v / sizeof v[0]);
  if (n > sizeof v / sizeof v[0]) n = sizeof v / sizeof v[0];
  jlongArray a = (*env)->NewLongArray(env, (jsize)n);
  if (a) (*env)->SetLongArrayRegion(env, a, 0, (jsize)n, v);
  return a;
}

JNI_FN(jstring, strerror)(JNIEnv *env, jclass cls, jint status) {
  return (*env)->NewStringUTF(env, par_strerror(status)); /* static ASCII */
}

/* Bytes, not a String: the message may hold arbitrary bytes (file names). */
JNI_FN(jbyteArray, lastError)(JNIEnv *env, jclass cls) {
  const char *m = par_last_error();
  if (!m) m = "";
  jsize n = (jsize)strlen(m);
  jbyteArray a = (*env)->NewByteArray(env, n);
  if (a) (*env)->SetByteArrayRegion(env, a, 0, n, (const jbyte *)m);
  return a;
}

JNI_FN(void, optionsInit)(JNIEnv *env, jclass cls, jlong opts) { par_options_init(P(opts)); }

JNI_FN(jint, open)(JNIEnv *env, jclass cls, jlong path, jlong opts, jlong out) {
  return par_open(CP(path), CP(opts), P(out));
}
JNI_FN(jint, close)(JNIEnv *env, jclass cls, jlong vol) { return par_close(P(vol)); }
JNI_FN(jint, regionCreate)(JNIEnv *env, jclass cls, jlong vol, jlong name) {
  return par_region_create(P(vol), CP(name));
}
JNI_FN(jint, regionOpen)(JNIEnv *env, jclass cls, jlong vol, jlong name, jint create, jlong out) {
  return par_region_open(P(vol), CP(name), create, P(out));
}
JNI_FN(jint, regionClose)(JNIEnv *env, jclass cls, jlong r) { return par_region_close(P(r)); }
JNI_FN(jint, regionDrop)(JNIEnv *env, jclass cls, jlong vol, jlong name) {
  return par_region_drop(P(vol), CP(name));
}

typedef struct list_ctx {
  JNIEnv *env;
  jobject list;
  jmethodID add;
  int failed;
} list_ctx;

static void list_one(const char *name, void *arg) {
  list_ctx *c = arg;
  if (c->failed) return;
  JNIEnv *env = c->env;
  jsize n = (jsize)strlen(name);
  jbyteArray a = (*env)->NewByteArray(env, n);
  if (!a) {
    c->failed = 1;
    return;
  }
  (*env)->SetByteArrayRegion(env, a, 0, n, (const jbyte *)name);
  (*env)->CallBooleanMethod(env, c->list, c->add, a);
  (*env)->DeleteLocalRef(env, a);
  if ((*env)->ExceptionCheck(env)) c->failed = 1;
}

/* Appends each region name (as byte[]) to a java.util.List. */
JNI_FN(jint, regionList)(JNIEnv *env, jclass cls, jlong vol, jobject list) {
  jclass lc = (*env)->GetObjectClass(env, list);
  jmethodID add = lc ? (*env)->GetMethodID(env, lc, "add", "(Ljava/lang/Object;)Z") : NULL;
  if (!add) return PAR_ENOMEM; /* an exception is pending */
  list_ctx c = {env, list, add, 0};
  int rc = par_region_list(P(vol), list_one, &c);
  return rc ? rc : (c.failed ? PAR_ENOMEM : PAR_OK);
}

JNI_FN(jint, put)(JNIEnv *env, jclass cls, jlong r, jlong k, jlong kl, jlong v, jlong vl, jint flags) {
  return par_put(P(r), CP(k), (size_t)kl, CP(v), (size_t)vl, (unsigned)flags);
}
JNI_FN(jint, delete)(JNIEnv *env, jclass cls, jlong r, jlong k, jlong kl, jint flags) {
  return par_delete(P(r), CP(k), (size_t)kl, (unsigned)flags);
}
JNI_FN(jint, batchCreate)(JNIEnv *env, jclass cls, jlong out) { return par_batch_create(P(out)); }
JNI_FN(jint, batchPut)(JNIEnv *env, jclass cls, jlong b, jlong k, jlong kl, jlong v, jlong vl) {
  return par_batch_put(P(b), CP(k), (size_t)kl, CP(v), (size_t)vl);
}
JNI_FN(jint, batchDelete)(JNIEnv *env, jclass cls, jlong b, jlong k, jlong kl) {
  return par_batch_delete(P(b), CP(k), (size_t)kl);
}
JNI_FN(void, batchClear)(JNIEnv *env, jclass cls, jlong b) { par_batch_clear(P(b)); }
JNI_FN(jlong, batchCount)(JNIEnv *env, jclass cls, jlong b) { return (jlong)par_batch_count(CP(b)); }
JNI_FN(void, batchDestroy)(JNIEnv *env, jclass cls, jlong b) { par_batch_destroy(P(b)); }
JNI_FN(jint, write)(JNIEnv *env, jclass cls, jlong r, jlong b, jint flags) {
  return par_write(P(r), CP(b), (unsigned)flags);
}
JNI_FN(jint, sync)(JNIEnv *env, jclass cls, jlong r) { return par_sync(P(r)); }
JNI_FN(jint, snapshotCreate)(JNIEnv *env, jclass cls, jlong r, jlong out) {
  return par_snapshot_create(P(r), P(out));
}
JNI_FN(void, snapshotRelease)(JNIEnv *env, jclass cls, jlong s) { par_snapshot_release(P(s)); }
JNI_FN(jint, get)(JNIEnv *env, jclass cls, jlong r, jlong snap, jlong k, jlong kl, jlong buf, jlong cap,
            jlong vlen) {
  return par_get(P(r), CP(snap), CP(k), (size_t)kl, P(buf), (size_t)cap, P(vlen));
}
JNI_FN(jint, snapshotGetView)(JNIEnv *env, jclass cls, jlong snap, jlong k, jlong kl, jlong value,
                              jlong vlen) {
  return par_snapshot_get_view(P(snap), CP(k), (size_t)kl, P(value), P(vlen));
}
JNI_FN(jint, exists)(JNIEnv *env, jclass cls, jlong r, jlong snap, jlong k, jlong kl) {
  return par_exists(P(r), CP(snap), CP(k), (size_t)kl);
}
JNI_FN(jint, multiGet)(JNIEnv *env, jclass cls, jlong snap, jlong n, jlong keys, jlong lens, jlong vals,
                      jlong vlens, jlong st) {
  return par_multi_get(P(snap), (size_t)n, CP(keys), CP(lens), P(vals), P(vlens), P(st));
}
JNI_FN(jint, scannerOpen)(JNIEnv *env, jclass cls, jlong r, jlong snap, jlong out) {
  return par_scanner_open(P(r), CP(snap), P(out));
}

/* After a move: returns a negative status, or the valid flag (0/1) with, when
 * valid, entry[1] key address and [2] key length (engine memory, valid until
 * the scanner moves or closes). The value is read only when asked for
 * (scannerValue): a key-only scan never touches the value logs. */
static int fill_entry(par_scanner *s, int64_t *e) {
  e[0] = par_scanner_valid(s);
  if (!e[0]) return 0;
  const void *k = NULL;
  size_t kl = 0;
  int rc = par_scanner_key(s, &k, &kl);
  e[1] = (int64_t)(uintptr_t)k;
  e[2] = (int64_t)kl;
  return rc ? rc : 1;
}

JNI_FN(jint, scannerSeek)(JNIEnv *env, jclass cls, jlong s, jlong k, jlong kl, jint mode, jlong entry) {
  int rc = par_scanner_seek(P(s), CP(k), (size_t)kl, (par_seek_mode)mode);
  return rc ? rc : fill_entry(P(s), P(entry));
}
JNI_FN(jint, scannerNext)(JNIEnv *env, jclass cls, jlong s, jlong entry) {
  int rc = par_scanner_next(P(s));
  return rc ? rc : fill_entry(P(s), P(entry));
}
JNI_FN(jint, scannerPrev)(JNIEnv *env, jclass cls, jlong s, jlong entry) {
  int rc = par_scanner_prev(P(s));
  return rc ? rc : fill_entry(P(s), P(entry));
}
/* The current value: out[0] its address, out[1] its length. */
JNI_FN(jint, scannerValue)(JNIEnv *env, jclass cls, jlong s, jlong out) {
  const void *v = NULL;
  size_t vl = 0;
  int64_t *o = P(out);
  int rc = par_scanner_value(P(s), &v, &vl);
  o[0] = (int64_t)(uintptr_t)v;
  o[1] = (int64_t)vl;
  return rc;
}
JNI_FN(void, scannerClose)(JNIEnv *env, jclass cls, jlong s) { par_scanner_close(P(s)); }
JNI_FN(jint, scannerSetReadahead)(JNIEnv *env, jclass cls, jlong s, jint entries) {
  return par_scanner_set_readahead(P(s), (uint32_t)entries);
}
JNI_FN(jint, flush)(JNIEnv *env, jclass cls, jlong r) { return par_flush(P(r)); }
JNI_FN(jint, compact)(JNIEnv *env, jclass cls, jlong r) { return par_compact(P(r)); }
JNI_FN(jint, batchPutIn)(JNIEnv *env, jclass cls, jlong b, jlong r, jlong k, jlong kl, jlong v, jlong vl) {
  return par_batch_put_in(P(b), P(r), CP(k), (size_t)kl, CP(v), (size_t)vl);
}
JNI_FN(jint, batchDeleteIn)(JNIEnv *env, jclass cls, jlong b, jlong r, jlong k, jlong kl) {
  return par_batch_delete_in(P(b), P(r), CP(k), (size_t)kl);
}
JNI_FN(jint, deleteRange)(JNIEnv *env, jclass cls, jlong r, jlong b, jlong bl, jlong e, jlong el, jint flags) {
  return par_delete_range(P(r), CP(b), (size_t)bl, CP(e), (size_t)el, (unsigned)flags);
}
JNI_FN(jint, batchDeleteRange)(JNIEnv *env, jclass cls, jlong batch, jlong b, jlong bl, jlong e, jlong el) {
  return par_batch_delete_range(P(batch), CP(b), (size_t)bl, CP(e), (size_t)el);
}
JNI_FN(jint, batchDeleteRangeIn)(JNIEnv *env, jclass cls, jlong batch, jlong r, jlong b, jlong bl, jlong e,
                                 jlong el) {
  return par_batch_delete_range_in(P(batch), P(r), CP(b), (size_t)bl, CP(e), (size_t)el);
}
JNI_FN(jint, writeVolume)(JNIEnv *env, jclass cls, jlong vol, jlong b, jint flags) {
  return par_write_volume(P(vol), CP(b), (unsigned)flags);
}
JNI_FN(jint, snapshotCreateMany)(JNIEnv *env, jclass cls, jlong n, jlong regions, jlong out) {
  return par_snapshot_create_many((size_t)n, CP(regions), P(out));
}
JNI_FN(jint, regionStats)(JNIEnv *env, jclass cls, jlong r, jlong out) {
  return par_region_stats(P(r), P(out));
}
JNI_FN(jint, estimateRange)(JNIEnv *env, jclass cls, jlong r, jlong b, jlong bl, jlong e, jlong el,
                           jlong out) {
  return par_estimate_range(P(r), CP(b), (size_t)bl, CP(e), (size_t)el, P(out));
}
JNI_FN(jint, volumeStats)(JNIEnv *env, jclass cls, jlong vol, jlong out) {
  return par_volume_stats_get(P(vol), P(out));
}
JNI_FN(jint, checkpoint)(JNIEnv *env, jclass cls, jlong vol, jlong path, jlong names, jlong n, jlong stats) {
  return par_checkpoint(P(vol), CP(path), CP(names), (size_t)n, P(stats));
}
JNI_FN(jlong, directAddress)(JNIEnv *env, jclass cls, jobject buf) {
  return (jlong)(uintptr_t)(*env)->GetDirectBufferAddress(env, buf);
}
/* The copies read engine memory, the volume's map included, so they are
 * guarded (io/mapguard.h): a page the kernel cannot supply (the file was
 * truncated, the device failed) gives PAR_EIO, where the JVM's own copy
 * (SetByteArrayRegion) would take the fault inside the VM and die. */
JNI_FN(jint, copyToArray)(JNIEnv *env, jclass cls, jlong src, jbyteArray dst, jint off, jint len) {
  jbyte *a = (*env)->GetPrimitiveArrayCritical(env, dst, NULL);
  if (!a) return PAR_ENOMEM;
  int rc = mapguard_copy(a + off, CP(src), (size_t)len);
  (*env)->ReleasePrimitiveArrayCritical(env, dst, a, 0);
  return rc;
}
JNI_FN(jint, copyMemory)(JNIEnv *env, jclass cls, jlong src, jlong dst, jlong len) {
  return mapguard_copy(P(dst), CP(src), (size_t)len);
}

/* ---- replication.h ---- */
JNI_FN(jint, replSetRole)(JNIEnv *env, jclass cls, jlong region, jint role) {
  return (jint)par_repl_set_role(P(region), (int)role);
}
JNI_FN(jint, replCursorOpen)(JNIEnv *env, jclass cls, jlong region, jlong fromLsn, jlong out) {
  return (jint)par_repl_cursor_open(P(region), (uint64_t)fromLsn, P(out));
}
JNI_FN(jint, replCursorRead)(JNIEnv *env, jclass cls, jlong cursor, jlong buf, jlong cap, jlong lenOut,
                             jlong lastOut) {
  return (jint)par_repl_cursor_read(P(cursor), P(buf), (size_t)cap, P(lenOut), P(lastOut));
}
JNI_FN(jint, replCursorSetLimit)(JNIEnv *env, jclass cls, jlong cursor, jint segments) {
  return (jint)par_repl_cursor_set_limit(P(cursor), (uint32_t)segments);
}
JNI_FN(jint, replCursorShipWritten)(JNIEnv *env, jclass cls, jlong cursor) {
  return (jint)par_repl_cursor_ship_written(P(cursor));
}
JNI_FN(void, replCursorClose)(JNIEnv *env, jclass cls, jlong cursor) {
  par_repl_cursor_close(P(cursor));
}
JNI_FN(jint, replApply)(JNIEnv *env, jclass cls, jlong region, jlong records, jlong len, jint flags,
                        jlong appliedOut) {
  return (jint)par_repl_apply(P(region), P(records), (size_t)len, (uint32_t)flags, P(appliedOut));
}
JNI_FN(jint, replExportOpen)(JNIEnv *env, jclass cls, jlong region, jlong out) {
  return (jint)par_repl_export_open(P(region), P(out));
}
JNI_FN(jint, replExportLayout)(JNIEnv *env, jclass cls, jlong export, jlong buf, jlong cap, jlong lenOut) {
  return (jint)par_repl_export_layout(P(export), P(buf), (size_t)cap, P(lenOut));
}
JNI_FN(jlong, replExportCovered)(JNIEnv *env, jclass cls, jlong export) {
  return (jlong)par_repl_export_covered(P(export));
}
JNI_FN(jint, replExportSegment)(JNIEnv *env, jclass cls, jlong export, jint seg, jlong buf, jlong lenOut) {
  return (jint)par_repl_export_segment(P(export), (uint32_t)seg, P(buf), P(lenOut));
}
JNI_FN(void, replExportClose)(JNIEnv *env, jclass cls, jlong export) {
  par_repl_export_close(P(export));
}
JNI_FN(jint, replInstallBegin)(JNIEnv *env, jclass cls, jlong region, jlong layout, jlong len, jlong out) {
  return (jint)par_repl_install_begin(P(region), P(layout), (size_t)len, P(out));
}
JNI_FN(jlong, replInstallNeeded)(JNIEnv *env, jclass cls, jlong install, jlong segs, jlong cap) {
  return (jlong)par_repl_install_needed(P(install), P(segs), (size_t)cap);
}
JNI_FN(jint, replInstallSegment)(JNIEnv *env, jclass cls, jlong install, jint seg, jlong data, jlong len) {
  return (jint)par_repl_install_segment(P(install), (uint32_t)seg, P(data), (size_t)len);
}
JNI_FN(jint, replInstallCommit)(JNIEnv *env, jclass cls, jlong install) {
  return (jint)par_repl_install_commit(P(install));
}
JNI_FN(jint, replSnapshot)(JNIEnv *env, jclass cls, jlong region, jlong out, jlong lsnOut) {
  return (jint)par_repl_snapshot(P(region), P(out), P(lsnOut));
}
JNI_FN(jint, replRebase)(JNIEnv *env, jclass cls, jlong region, jlong lsn) {
  return (jint)par_repl_rebase(P(region), (uint64_t)lsn);
}
JNI_FN(void, replInstallClose)(JNIEnv *env, jclass cls, jlong install) {
  par_repl_install_close(P(install));
}
JNI_FN(jlong, replStats)(JNIEnv *env, jclass cls, jlong region, jlong out, jlong cap) {
  return (jlong)par_repl_stats(P(region), P(out), (size_t)cap);
}
