package io.parallaxkv.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.parallaxkv.ParallaxException;
import io.parallaxkv.ParallaxIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The FFM backend (JDK 22+): one downcall handle per C entry point. Pointers and sizes travel as
 * {@code long} (x86_64 LP64), so the handles take raw addresses exactly like the JNI bridge.
 * {@link Linker.Option#critical(boolean)} (no thread-state transition) is used only for trivial,
 * non-blocking helpers: error strings, option defaults, the scanner's valid flag and current key
 * (already in memory after a move), batch bookkeeping; never for put, get, scans, a scanner's
 * value (a log read with its checksum, up to 64 MiB) or anything else that can block.
 */
final class FfmBackend extends NativeApi {
  private static final Linker LINKER = Linker.nativeLinker();
  private static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

  private final SymbolLookup lib;
  private final Set<String> critical = new HashSet<>();
  private final MethodHandle abiLayout, strerror, lastError, optionsInit, open, close, regionCreate,
      regionOpen, regionClose, regionDrop, regionList, put, delete, batchCreate, batchPut,
      batchDelete, batchClear, batchCount, batchDestroy, write, sync, snapshotCreate,
      snapshotRelease, get, exists, snapshotGetView, multiGet, scannerOpen, scannerSeek, scannerValid, scannerKey,
      scannerValue, scannerNext, scannerPrev, scannerClose, scannerSetReadahead, flush, compact, regionStats, volumeStats,
      checkpoint,
      estimateRange, deleteRange, batchDeleteRange, batchDeleteRangeIn,
      batchPutIn, batchDeleteIn, writeVolume, snapshotCreateMany;
  private final MethodHandle replSetRoleH, replCursorOpenH, replCursorReadH, replCursorCloseH, replCursorSetLimitH, replCursorShipWrittenH,
      replApplyH, replExportOpenH, replExportLayoutH, replExportCoveredH, replExportSegmentH,
      replExportCloseH, replInstallBeginH, replInstallNeededH, replInstallSegmentH,
      replInstallCommitH, replInstallCloseH, replStatsH, replSnapshotH, replRebaseH;
  private final MemorySegment listStub;
  private static final ThreadLocal<List<byte[]>> LIST_SINK = new ThreadLocal<>();

  FfmBackend(Path library) {
    Module m = FfmBackend.class.getModule();
    if (!m.isNativeAccessEnabled()) {
      NativeLibrary.checkNativeAccess(m, "FFM");
    }
    try {
      lib = SymbolLookup.libraryLookup(library, Arena.global());
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException(NativeLibrary.explain(library, e.getMessage()), e);
    } catch (IllegalCallerException e) {
      throw new IllegalStateException(NativeLibrary.nativeAccessMessage(m, "FFM"), e);
    }
    Linker.Option crit = Linker.Option.critical(false);
    abiLayout = h("par_abi_layout", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG), crit);
    strerror = h("par_strerror", FunctionDescriptor.of(ADDRESS, JAVA_INT), crit);
    lastError = h("par_last_error", FunctionDescriptor.of(ADDRESS), crit);
    optionsInit = h("par_options_init", FunctionDescriptor.ofVoid(JAVA_LONG), crit);
    open = h("par_open", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    close = h("par_close", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    regionCreate = h("par_region_create", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
    regionOpen = h("par_region_open",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_LONG));
    regionClose = h("par_region_close", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    regionDrop = h("par_region_drop", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
    regionList = h("par_region_list",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG));
    put = h("par_put", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG,
        JAVA_LONG, JAVA_INT));
    delete = h("par_delete",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT));
    batchCreate = h("par_batch_create", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    batchPut = h("par_batch_put", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG,
        JAVA_LONG, JAVA_LONG));
    batchDelete = h("par_batch_delete",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    batchClear = h("par_batch_clear", FunctionDescriptor.ofVoid(JAVA_LONG), crit);
    batchCount = h("par_batch_count", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG), crit);
    batchDestroy = h("par_batch_destroy", FunctionDescriptor.ofVoid(JAVA_LONG));
    write = h("par_write", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT));
    sync = h("par_sync", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    snapshotCreate = h("par_snapshot_create", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
    snapshotRelease = h("par_snapshot_release", FunctionDescriptor.ofVoid(JAVA_LONG));
    get = h("par_get", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG,
        JAVA_LONG, JAVA_LONG, JAVA_LONG));
    exists = h("par_exists",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    snapshotGetView = h("par_snapshot_get_view",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    multiGet = h("par_multi_get", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG,
        JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    scannerOpen = h("par_scanner_open",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    scannerSeek = h("par_scanner_seek",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT));
    scannerValid = h("par_scanner_valid", FunctionDescriptor.of(JAVA_INT, JAVA_LONG), crit);
    scannerKey = h("par_scanner_key",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG), crit);
    scannerValue = h("par_scanner_value",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    scannerNext = h("par_scanner_next", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    scannerPrev = h("par_scanner_prev", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    scannerClose = h("par_scanner_close", FunctionDescriptor.ofVoid(JAVA_LONG));
    scannerSetReadahead = h("par_scanner_set_readahead", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT));
    flush = h("par_flush", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    compact = h("par_compact", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    batchPutIn = h("par_batch_put_in", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
        JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    batchDeleteIn = h("par_batch_delete_in", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
        JAVA_LONG, JAVA_LONG));
    deleteRange = h("par_delete_range", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
        JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT));
    batchDeleteRange = h("par_batch_delete_range", FunctionDescriptor.of(JAVA_INT, JAVA_LONG,
        JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    batchDeleteRangeIn = h("par_batch_delete_range_in", FunctionDescriptor.of(JAVA_INT, JAVA_LONG,
        JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    writeVolume = h("par_write_volume", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
        JAVA_INT));
    snapshotCreateMany = h("par_snapshot_create_many", FunctionDescriptor.of(JAVA_INT, JAVA_LONG,
        JAVA_LONG, JAVA_LONG));
    regionStats = h("par_region_stats", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
    volumeStats = h("par_volume_stats_get", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
    checkpoint = h("par_checkpoint", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
        JAVA_LONG, JAVA_LONG, JAVA_LONG));
    replSetRoleH = h("par_repl_set_role", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT));
    replCursorOpenH = h("par_repl_cursor_open", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    replCursorReadH = h("par_repl_cursor_read", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    replCursorCloseH = h("par_repl_cursor_close", FunctionDescriptor.ofVoid(JAVA_LONG));
    replCursorSetLimitH = h("par_repl_cursor_set_limit", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT));
    replCursorShipWrittenH = h("par_repl_cursor_ship_written", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    replApplyH = h("par_repl_apply", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_LONG));
    replExportOpenH = h("par_repl_export_open", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
    replExportLayoutH = h("par_repl_export_layout", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    replExportCoveredH = h("par_repl_export_covered", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG));
    replExportSegmentH = h("par_repl_export_segment", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG));
    replExportCloseH = h("par_repl_export_close", FunctionDescriptor.ofVoid(JAVA_LONG));
    replInstallBeginH = h("par_repl_install_begin", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    replInstallNeededH = h("par_repl_install_needed", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    replInstallSegmentH = h("par_repl_install_segment", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG));
    replInstallCommitH = h("par_repl_install_commit", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
    replInstallCloseH = h("par_repl_install_close", FunctionDescriptor.ofVoid(JAVA_LONG));
    replStatsH = h("par_repl_stats", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    replSnapshotH = h("par_repl_snapshot", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    replRebaseH = h("par_repl_rebase", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
    estimateRange = h("par_estimate_range", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
        JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    try {
      MethodHandle cb = MethodHandles.lookup().findStatic(FfmBackend.class, "listOne",
          MethodType.methodType(void.class, MemorySegment.class, MemorySegment.class));
      listStub = LINKER.upcallStub(cb, FunctionDescriptor.ofVoid(ADDRESS, ADDRESS), Arena.global());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
  }

  private MethodHandle h(String name, FunctionDescriptor fd, Linker.Option... options) {
    MemorySegment sym = lib.find(name).orElseThrow(() -> new IllegalStateException(
        "libparallax.so has no symbol " + name + " (an engine older than this API?)"));
    for (Linker.Option o : options) {
      if (o.equals(Linker.Option.critical(false)) || o.equals(Linker.Option.critical(true))) {
        critical.add(name);
      }
    }
    return LINKER.downcallHandle(sym, fd, options);
  }

  /** The entry points linked as critical downcalls (see the class comment), for a test. */
  Set<String> criticalSymbols() {
    return Set.copyOf(critical);
  }

  private static RuntimeException rethrow(Throwable t) {
    if (t instanceof RuntimeException r) return r;
    if (t instanceof Error e) throw e;
    return new IllegalStateException(t);
  }

  private static void listOne(MemorySegment name, MemorySegment arg) {
    List<byte[]> sink = LIST_SINK.get();
    MemorySegment s = name.reinterpret(io.parallaxkv.internal.Layout.MAX_REGION_NAME + 1);
    int n = 0;
    while (n < s.byteSize() && s.get(JAVA_BYTE, n) != 0) n++;
    sink.add(s.asSlice(0, n).toArray(JAVA_BYTE));
  }

  @Override
  public String name() {
    return "ffm";
  }

  @Override
  public long[] layout() {
    try (Arena arena = Arena.ofConfined()) {
      int cap = 256;
      MemorySegment out = arena.allocate(JAVA_LONG, cap);
      long n = (long) abiLayout.invokeExact(out.address(), (long) cap);
      return out.asSlice(0, Math.min(n, cap) * Long.BYTES).toArray(JAVA_LONG);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  private static String cString(MemorySegment p) {
    if (p.address() == 0) return "";
    return p.reinterpret(Long.MAX_VALUE).getString(0, StandardCharsets.UTF_8);
  }

  @Override
  public String strerror(int status) {
    try {
      return cString((MemorySegment) strerror.invokeExact(status));
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public String lastError() {
    try {
      return cString((MemorySegment) lastError.invokeExact());
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public void optionsInit(long opts) {
    try {
      optionsInit.invokeExact(opts);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int open(long path, long opts, long out) {
    try {
      return (int) open.invokeExact(path, opts, out);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int close(long vol) {
    try {
      return (int) close.invokeExact(vol);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int regionCreate(long vol, long name) {
    try {
      return (int) regionCreate.invokeExact(vol, name);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int regionOpen(long vol, long name, int create, long out) {
    try {
      return (int) regionOpen.invokeExact(vol, name, create, out);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int regionClose(long region) {
    try {
      return (int) regionClose.invokeExact(region);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int regionDrop(long vol, long name) {
    try {
      return (int) regionDrop.invokeExact(vol, name);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int regionList(long vol, List<byte[]> out) {
    LIST_SINK.set(out);
    try {
      return (int) regionList.invokeExact(vol, listStub, 0L);
    } catch (Throwable t) {
      throw rethrow(t);
    } finally {
      LIST_SINK.remove();
    }
  }

  @Override
  public int put(long region, long key, long keyLen, long value, long valueLen, int flags) {
    try {
      return (int) put.invokeExact(region, key, keyLen, value, valueLen, flags);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int delete(long region, long key, long keyLen, int flags) {
    try {
      return (int) delete.invokeExact(region, key, keyLen, flags);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int batchCreate(long out) {
    try {
      return (int) batchCreate.invokeExact(out);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int batchPut(long batch, long key, long keyLen, long value, long valueLen) {
    try {
      return (int) batchPut.invokeExact(batch, key, keyLen, value, valueLen);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int batchDelete(long batch, long key, long keyLen) {
    try {
      return (int) batchDelete.invokeExact(batch, key, keyLen);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public void batchClear(long batch) {
    try {
      batchClear.invokeExact(batch);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public long batchCount(long batch) {
    try {
      return (long) batchCount.invokeExact(batch);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public void batchDestroy(long batch) {
    try {
      batchDestroy.invokeExact(batch);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int write(long region, long batch, int flags) {
    try {
      return (int) write.invokeExact(region, batch, flags);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int sync(long region) {
    try {
      return (int) sync.invokeExact(region);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int snapshotCreate(long region, long out) {
    try {
      return (int) snapshotCreate.invokeExact(region, out);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public void snapshotRelease(long snapshot) {
    try {
      snapshotRelease.invokeExact(snapshot);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int get(long region, long snap, long key, long keyLen, long buf, long cap, long vlen) {
    try {
      return (int) get.invokeExact(region, snap, key, keyLen, buf, cap, vlen);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int exists(long region, long snap, long key, long keyLen) {
    try {
      return (int) exists.invokeExact(region, snap, key, keyLen);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int snapshotGetView(long snap, long key, long keyLen, long valueOut, long lenOut) {
    try {
      return (int) snapshotGetView.invokeExact(snap, key, keyLen, valueOut, lenOut);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** A shared arena: views may be read from any thread; closing it invalidates them all. */
  @Override
  public Object openViewScope() {
    return Arena.ofShared();
  }

  @Override
  public ByteBuffer view(Object scope, long addr, int len) {
    return MemorySegment.ofAddress(addr).reinterpret(len, (Arena) scope, null).asByteBuffer()
        .asReadOnlyBuffer();
  }

  @Override
  public boolean tryCloseViewScope(Object scope) {
    Arena arena = (Arena) scope;
    try {
      arena.close();
      return true;
    } catch (IllegalStateException held) { // or closed already
      return !arena.scope().isAlive();
    }
  }

  @Override
  public void closeThreadViewScope(Object scope) {
    ((Arena) scope).close();
  }

  @Override
  public boolean supportsThreadViews() {
    return true;
  }

  @Override
  public Object openThreadViewScope(Object keepAlive) {
    Arena arena = Arena.ofConfined();
    // Views reference the arena's scope, not the Arena object. This no-op cleanup is held by the
    // scope, so every view keeps the Arena (which its owner closes through a weak reference) and
    // keepAlive reachable.
    MemorySegment.NULL.reinterpret(0, arena, unused -> {
      Reference.reachabilityFence(arena);
      Reference.reachabilityFence(keepAlive);
    });
    return arena;
  }

  @Override
  public int multiGet(long snap, long n, long keys, long keyLens, long values, long valueLens,
      long statuses) {
    try {
      return (int) multiGet.invokeExact(snap, n, keys, keyLens, values, valueLens, statuses);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int scannerOpen(long region, long snap, long out) {
    try {
      return (int) scannerOpen.invokeExact(region, snap, out);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  private int entry(long s, long entry) throws Throwable {
    int valid = (int) scannerValid.invokeExact(s);
    ALL.set(JAVA_LONG, entry, (long) valid);
    if (valid == 0) return 0;
    int rc = (int) scannerKey.invokeExact(s, entry + 8, entry + 16);
    return rc < 0 ? rc : 1;
  }

  @Override
  public int scannerSeek(long scanner, long key, long keyLen, int mode, long entry) {
    try {
      int rc = (int) scannerSeek.invokeExact(scanner, key, keyLen, mode);
      return rc < 0 ? rc : entry(scanner, entry);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int scannerNext(long scanner, long entry) {
    try {
      int rc = (int) scannerNext.invokeExact(scanner);
      return rc < 0 ? rc : entry(scanner, entry);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int scannerPrev(long scanner, long entry) {
    try {
      int rc = (int) scannerPrev.invokeExact(scanner);
      return rc < 0 ? rc : entry(scanner, entry);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int scannerValue(long scanner, long out) {
    try {
      return (int) scannerValue.invokeExact(scanner, out, out + 8);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public void scannerClose(long scanner) {
    try {
      scannerClose.invokeExact(scanner);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int scannerSetReadahead(long scanner, int entries) {
    try {
      return (int) scannerSetReadahead.invokeExact(scanner, entries);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int flush(long region) {
    try {
      return (int) flush.invokeExact(region);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int batchPutIn(long batch, long region, long key, long keyLen, long value,
      long valueLen) {
    try {
      return (int) batchPutIn.invokeExact(batch, region, key, keyLen, value, valueLen);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int batchDeleteIn(long batch, long region, long key, long keyLen) {
    try {
      return (int) batchDeleteIn.invokeExact(batch, region, key, keyLen);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int deleteRange(long region, long begin, long beginLen, long end, long endLen, int flags) {
    try {
      return (int) deleteRange.invokeExact(region, begin, beginLen, end, endLen, flags);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int batchDeleteRange(long batch, long begin, long beginLen, long end, long endLen) {
    try {
      return (int) batchDeleteRange.invokeExact(batch, begin, beginLen, end, endLen);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int batchDeleteRangeIn(long batch, long region, long begin, long beginLen, long end,
      long endLen) {
    try {
      return (int) batchDeleteRangeIn.invokeExact(batch, region, begin, beginLen, end, endLen);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int writeVolume(long vol, long batch, int flags) {
    try {
      return (int) writeVolume.invokeExact(vol, batch, flags);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int snapshotCreateMany(long n, long regions, long out) {
    try {
      return (int) snapshotCreateMany.invokeExact(n, regions, out);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int compact(long region) {
    try {
      return (int) compact.invokeExact(region);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int regionStats(long region, long out) {
    try {
      return (int) regionStats.invokeExact(region, out);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int estimateRange(long region, long begin, long beginLen, long end, long endLen,
      long out) {
    try {
      return (int) estimateRange.invokeExact(region, begin, beginLen, end, endLen, out);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int volumeStats(long vol, long out) {
    try {
      return (int) volumeStats.invokeExact(vol, out);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int checkpoint(long vol, long path, long names, long n, long stats) {
    try {
      return (int) checkpoint.invokeExact(vol, path, names, n, stats);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public long addressAtPosition(ByteBuffer buf) {
    return MemorySegment.ofBuffer(buf).address();
  }

  @Override
  public void copyToArray(long src, byte[] dst, int off, int len) {
    try {
      MemorySegment.copy(ALL, JAVA_BYTE, src, dst, off, len);
    } catch (InternalError e) {
      throw mapFault(e);
    }
  }

  @Override
  public void copyMemory(long src, long dst, long len) {
    try {
      MemorySegment.copy(ALL, src, ALL, dst, len);
    } catch (InternalError e) {
      throw mapFault(e);
    }
  }

  /**
   * A copy out of engine memory faulted: the JVM turns a SIGBUS in an unsafe access (a page of
   * the volume's map that the file or the device no longer supplies) into an InternalError; the
   * engine's guard chains such faults to the JVM's handler when it is not inside a guard itself.
   */
  private static ParallaxIOException mapFault(InternalError e) {
    return new ParallaxIOException(ParallaxException.EIO, "a read of engine memory failed: " + e.getMessage());
  }

  @Override
  public NativeMemory allocate(int size) {
    Arena arena = Arena.ofConfined(); // temporary blocks are freed by the thread that took them
    MemorySegment seg = arena.allocate(Math.max(size, 1), 16);
    return new NativeMemory(seg.address(), seg.asByteBuffer(), arena::close);
  }

  @Override
  public NativeMemory allocateShared(int size) {
    Arena arena = Arena.ofShared(); // closing it costs a handshake: for long-lived blocks only
    MemorySegment seg = arena.allocate(Math.max(size, 1), 16);
    return new NativeMemory(seg.address(), seg.asByteBuffer(), arena::close);
  }

  // ---- replication.h ----

  @Override
  public int replSetRole(long region, int role) {
    try {
      return (int) replSetRoleH.invokeExact(region, role);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int replCursorOpen(long region, long fromLsn, long out) {
    try {
      return (int) replCursorOpenH.invokeExact(region, fromLsn, out);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int replCursorRead(long cursor, long buf, long cap, long lenOut, long lastOut) {
    try {
      return (int) replCursorReadH.invokeExact(cursor, buf, cap, lenOut, lastOut);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public void replCursorClose(long cursor) {
    try {
      replCursorCloseH.invokeExact(cursor);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int replCursorSetLimit(long cursor, int segments) {
    try {
      return (int) replCursorSetLimitH.invokeExact(cursor, segments);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int replCursorShipWritten(long cursor) {
    try {
      return (int) replCursorShipWrittenH.invokeExact(cursor);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int replApply(long region, long records, long len, int flags, long appliedOut) {
    try {
      return (int) replApplyH.invokeExact(region, records, len, flags, appliedOut);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int replExportOpen(long region, long out) {
    try {
      return (int) replExportOpenH.invokeExact(region, out);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int replExportLayout(long export, long buf, long cap, long lenOut) {
    try {
      return (int) replExportLayoutH.invokeExact(export, buf, cap, lenOut);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public long replExportCovered(long export) {
    try {
      return (long) replExportCoveredH.invokeExact(export);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int replExportSegment(long export, int seg, long buf, long lenOut) {
    try {
      return (int) replExportSegmentH.invokeExact(export, seg, buf, lenOut);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public void replExportClose(long export) {
    try {
      replExportCloseH.invokeExact(export);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int replInstallBegin(long region, long layout, long len, long out) {
    try {
      return (int) replInstallBeginH.invokeExact(region, layout, len, out);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public long replInstallNeeded(long install, long segs, long cap) {
    try {
      return (long) replInstallNeededH.invokeExact(install, segs, cap);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int replInstallSegment(long install, int seg, long data, long len) {
    try {
      return (int) replInstallSegmentH.invokeExact(install, seg, data, len);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int replInstallCommit(long install) {
    try {
      return (int) replInstallCommitH.invokeExact(install);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int replSnapshot(long region, long out, long lsnOut) {
    try {
      return (int) replSnapshotH.invokeExact(region, out, lsnOut);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public int replRebase(long region, long lsn) {
    try {
      return (int) replRebaseH.invokeExact(region, lsn);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public void replInstallClose(long install) {
    try {
      replInstallCloseH.invokeExact(install);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  @Override
  public long replStats(long region, long out, long cap) {
    try {
      return (long) replStatsH.invokeExact(region, out, cap);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }
}
