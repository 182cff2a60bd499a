/* The engine's runtime objects: volume, region, view, snapshot.
 *
 * Threads: callers; one WAL writer per open region; the volume's compaction
 * workers.
 *
 * Locks, in the order they may nest:
 *   vol->ckpt_mu, vol->region_lock   a checkpoint (api/checkpoint.c)
 *   vol->txn_mu       a cross-region batch, or a snapshot of several regions
 *   region->write_mu  orders writers: LSN, WAL append, L0 insert (several
 *                     at once only under txn_mu, in region id order)
 *   wal->mu           the WAL tail buffers
 *   vol->meta_mu      the catalog and the redo log
 *   segalloc->mu      the free-segment bitmap
 *   vol->workers.mu   the compaction queue (before view_mu, never inside it)
 *   region->view_mu   the current view and the compaction bookkeeping;
 *                     write_mu -> view_mu -> meta_mu
 *   region->cur_mu    the r->view pointer alone, for readers and writers'
 *                     fast path: held only to read or swap it, never
 *                     across I/O (a merge's commit holds view_mu across its
 *                     redo fdatasync, which gets, scans and puts must not
 *                     wait for); view_mu -> cur_mu
 * memtable->lock (rwlock) is a leaf lock inside any of them. */
#ifndef PAR_API_INTERNAL_H
#define PAR_API_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "alloc/segalloc.h"
#include "api/region.h"
#include "api/view.h"
#include "compaction/compaction.h"
#include "gc/gc.h"
#include "index/memtable.h"
#include "index/tree.h"
#include "io/file.h"
#include "log/vlog.h"
#include "log/wal.h"
#include "meta/redolog.h"
#include "parallax/parallax.h"

/* Bounds of how long a writer spins for a taken write_mu (write.c). */
#define WRITE_SPIN_MIN_NS 2000u
#define WRITE_SPIN_MAX_NS 100000u

struct par_region {
  par_volume *vol;
  uint32_t id;
  key_source keys;                   /* resolves key prefixes in this region's trees */
  char name[PAR_MAX_REGION_NAME + 1];

  pthread_mutex_t write_mu;
  atomic_uint write_spinners;        /* writers spinning for write_mu (write.c) */
  atomic_int write_held;             /* a writer holds write_mu: a hint spinners poll */
  atomic_uint write_spin_ns;         /* how long the next spinner spins, within
                                        WRITE_SPIN_{MIN,MAX}_NS (write.c) */
  pthread_mutex_t cur_mu;            /* r->view: swapped under view_mu and cur_mu */
  uint64_t next_lsn;                 /* under write_mu */
  /* next_lsn when the region opened. A region that took an LSN of its own
   * since (a write, a GC relocation, both possible while it is a primary,
   * as every region opens) cannot become a backup: the records shipped to
   * it at those LSNs would be taken for ones it holds and skipped. */
  uint64_t open_lsn;
  int write_failed;                  /* under write_mu: a logged write missed L0;
                                        writes refused until a reopen replays it */
  atomic_uint_fast64_t last_lsn;     /* newest LSN inserted into L0 */
  atomic_uint_fast64_t unlogged_lsn; /* newest LSN written with PAR_NO_WAL (0: none) */
  atomic_uint next_inc;              /* the last large-log incarnation taken (region.c) */
  atomic_uint inc_reserved;          /* the catalog's reservation: takes stay within it */
  pthread_mutex_t inc_mu;            /* one reservation at a time */
  wal wal;
  atomic_int logging;                /* wal started (not during replay) */
  vlog hot;                          /* large log: user writes          */
  vlog cold;                         /* large log: values GC relocates  */
  uint64_t large_synced;             /* vlog_written of both at the WAL writer's last sync */

  /* One merge commit at a time, taken before view_mu: a commit builds its
   * layout from the view the previous one published, and syncs it with
   * view_mu released (compaction.c). */
  pthread_mutex_t commit_mu;
  pthread_mutex_t view_mu;
  pthread_cond_t view_cv;            /* a view change or a finished compaction */
  view *view;
  pthread_mutex_t live_mu;           /* leaf lock: the live-view registry */
  view *live_head, *live_tail;
  uint64_t view_seq;
  compaction_state comp;             /* compaction's own (compaction/compaction.h) */
  int closing;                       /* set under view_mu; merges poll it (compaction.c) */
  int failed;                        /* a compaction error stopped compactions (view_mu) */
  /* Large-log GC's state (gc/gc.h), GC's own; and the send-index exports
   * are counted there (they hold GC's drops back). */
  gc_state gc;
  /* The first LSN a log cursor may read (repl/log.c): a record before it
   * may point into a large-log segment that was let go and taken again —
   * one GC dropped (raised past the newest LSN of its records, which the
   * levels cover by then: gc.c log_floor), a mirror segment an install let
   * go (past the install's covered LSN), or either in an earlier session
   * (set past the levels at open). A live cursor is always past it: its
   * pin holds drops back. */
  atomic_uint_fast64_t log_readable_from;

  struct {
    atomic_uint_fast64_t puts, deletes, gets, scans, user_bytes, stalls;
    atomic_uint_fast64_t class_puts[3], class_bytes[3]; /* small, medium, large */
    atomic_uint_fast64_t log_value_reads[2]; /* by user reads: [0] medium, [1] large */
    atomic_uint_fast64_t warm_bytes;   /* read by the warm-up (api/warm.c) */
  } stats;
  /* Until when reads read as for data that is not in memory: one of them
   * waited on the device shortly before (region_note_read). */
  atomic_uint_fast64_t reads_waited_until;
  par_region *next_open;             /* vol->open list, under vol->meta_mu */
  /* A worker is to freeze this region's L0 (asked by the memory budget,
   * api/budget.c, or by an open that replayed many short sessions,
   * api/region.c); pins held by writers that asked it, which close waits for. */
  atomic_int freeze_wanted;
  atomic_int budget_pins;
  /* The warm-up after the open (api/warm.c): the segments of the trees it
   * reads, of the values whose recorded pages it reads (only with a
   * residency record), and its thread while warm_running. */
  seg_list warm_segs;
  seg_list warm_vsegs;
  pthread_t warm_thread;
  int warm_running;

  /* Replication (src/repl). role is a par_repl_role, changed under write_mu
   * and view_mu. A send-index backup appends shipped records to its WAL only
   * (next_lsn runs ahead of last_lsn, the newest LSN in L0) and never
   * compacts; its levels are installed from the primary, and repl_tree_id
   * names the primary's tree each of them copies (0: none). */
  int repl_role;
  /* par_repl_apply runs one call at a time: its mirror writes and the
   * records it logs follow the log copy's end in order (repl/mirror.c). */
  pthread_mutex_t repl_apply_mu;
  uint32_t repl_tree_id[PAR_MAX_LEVELS + 1][LEVEL_TREES];
  /* A send-index backup's large log mirrors the primary's (src/repl/mirror.c,
   * src/repl/install.c): each primary segment (pseg, inc) kept in bseg, which
   * keeps the primary's incarnation (incarnations are unique in a region's
   * history, so inc alone names the segment; pseg is 0 after a reopen until
   * an install names it). [0, used) holds the primary's records at their
   * offsets, every one (a record the apply could not place there went to
   * the log copy whole). whole: apply wrote every record of the segment
   * since its first (so the mirror holds every record up to the log copy's
   * end, and an install copies nothing); tail: the block holding used, as
   * the mirror has it (NULL: read it when needed). open: the primary's head
   * when last installed (or made by apply); garbage: the primary's count;
   * dropped: the primary dropped it, kept while the log copy lacks
   * relocations out of it. Under view_mu, in memory (rebuilt from the
   * catalog's large log, each to be copied again, when a reopened region
   * becomes a send-index backup). needs_lsn: a leaf of
   * the installed levels points into a primary segment the backup never
   * had, whose value a relocation up to this LSN moved: the copy is
   * promoted only once its log holds that LSN. nsegs: 1, or the length of
   * the run a value too large for a segment takes (bseg its first segment;
   * it holds that one record, whole, and never grows). */
  struct repl_mirror {
    uint32_t pseg, inc, bseg, used, nsegs;
    uint64_t garbage;
    uint8_t open, dropped, whole;
    uint8_t *tail;
  } *repl_mirror;
  uint32_t nrepl_mirror;
  /* The primary's medium-log segments a send-index backup's levels hold a
   * copy of: segment pseg of the primary's set puid, copied into bseg, the
   * only segment of the backup's set buid. An entry counts only while a
   * tree of the current view holds that set (repl/install.c checks), so the
   * next install shares the copy instead of making another. Under view_mu,
   * in memory only. */
  struct repl_medium {
    uint32_t pseg, bseg;
    uint64_t puid, buid;
  } *repl_medium;
  uint32_t nrepl_medium;
  uint64_t repl_needs_lsn;
  /* The primary's large-log segments (by incarnation) installs in progress
   * are copying into new mirror segments, a multiset under view_mu: apply
   * starts no mirror of its own for them. A run (nsegs > 1) is the
   * exception: its record arrives whole, so apply writes it into the run
   * the install reserved (from bseg) and makes that the mirror's. */
  struct repl_copying {
    uint32_t inc, bseg, nsegs;
  } *repl_copying;
  uint32_t nrepl_copying;
  /* The records apply put in one mirror segment, the run (repl/mirror.c):
   * entry k of repl_mirror (-1: none) and its segment bseg; repl_run_buf
   * holds [base, end) of it and the file [base, written). Under
   * repl_run_mu, which comes after view_mu; k and end change under both.
   * mirror_written counts the bytes written to the file: the WAL writer
   * syncs them before it writes the pointers to them (flush_large_logs). */
  pthread_mutex_t repl_run_mu;
  struct {
    int k;
    uint32_t bseg, base, end, written;
  } repl_run;
  uint8_t *repl_run_buf;
  atomic_uint_fast64_t repl_mirror_written;
  struct {
    atomic_uint_fast64_t applied, skipped, trees, segments, mirror_bytes, medium_segments, segment_bytes;
  } repl_stats;
  /* The live log cursors (src/repl/log.c), a list under vol->meta_mu: the
   * WAL segments they still need outlive the compaction that covers them
   * (region_wal_trimmable). */
  struct par_repl_cursor *repl_cursors;
};

struct par_volume {
  par_file file;
  segalloc alloc;
  par_options opts;
  mem_budget budget;                 /* the bytes of every region's L0s */

  pthread_mutex_t meta_mu;
  redolog log;
  catalog cat;
  par_region *open;                  /* open regions */
  pthread_mutex_t txn_mu;            /* one cross-region batch at a time (api/txn.c);
                                        taken before any region's write_mu */
  /* Checkpoints (api/checkpoint.c): ckpt_mu lets one run at a time.
   * par_region_open and par_region_close hold region_lock shared; a
   * checkpoint holds it exclusively while it fixes its consistency point
   * and syncs the WALs to it, so that every region on the open list then is
   * wholly open and none is freed under it. Taken before txn_mu. */
  pthread_mutex_t ckpt_mu;
  pthread_rwlock_t region_lock;

  /* What the regions' warm-ups may still read (api/warm.c), set at open. */
  atomic_uint_fast64_t warm_left;
  /* The residency record (api/resident.c): its file (NULL: none is kept),
   * and the pages the one this open read names, a bit each (NULL: none). */
  char *resident_path;
  uint64_t *resident_bits;
  uint64_t resident_pages;

  compaction_workers workers;        /* compaction/compaction.h */
};

struct par_snapshot {
  par_region *region;
  view *v;
  uint64_t lsn;
  /* Copies made by par_snapshot_get_view of values that were still in a
   * large-log tail buffer; they live as long as the snapshot. */
  pthread_mutex_t copies_mu;
  uint8_t **copies;
  uint32_t ncopies;
};

/* region_read_large for a user's read (get, scanner), counted in
 * log_value_reads; compactions call region_read_large directly. */
int region_read_value(par_region *r, const tree_entry *e, const uint8_t **value, uint32_t *value_len,
                      uint8_t **owned);
/* region_read_value with pread (through the page cache, not the map) into a
 * copy in *owned, whose value part *value points at. */
int region_read_value_copy(par_region *r, const tree_entry *e, const uint8_t **value, uint32_t *value_len,
                           uint8_t **owned);
/* The value of e (found in s's view), through the map or, for a large value
 * still in a tail buffer, as a copy that lives as long as the snapshot. */
int snapshot_value(par_snapshot *s, const tree_entry *e, const uint8_t **value, uint32_t *value_len);
/* write.c and batch.c */
/* PAR_OK, or the status (with a message) of a key outside 1..PAR_MAX_KEY_SIZE. */
int region_check_key(const void *key, size_t key_len);
/* ... of a value over PAR_MAX_VALUE_SIZE, or NULL with a length. */
int region_check_value(const void *value, size_t value_len);
/* Logs and applies ops as one atomic WAL record, waiting while L0 is full;
 * with PAR_SYNC, returns once the record is durable. */
int region_apply(par_region *r, const wal_op *ops, uint32_t n, unsigned flags);
/* region_apply whose first LSN must be lsn (a backup keeps its primary's
 * LSNs): PAR_EINVAL, nothing applied, when the region's next LSN differs. */
int region_apply_at(par_region *r, const wal_op *ops, uint32_t n, unsigned flags, uint64_t lsn);
/* PAR_OK, or the status of a range to delete whose bounds are not keys or
 * that begins after its end. */
int region_check_range(const void *begin, size_t begin_len, const void *end, size_t end_len);
/* PAR_ELIMIT when ops' range tombstones would take the region's over
 * PAR_MAX_RANGE_TOMBSTONE_BYTES (write_mu held). */
int region_check_range_room(par_region *r, const wal_op *ops, uint32_t n);
/* PAR_OK, or PAR_EINVAL for unknown or contradictory write flags. */
int region_check_flags(unsigned flags);
/* PAR_OK when the region takes a caller's write (write_mu held): PAR_EINVAL
 * on a send-index backup, whose LSNs are its primary's and whose L0 takes
 * its log copy only, at promotion (src/repl). */
int region_check_writer(par_region *r);
/* region_apply's step under write_mu: large values, the WAL record (mode
 * PAR_NO_WAL: none; WRITE_PART: a cross-region batch's part, not inserted
 * into L0) and the L0 insert, at LSNs lsn .. lsn + n - 1. With logged_out
 * (n ops) and ptrs_out (n x VPTR_SIZE bytes), or NULL, NULL: the ops as
 * logged (large values replaced by their pointers) are left there. */
#define WRITE_PART 0x100u
int region_log_and_insert(par_region *r, memtable *m, uint64_t lsn, const wal_op *ops, uint32_t n,
                          unsigned mode, wal_op *logged_out, uint8_t *ptrs_out);
/* Freezes the active L0 and installs a fresh one (write_mu and view_mu
 * held, no frozen L0). */
int region_freeze(par_region *r);
/* Size classes of a pair (key + value bytes), by the options' thresholds. */
enum { CLASS_SMALL, CLASS_MEDIUM, CLASS_LARGE };

/* batch.c: the batch's n = par_batch_count(b) ops with their key and value
 * pointers resolved (malloc'd, the caller frees it; NULL: PAR_ENOMEM), and
 * in *regions each op's region or NULL. */
wal_op *batch_resolve(const par_batch *b, par_region *const **regions);

/* A send-index backup's large-log mirror (src/repl/mirror.c): writes what
 * apply put in it and did not write yet (the WAL writer, before it writes
 * the pointers to it); frees its state at the region's close. */
int repl_mirror_write_pending(par_region *r);
void repl_mirror_free(par_region *r);

/* txn.c: whether replay applies the cross-region part [first, last]. */
int txn_part_committed(const region_desc *d, uint64_t first, uint64_t last);

/* large_heads.c: at a clean close, once the WAL stopped, closes the heads
 * the logs left and parks their current heads in the catalog; at an open,
 * after the crash count, makes the parked heads the logs' heads again. */
int large_heads_park(par_region *r);
int large_heads_resume(par_region *r);

/* recovery.c: builds the view from d and replays the WAL into L0; *last is
 * the newest LSN recovered. What the crash lost and only a count at the
 * open can find is added to lost (gc/gc.h). */
int region_recover(par_region *r, const region_desc *d, uint64_t *last, crash_losses *lost);

/* How many large-log incarnations a reservation adds (region.c); tests
 * lower it, so that their sessions extend it, in listings and in takes. */
extern uint32_t inc_reservation;

/* Reads that wait on the device (docs/architecture.md, Read path): a read
 * that began at t0 (clock_mono_ns) and took longer than read_wait_ns marks
 * the region for READS_WAITED_NS; region_reads_wait says whether it is
 * marked. Tests set read_wait_ns to 0 (every read waits) or UINT64_MAX
 * (none does). */
#define READS_WAITED_NS (5ull * 1000000000u)
extern uint64_t read_wait_ns;
void region_note_read(par_region *r, uint64_t t0);
int region_reads_wait(par_region *r);
/* Whether L0 m is full (write.c): l0_size bytes of memory, or its entries
 * point at L0_LARGE_FACTOR x l0_size (at least L0_LARGE_MIN) bytes of the
 * large log. */
#define L0_LARGE_FACTOR 16u
#define L0_LARGE_MIN (64ull << 20)
int l0_full(const par_region *r, memtable *m);
/* The L0 to insert into (write_mu held), freezing a full one; NULL with
 * PAR_EBUSY when the previous frozen L0 is still being compacted: the
 * caller then drops write_mu and waits in region_wait_room. */
memtable *region_make_room(par_region *r, int *rc);
int region_wait_room(par_region *r);

/* Warm-up after an open (api/warm.c). The volume's budget in bytes, from
 * its options; the warm-up of a region that just opened (nothing when the
 * budget is spent or the levels are empty); and the wait for it to end,
 * which close makes after setting closing (the warm-up then stops at the
 * next run of pages), and tests make to see what it read. */
uint64_t warm_budget(const par_options *o);
void region_warm_start(par_region *r);
void region_warm_join(par_region *r);
/* The residency record (api/resident.c), advisory throughout: resident_init
 * names its file after the volume's path; resident_load reads it (once the
 * superblock is loaded) and removes it; resident_save writes what of the
 * volume is in the page cache now (at close, the superblock final);
 * resident_seg_bits is the record's bitmap of segment seg's pages (bit i:
 * its page i, of RESIDENT_PAGE bytes), or NULL when the open read no record. */
#define RESIDENT_PAGE 4096u /* the machine's must match, else no record is kept */
#define RESIDENT_SEG_PAGES (PAR_SEGMENT_SIZE / RESIDENT_PAGE)
int resident_init(par_volume *v, const char *path);
void resident_load(par_volume *v);
void resident_save(par_volume *v);
const uint64_t *resident_seg_bits(const par_volume *v, uint32_t seg);
void resident_free(par_volume *v);

/* Whether every WAL and large-log segment r's logs took is listed in its
 * description (a log lists one before its contents must be durable). */
int region_logs_listed(par_region *r);


/* Creates a region's catalog entry (meta_mu held). */
int volume_create_region(par_volume *v, const char *name);

/* budget.c: waits (holding no lock) while the volume's L0s hold its memory
 * budget, having the largest one flushed. */
void budget_admit(par_volume *v);
/* Raises the LSN *a to v unless it is past it already. */
static inline void raise_lsn(atomic_uint_fast64_t *a, uint64_t v) {
  uint_fast64_t cur = atomic_load(a);
  while (cur < v && !atomic_compare_exchange_weak(a, &cur, v)) {
  }
}

#endif
