/*
 * parallax.h — the public C interface of the Parallax storage engine.
 *
 * A *volume* is one file (or block device) holding many named *regions*;
 * each region is an independent ordered key-value store (an LSM tree whose
 * levels are B+-trees). Every entry point takes plain (pointer, length)
 * arguments so that the Java bridges (FFM and JNI) stay thin.
 *
 * Conventions
 *  - Functions return a par_status: PAR_OK (0), PAR_NOT_FOUND (1) for a
 *    missing key, or a negative error code. par_strerror() names a code;
 *    par_last_error() gives a message with details for the calling thread's
 *    most recent error.
 *  - The engine never keeps a pointer to caller memory after a call returns.
 *  - All functions on a volume and a region are thread-safe. A scanner and a
 *    batch belong to one thread at a time.
 *  - Handles must be closed by their owner; closing a region or volume while
 *    another thread still uses it is a caller error that the Java layer
 *    prevents (it waits for in-flight calls).
 */
#ifndef PARALLAX_PARALLAX_H
#define PARALLAX_PARALLAX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PAR_API __attribute__((visibility("default")))

/* ---- limits ------------------------------------------------------------ */

#define PAR_MAX_KEY_SIZE 1024u            /* bytes; keys are 1..1024 bytes */
#define PAR_MAX_VALUE_SIZE (64u << 20)    /* bytes; values are 0..64 MiB   */
#define PAR_MAX_INLINE_VALUE (1u << 20)   /* larger values always go to the
                                             large log, whatever the policy */
#define PAR_MAX_BATCH_SIZE (1536u * 1024) /* encoded bytes of one batch; a
                                             value over PAR_MAX_INLINE_VALUE
                                             counts as its 16-byte pointer */
#define PAR_MAX_REGION_NAME 127u          /* bytes of a region name         */
#define PAR_MAX_REGIONS 1024u             /* regions per volume             */
#define PAR_MAX_LEVELS 8                  /* device levels L1..L8           */
#define PAR_SEGMENT_SIZE (2u << 20)       /* allocation unit of a volume    */

/* ---- status codes ------------------------------------------------------ */

typedef enum par_status {
  PAR_OK = 0,
  PAR_NOT_FOUND = 1,
  PAR_EINVAL = -1,      /* a null pointer, empty key or bad option          */
  PAR_ETOOBIG = -2,     /* key, value or batch over its limit               */
  PAR_ENOSPC = -3,      /* the volume (or the file system) is full          */
  PAR_EIO = -4,         /* the operating system reported an I/O error       */
  PAR_ECORRUPT = -5,    /* a checksum or structural check failed            */
  PAR_ENOTVOLUME = -6,  /* the file is not a Parallax volume                */
  PAR_EEXIST = -7,      /* the region already exists                        */
  PAR_ENOENT = -8,      /* no such region / volume file                     */
  PAR_EBUSY = -9,       /* the region is open, or the volume locked         */
  PAR_ENOMEM = -10,     /* the engine could not allocate memory             */
  PAR_ELIMIT = -11,     /* too many regions                                 */
  PAR_EFAILED = -12     /* an earlier I/O error made the region read-only   */
} par_status;

/* A static name for a status code ("PAR_ENOSPC: ..."). */
PAR_API const char *par_strerror(int status);
/* The detailed message of the calling thread's most recent error. */
PAR_API const char *par_last_error(void);

/* ---- options ----------------------------------------------------------- */

/* Where values live (Parallax §2-3):
 *  HYBRID   small pairs in the leaves; medium pairs in the WAL and L0, then
 *           in a transient log that moves down with its level and is merged
 *           into the leaves at the merge level; large values in the large
 *           log (garbage collected);
 *  IN_PLACE every pair in the leaves (RocksDB-like);
 *  IN_LOG   every value in the large log (BlobDB-like). */
typedef enum par_placement {
  PAR_PLACEMENT_HYBRID = 0,
  PAR_PLACEMENT_IN_PLACE = 1,
  PAR_PLACEMENT_IN_LOG = 2
} par_placement;

typedef struct par_options {
  uint64_t l0_size;               /* bytes of one in-memory L0; default 64 MiB.
                                     An L0 is also full once its entries point
                                     at 16 x l0_size (at least 64 MiB) of large
                                     values, so that overwritten ones are found
                                     and collected                               */
  uint32_t growth_factor;         /* size ratio of adjacent levels; default 8    */
  uint32_t durability_interval_ms;/* async writes are durable within this; 100 */
  uint32_t compaction_threads;    /* background compaction workers; default 1    */
  uint32_t use_direct_io;         /* O_DIRECT for log/level writes; default 1
                                     (falls back when the file system refuses) */
  uint64_t max_volume_size;       /* bytes the volume file may grow to; 0 = the
                                     largest this version maps (512 GiB)       */
  uint32_t create_if_missing;     /* create the file if it does not exist (or
                                     format it if it is empty); default 1         */
  uint32_t format_existing;       /* format a file or block device that is not
                                     empty but whose first segment is all zeros
                                     (pre-sized, or a new device); default 0:
                                     refused, as it may hold someone's data      */
  uint32_t placement;             /* a par_placement; default HYBRID             */
  uint32_t small_threshold;       /* a pair (key + value bytes) is small below
                                     this; default 120                           */
  uint32_t large_threshold;       /* ... and large from this on; default 1024    */
  uint32_t gc_threshold_pct;      /* collect a large-log segment once this share
                                     of it is garbage; default 10. A region's
                                     writers wait while such segments hold more
                                     garbage that GC has not collected than an
                                     eighth of the large log, at least 64 MiB
                                     (back-pressure: the volume stays bounded
                                     when writers outrun GC)                     */
  uint32_t medium_merge_level;    /* where medium values leave the transient log
                                     for the leaves: 0 = the last level (default),
                                     1 = the last but one                        */
  uint32_t memory_budget_mib;     /* cap, in MiB, on the memory of all L0s of
                                     the volume's regions together; 0 (default):
                                     none, each region holds up to 2 x l0_size.
                                     Writers wait while it is reached, and the
                                     largest L0 is flushed (docs/architecture.md,
                                     "Memory"); par_volume_stats reports it   */
  uint32_t sort_large_values;     /* 1: with HYBRID placement, a merge into
                                     the last level copies the large values
                                     it moves there into the large log in key
                                     order, so that scans read them a few to
                                     a page; each value is written once more
                                     and read back by the merge. 0 (default):
                                     never (docs/benchmarks.md: scans gain,
                                     loads and updates lose more)             */
  uint32_t warm_mib;              /* MiB of the volume that regions read
                                     into the page cache, in the background,
                                     when they open, so that the gets after a
                                     restart do not each wait for a leaf from
                                     the device: first the pages of their
                                     trees and values that were in the page
                                     cache when the volume last closed (a
                                     clean par_close records them in the file
                                     <path>.warm, which the next par_open
                                     reads and removes), then the rest of
                                     their B+-tree nodes, upper levels first.
                                     Shared by the volume's regions in the
                                     order they open.
                                     Default PAR_WARM_AUTO: half of the memory
                                     the process can still take when the volume
                                     opens (its memory cgroup's limit less its
                                     usage, or the machine's MemAvailable);
                                     0: none                                   */
} par_options;

/* par_options.warm_mib: sized from the memory available at open. */
#define PAR_WARM_AUTO UINT32_MAX

/* Fills *opts with the defaults above. */
PAR_API void par_options_init(par_options *opts);

/* ---- volumes and regions ---------------------------------------------- */

typedef struct par_volume par_volume;
typedef struct par_region par_region;

/* Opens (or creates) the volume at path; opts may be NULL for the defaults.
 * A volume is used by one handle at a time (an advisory lock enforces it,
 * across processes and within one: PAR_EBUSY). */
PAR_API int par_open(const char *path, const par_options *opts, par_volume **out);
/* Closes open regions (par_region_close), makes every write durable. */
PAR_API int par_close(par_volume *vol);

PAR_API int par_region_create(par_volume *vol, const char *name);
/* Opens a region; PAR_ENOENT if it does not exist and create is 0. A region is
 * open at most once at a time (PAR_EBUSY). Opening replays its write-ahead log. */
PAR_API int par_region_open(par_volume *vol, const char *name, int create, par_region **out);
/* Makes every write durable and closes the region. A spill of a level into
 * the next one that is running and not yet half done stops and is given up
 * (the next open runs it again), so a close does not wait for the whole
 * rewrite of a large level; a flush of L0 it waits for. */
PAR_API int par_region_close(par_region *region);
/* Drops a closed region and frees its space. */
PAR_API int par_region_drop(par_volume *vol, const char *name);
/* Calls fn once per region, in creation order. */
PAR_API int par_region_list(par_volume *vol, void (*fn)(const char *name, void *arg), void *arg);

/* ---- writes ------------------------------------------------------------ */

/* Write flag: return only once the write is durable (fdatasync). Without it
 * a write is durable within durability_interval_ms or when a 256 KiB log
 * chunk fills; after a crash the region holds every synced write and a
 * prefix, in log order, of the others. */
#define PAR_SYNC 1u
/* Write flag: do not log the write in the WAL (for hosts that keep their own
 * log: Kafka Streams changelogs, Flink checkpoints). The write is visible at
 * once and ordered with logged writes as usual, but it becomes durable only
 * when its L0 is flushed: by par_flush or par_compact, by an L0 that filled
 * up and was compacted, or by par_region_close / par_close (which flush an
 * L0 holding unlogged writes). After a crash the region holds every
 * unlogged write made before the last completed flush, none or some of
 * the later ones (those an automatic flush covered), and, independently,
 * every logged write as described above: a logged write made after a lost
 * unlogged one is still recovered. Excludes PAR_SYNC (PAR_EINVAL). */
#define PAR_NO_WAL 2u

PAR_API int par_put(par_region *r, const void *key, size_t key_len, const void *value,
            size_t value_len, unsigned flags);
PAR_API int par_delete(par_region *r, const void *key, size_t key_len, unsigned flags);

/* Deletes every key k with begin <= k < end (byte order: memcmp, a shorter
 * key first on a common prefix) with one write of a range tombstone, whatever
 * the number of keys: it takes one LSN and one WAL op, is recovered after a
 * crash like a delete (flags as for par_put), and is honoured by par_get,
 * par_exists, par_multi_get, scanners in both directions and snapshots: a
 * snapshot made before it still sees the keys, and keys written after it are
 * visible. Merges drop the entries it covers (large values they pointed to
 * become garbage that GC reclaims) and drop the tombstone itself at the last
 * level; until then each live tombstone costs reads a binary search per
 * level that holds tombstones (docs/architecture.md, "Range deletes").
 * begin and end are keys (1..PAR_MAX_KEY_SIZE bytes, else PAR_EINVAL or
 * PAR_ETOOBIG); begin == end deletes nothing, begin > end is PAR_EINVAL.
 * A region keeps at most PAR_MAX_RANGE_TOMBSTONE_BYTES of live range
 * tombstones (4 bytes plus both bounds each; adjacent and overlapping ones
 * merge once flushed): beyond it the call fails with PAR_ELIMIT until
 * par_compact has taken them to the last level. A volume this engine has
 * opened has format 6 (range tombstones came with format 4): older engines
 * refuse it (PAR_ENOTVOLUME). */
#define PAR_MAX_RANGE_TOMBSTONE_BYTES (256u * 1024)
PAR_API int par_delete_range(par_region *r, const void *begin, size_t begin_len, const void *end,
                             size_t end_len, unsigned flags);

/* A batch of puts and deletes applied atomically, in order. */
typedef struct par_batch par_batch;
PAR_API int par_batch_create(par_batch **out);
PAR_API int par_batch_put(par_batch *b, const void *key, size_t key_len, const void *value,
                  size_t value_len);
PAR_API int par_batch_delete(par_batch *b, const void *key, size_t key_len);
/* Adds par_delete_range's range tombstone to the batch (same checks). */
PAR_API int par_batch_delete_range(par_batch *b, const void *begin, size_t begin_len, const void *end,
                                   size_t end_len);
PAR_API void par_batch_clear(par_batch *b);
PAR_API size_t par_batch_count(const par_batch *b);
PAR_API void par_batch_destroy(par_batch *b);
/* Applies b to r. PAR_EINVAL if b holds ops added for another region. */
PAR_API int par_write(par_region *r, const par_batch *b, unsigned flags);

/* Batches across the regions of one volume. par_batch_put_in,
 * par_batch_delete_in and par_batch_delete_range_in add an op for region r (an open region of the
 * volume; it must stay open until the batch is written or cleared).
 * par_write_volume applies such a batch all-or-nothing, in order within
 * each region: readers of a snapshot made by par_snapshot_create_many see
 * all of it or none of it, and after a crash every region has its part or
 * none has. It is durable when the call returns (as with PAR_SYNC; the
 * flag is implied). PAR_EINVAL for an op without a region or with a
 * region that is closed or of another volume, and for PAR_NO_WAL. A batch
 * naming one region is written as par_write would write it.
 * Cost: each region's part is synced, then a commit record is written to
 * the volume's catalog and synced (two rounds of fdatasync); batches
 * across regions commit one at a time per volume, and writers of the
 * regions involved wait meanwhile (docs/architecture.md). */
PAR_API int par_batch_put_in(par_batch *b, par_region *r, const void *key, size_t key_len,
                             const void *value, size_t value_len);
PAR_API int par_batch_delete_in(par_batch *b, par_region *r, const void *key, size_t key_len);
PAR_API int par_batch_delete_range_in(par_batch *b, par_region *r, const void *begin, size_t begin_len,
                                      const void *end, size_t end_len);
PAR_API int par_write_volume(par_volume *vol, const par_batch *b, unsigned flags);

/* Makes every write acknowledged so far durable. */
PAR_API int par_sync(par_region *r);

/* ---- reads ------------------------------------------------------------- */

/* A consistent read view of a region; reads through it ignore later writes. */
typedef struct par_snapshot par_snapshot;
PAR_API int par_snapshot_create(par_region *r, par_snapshot **out);
PAR_API void par_snapshot_release(par_snapshot *s);
/* Snapshots of n regions of one volume at one consistent point: no
 * par_write_volume batch is half in them. out[i] is regions[i]'s snapshot,
 * released with par_snapshot_release. On error no snapshot is left. */
PAR_API int par_snapshot_create_many(size_t n, par_region *const *regions, par_snapshot **out);

/* Looks a key up (in snap, or the latest state when snap is NULL). On PAR_OK
 * *value_len is the value's full length and min(*value_len, cap) bytes were
 * copied to buf; call again with a larger buffer when *value_len > cap.
 * Returns PAR_NOT_FOUND when the key is absent or deleted. */
PAR_API int par_get(par_region *r, const par_snapshot *snap, const void *key, size_t key_len,
            void *buf, size_t cap, size_t *value_len);
/* Zero-copy lookup in a snapshot: *value points at the value itself (in L0,
 * a level or a log, through the memory map) and stays valid, unchanged,
 * until the snapshot is released. PAR_OK or PAR_NOT_FOUND. */
PAR_API int par_snapshot_get_view(par_snapshot *snap, const void *key, size_t key_len,
                                  const void **value, size_t *value_len);
/* Zero-copy lookups of n keys in a snapshot, in one call: for each i,
 * statuses[i] is PAR_OK (values[i] and value_lens[i] give the value, valid
 * as par_snapshot_get_view's until the snapshot is released), PAR_NOT_FOUND
 * (values[i] NULL), or the error of that key (a bad key, a damaged node).
 * Keys come in any order and may repeat; the engine sorts them and visits
 * each level once, in key order, overlapping the cache misses of different
 * keys' leaves: on device levels 1.2-1.6x cheaper per key than par_get for
 * batches of 10 to 1000 keys (docs/benchmarks.md); about the same when the
 * keys are in L0. Returns PAR_OK once every key has its status, or
 * PAR_EINVAL / PAR_ENOMEM for the call. */
PAR_API int par_multi_get(par_snapshot *snap, size_t n, const void *const *keys,
                          const size_t *key_lens, const void **values, size_t *value_lens,
                          int *statuses);
/* PAR_OK or PAR_NOT_FOUND. */
PAR_API int par_exists(par_region *r, const par_snapshot *snap, const void *key, size_t key_len);

/* Scanner over a snapshot (snap, or one taken at creation): the region's
 * keys in order, forward and backward, the newest version of each at the
 * snapshot (deleted keys are skipped), merged over L0 and every device
 * level. Writers and compactions go on meanwhile; the scanner does not see
 * them. A new scanner is on no entry: seek first. */
typedef struct par_scanner par_scanner;
typedef enum par_seek_mode {
  PAR_SEEK_FIRST = 0, /* the smallest key (key is ignored)   */
  PAR_SEEK_GE = 1,    /* the first key >= key                */
  PAR_SEEK_GT = 2,    /* the first key >  key                */
  PAR_SEEK_LAST = 3,  /* the largest key (key is ignored)    */
  PAR_SEEK_LE = 4,    /* the last key <= key (seekForPrev)   */
  PAR_SEEK_LT = 5     /* the last key <  key                 */
} par_seek_mode;

PAR_API int par_scanner_open(par_region *r, const par_snapshot *snap, par_scanner **out);
/* Positions the scanner; it is on no entry (par_scanner_valid is 0) when
 * no key matches. A seek also restarts a scanner stopped by an error. */
PAR_API int par_scanner_seek(par_scanner *s, const void *key, size_t key_len, par_seek_mode mode);
/* Says that the caller reads about entries entries (and their values)
 * after each seek; 0, the default, says nothing. Only a hint: the scanner
 * goes as far as it is moved. When the region's data is not in memory, a
 * seek then asks the device for all their reads at once (the leaves they
 * lie in, the log records of their values), so the scan waits for it about
 * twice instead of once every few entries; with the data in memory it
 * changes nothing. Values over 1024 count as 1024. */
PAR_API int par_scanner_set_readahead(par_scanner *s, uint32_t entries);
/* 1 while the scanner is on an entry. */
PAR_API int par_scanner_valid(const par_scanner *s);
/* The current entry. The memory stays valid, unchanged, until the scanner
 * moves or closes. par_scanner_key is cheap; par_scanner_value reads the
 * value only when asked (a medium or large value from its log, checking
 * its checksum), so a scan that reads only keys never touches the logs. */
PAR_API int par_scanner_key(const par_scanner *s, const void **key, size_t *key_len);
PAR_API int par_scanner_value(par_scanner *s, const void **value, size_t *value_len);
/* The next (larger) and previous (smaller) key. They may alternate freely:
 * after next, prev returns to the entry before (and vice versa), as in
 * RocksDB's iterator. Past either end the scanner is on no entry, and only
 * a seek puts it back; next and prev then do nothing. An error (a damaged
 * node or log record) also leaves it on no entry. */
PAR_API int par_scanner_next(par_scanner *s);
PAR_API int par_scanner_prev(par_scanner *s);
PAR_API void par_scanner_close(par_scanner *s);

/* ---- maintenance and counters ----------------------------------------- */

/* Freezes L0 and waits until it and every compaction it triggers is done. */
PAR_API int par_flush(par_region *r);
/* par_flush, then merges every level into the last one (so medium values
 * reach the leaves and the transient log is freed) and waits. */
PAR_API int par_compact(par_region *r);

typedef struct par_level_stats {
  uint64_t live_bytes;      /* bytes of the level's B+-tree (nodes on disk)  */
  uint64_t entries;         /* key-value entries (tombstones included)       */
  uint64_t segments;        /* segments the level owns                       */
  uint64_t compaction_bytes_read;    /* read from this level by compactions  */
  uint64_t compaction_bytes_written; /* written into this level              */
  uint32_t height;          /* B+-tree height (0 when the level is empty)    */
  uint32_t reserved;
} par_level_stats;

typedef struct par_stats {
  uint64_t puts, deletes, gets, scans;
  uint64_t user_bytes_written;   /* key + value bytes of puts and deletes     */
  uint64_t wal_bytes_appended;   /* record bytes appended to the WAL (before
                                    block padding)                            */
  uint64_t wal_syncs;            /* fdatasync calls on the WAL               */
  uint64_t wal_segments;         /* segments the WAL holds now               */
  uint64_t l0_bytes;             /* memory of the active L0                  */
  uint64_t l0_entries;
  uint64_t compactions;          /* completed compactions (L0->L1 included)  */
  uint64_t write_stalls;         /* writes that waited for a full L0, or for
                                     GC (gc_threshold_pct)                     */
  uint64_t last_lsn;             /* newest log sequence number               */
  uint32_t levels;               /* deepest non-empty device level           */
  uint32_t reserved;
  par_level_stats level[PAR_MAX_LEVELS + 1]; /* [1..PAR_MAX_LEVELS]; [0] unused */
  /* hybrid placement, by the class of each put */
  uint64_t small_puts, medium_puts, large_puts;
  uint64_t small_bytes, medium_bytes, large_bytes; /* key + value bytes */
  uint64_t large_log_bytes_appended; /* record bytes, user writes and GC   */
  uint64_t large_log_segments;       /* segments the large log holds now   */
  uint64_t large_log_garbage_bytes;  /* bytes known dead, awaiting GC      */
  uint64_t gc_runs;                  /* segments collected                 */
  uint64_t gc_bytes_scanned;         /* record bytes read by GC            */
  uint64_t gc_bytes_relocated;       /* live record bytes GC re-appended   */
  uint64_t gc_segments_freed;
  uint64_t medium_log_segments;      /* transient medium-log segments now  */
  uint64_t medium_log_bytes_written; /* by flushes since the region opened */
  /* Leaf bytes compactions wrote into each level ([1..PAR_MAX_LEVELS]), by
   * the class of the pair: small (tombstones too), medium (in place or as
   * a key prefix and pointer), large. Medium values themselves are counted
   * in medium_log_bytes_written, large ones in large_log_bytes_appended. */
  uint64_t level_small_bytes[PAR_MAX_LEVELS + 1];
  uint64_t level_medium_bytes[PAR_MAX_LEVELS + 1];
  uint64_t level_large_bytes[PAR_MAX_LEVELS + 1];
  /* Values read out of a log for gets and scanners (not compactions): a
   * scanner reads one only when par_scanner_value asks for it. */
  uint64_t medium_log_value_reads;   /* from the transient medium log      */
  uint64_t large_log_value_reads;    /* from the large log (tail buffer or
                                        device)                            */
  /* Entries in both L0s and every level (RocksDB's estimate-num-keys): a
   * key overwritten or deleted since its last merge counts once per
   * version and tombstone, so this is the number of live keys after
   * par_compact, and an upper bound on it otherwise. */
  uint64_t estimated_keys;
  /* Bytes the merges already due would read: a frozen L0 and the L1 it
   * merges into, each level over its capacity (or spilling) and the level
   * below, and the spills these would in turn cause (RocksDB's
   * estimate-pending-compaction-bytes). They write about as much. 0 when
   * compaction has caught up; par_compact's forced merges are not counted. */
  uint64_t pending_compaction_bytes;
  /* Large-log record bytes merges copied into the last level in key order
   * (par_options.sort_large_values), since the region opened. */
  uint64_t large_log_bytes_sorted;
  /* Bytes of the levels' nodes the warm-up after the open read
   * (par_options.warm_mib). */
  uint64_t warm_bytes_read;
} par_stats;

PAR_API int par_region_stats(par_region *r, par_stats *out);

/* Approximate size of a key range of a region, for a host's split
 * decisions and metrics (RocksDB's GetApproximateSizes). */
typedef struct par_range_estimate {
  uint64_t entries; /* versions with a key in the range, tombstones included,
                       in both L0s and every level                          */
  uint64_t bytes;   /* what they take: L0 memory and the levels' B+-tree
                       nodes (small and inline values included; medium and
                       large values, in their logs, are not)               */
} par_range_estimate;

/* Estimates the entries and bytes with a key in [begin, end) without
 * reading the range: every L0 and level tree is descended to each bound (a
 * few nodes, usually cached), and the range's share of a level's tree is
 * taken from where the bounds' leaves lie among its bytes (leaves are
 * written in key order), L0's from the child each descent takes
 * (docs/architecture.md, "Estimates"). begin NULL (begin_len 0) means from the first key, end
 * NULL (end_len 0) past the last one. Exact for an empty range (begin ==
 * end, or no key in it) and for a range covering every key; on a region
 * loaded with uniformly spread keys within ±25% for ranges of a few
 * percent of the keys or more (tests/test_estimate.c checks it against
 * scans, and sees under 2%); where pair sizes differ across the key space
 * the error grows (a range of large inline pairs counts as more entries).
 * Costs a few microseconds: fine per split decision, not per request.
 * PAR_EINVAL for a NULL region or out, a non-NULL bound of 0 bytes, a
 * NULL bound with a length, or begin > end; PAR_ETOOBIG for a bound over
 * PAR_MAX_KEY_SIZE; PAR_ECORRUPT for a damaged node. */
PAR_API int par_estimate_range(par_region *r, const void *begin, size_t begin_len, const void *end,
                               size_t end_len, par_range_estimate *out);

typedef struct par_volume_stats {
  uint64_t volume_bytes;     /* size of the volume file                       */
  uint64_t segments_total;
  uint64_t segments_used;
  uint64_t metadata_bytes;   /* bytes of the redo log since its checkpoint    */
  /* The memory budget (par_options.memory_budget_mib) and the engine's own
   * count against it: bytes of every L0 of the open regions (active and
   * frozen, nodes and entries; a flushed L0 still held by a reader is not
   * counted), now and at most since the volume opened. Counted also when
   * no budget is set. */
  uint64_t memory_budget;    /* bytes; 0: none                                */
  uint64_t memory_used;
  uint64_t memory_peak;
  /* Free segments whose blocks the volume gave back to the file system
   * (holes): the file occupies volume_bytes less these on the device.
   * Free segments beyond a reserve are released after merges, GC and
   * region drops: while the volume is open the reserve is what recent
   * merges needed, at rest (after open, at close) a 64th of the segments
   * in use, at least 4 (8 MiB). */
  uint64_t segments_released;
} par_volume_stats;

PAR_API int par_volume_stats_get(par_volume *vol, par_volume_stats *out);

/* ---- checkpoints ------------------------------------------------------- */

/* What a checkpoint did. bytes_copied is what it wrote into the target
 * (segments that differed, the catalog, the superblocks): what an
 * incremental checkpoint saves. */
typedef struct par_checkpoint_stats {
  uint64_t segments;        /* 2 MiB segments the checkpoint holds          */
  uint64_t segments_copied; /* of those, written because the target differed */
  uint64_t bytes_copied;    /* bytes written into the target                 */
  uint64_t bytes_read;      /* bytes read: the source's segments and the
                               target's, to compare them                    */
} par_checkpoint_stats;

/* Writes a consistent copy of the volume, or of the regions named in
 * regions[0..nregions) (NULL, 0: all of them), into the file at path while
 * writes go on. The copy opens with par_open as a volume holding those
 * regions as a crash at the checkpoint's consistency point would have left
 * them: every write acknowledged before the call (and those of other
 * threads up to the point, which comes early in the call) is in it, no
 * later one is, and a par_write_volume batch is in it wholly or not at
 * all, across regions. The exception are PAR_NO_WAL writes no flush had
 * covered yet, which live only in L0 (par_flush the region first to keep
 * them). The point costs one sync of each open region's WAL; the copy
 * then reads each segment in use once (direct reads), while segments
 * that compactions or GC free meanwhile are kept until it ends.
 * Incremental: into a target holding an earlier checkpoint of the volume,
 * only segments whose content differs are written (typically the levels
 * merged since, the logs' newest segments); the target's own segments are
 * read to compare. The target is synced, then its catalog and superblock
 * are written last: a crash or error while a checkpoint runs leaves the
 * source untouched and a target that par_open refuses (PAR_ENOTVOLUME,
 * "an incomplete checkpoint") until a checkpoint into it completes. The
 * target's segments sit where the source's do, so the file is as long as
 * the source's used range. One checkpoint runs at a time per volume; region
 * opens and closes wait for its first step. stats may be NULL.
 * PAR_EINVAL for NULL arguments, a target that is the volume itself or a
 * file that is neither empty, nor a Parallax volume, nor an incomplete
 * checkpoint (nothing is written to it); PAR_ENOENT for an unknown region
 * name; PAR_EBUSY when the target is open as a volume; an I/O status when
 * the target cannot be created or written. */
PAR_API int par_checkpoint(par_volume *vol, const char *path, const char *const *regions, size_t nregions,
                           par_checkpoint_stats *stats);

/* The sizes and offsets of this header's structs and its limits, in a fixed
 * order (src/api/abi.c lists it), for bindings that encode the structs
 * themselves (Java's FFM backend) to check at load that this library was
 * built from the header they were. Writes min(cap, count) values to out and
 * returns the count. */
PAR_API size_t par_abi_layout(int64_t *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
