/* Garbage collection of the large log (Parallax §3.2, DiffKV §4.2).
 *
 * Compactions find dead large values — a merge drops an entry that a newer
 * version or a tombstone shadows — and add the dead records' bytes to their
 * segment's garbage counter in the catalog, in the same redo record as the
 * merge. A segment whose garbage passes gc_threshold_pct is collected:
 * every record in it whose key still points at it (checked through the
 * index, under write_mu so no write can slip in) is re-appended to the cold
 * head and re-inserted with a new LSN, exactly like a put; once those puts
 * are durable, and the writes in L0 that made other records dead too (a
 * crash that lost one would make its record live again), the segment is
 * emptied; while such a write may be unlogged (PAR_NO_WAL), only a flush
 * makes it durable and the segment waits for one. It is freed only when every view that
 * existed before the relocations is gone, because an older snapshot may
 * still read a value there. A pointer left in an old level keeps its
 * segment's incarnation, which is never reused, so it can never match the
 * segment's next use. */
#ifndef PAR_GC_GC_H
#define PAR_GC_GC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "log/vlog.h"
#include "meta/catalog.h"

typedef struct par_region par_region;

/* A region's GC state: GC's own, its fields read and written in gc.c only
 * (the region, compaction and replication use the functions below). Under
 * the region's view_mu, unless a field says otherwise. The region is used
 * through api/region.h alone. */
typedef struct gc_state {
  uint64_t threshold;                /* garbage bytes that make a segment worth collecting */
  int running;                       /* one collection at a time (gc_pick .. gc_run_done) */
  uint32_t skip_inc;                 /* a segment whose collection failed, until a merge publishes */
  int stalled;                       /* GC failed while the region is failed */
  atomic_uint_fast64_t owed;         /* garbage GC could collect now (gc_note_owed) */
  atomic_uint_fast64_t log_bytes;    /* the large log's bytes at gc_note_owed */
  atomic_uint_fast64_t owed_waited_out; /* a debt writers waited on in vain */
  /* Collected segments, waiting until no view older than need_seq is
   * alive (and no log reader or export may still read them). */
  struct gc_pending {
    uint32_t seg, inc;
    uint64_t need_seq;
    uint64_t last_lsn;               /* the newest LSN its relocations took (0: none) */
    uint64_t newest_lsn;             /* the newest LSN of a record in it */
    int dropping;                    /* gc_reclaim is dropping it */
  } *pending;
  uint32_t npending, pending_cap;
  int reclaiming;                    /* a gc_reclaim runs (one at a time) */
  /* The newest LSN the relocations out of a segment GC dropped (or is
   * dropping) took; and the send-index exports open, which hold drops back
   * (src/repl/export.c: an export's large-log segments stay until it is
   * closed). */
  uint64_t dropped_lsn;
  int exports;
  /* The large-log segments, sorted, this session's GC relocations and
   * sorted runs went to (gc_note_settled), and beside each the unwritten
   * tail it was left with (gc_note_left_tail; 0 until then), under
   * settled_mu (a leaf lock). */
  pthread_mutex_t settled_mu;
  uint32_t *settled, *settled_tail;
  uint32_t nsettled, settled_cap;
  struct {
    atomic_uint_fast64_t runs, scanned, relocated, freed;
  } stats;
} gc_state;

/* threshold_pct: the volume's gc_threshold_pct. */
void gc_state_init(gc_state *g, uint32_t threshold_pct);
void gc_state_free(gc_state *g);

typedef struct garbage_list {
  struct {
    uint32_t inc;
    uint64_t bytes;
  } *v;
  uint32_t n, cap;
} garbage_list;

void garbage_add(garbage_list *g, vptr p);
/* Adds the bytes to the segments d still has (others were collected). */
void garbage_apply(const garbage_list *g, region_desc *d);
void garbage_free(garbage_list *g);

/* Persists the garbage in g: the records of a write that failed before its
 * WAL record was written, which nothing points at. */
int garbage_persist(par_region *r, const garbage_list *g);
/* A head segment that its log left or closed: its unwritten tail (the
 * pointer's size) becomes garbage and the segment stops being open. */
void garbage_close_head(region_desc *d, vptr tail);
/* The same for a list of tails, persisted. */
int garbage_close_heads(par_region *r, const garbage_list *tails);
/* What the replay after a crash found lost, for gc_count_crash_garbage: the
 * values of the cross-region parts it skipped (their batch never
 * committed), and the LSN ranges, in increasing order, of writes made
 * without the log (PAR_NO_WAL) that no flush covered (the log's gaps past
 * the levels). */
typedef struct crash_losses {
  garbage_list values;
  uint64_t (*unlogged)[2];
  uint32_t nunlogged, cap;
} crash_losses;

int crash_losses_add_unlogged(crash_losses *c, uint64_t first, uint64_t last);
void crash_losses_free(crash_losses *c);

/* At open, before the region's logs append, after a replay that recovered
 * up to LSN last: the garbage a crash left that nothing counted, so that GC
 * collects it like any other once the segments' other values die. Persists
 * it with the values in lost and frees lost.
 * - The heads open in the description (the heads of the crashed session, and
 *   the heads it left whose values' WAL records were not all durable yet):
 *   their tails, found by reading each up to the end of its records (records
 *   a power cut tore are past that end), and their records past last or in
 *   lost's unlogged ranges, the values of writes the crash lost. No durable
 *   pointer refers to either:
 *   values are synced before the WAL blocks that point at them, and every
 *   pointer recovered is in a level (covered_lsn <= last) or a replayed
 *   record. A head that cannot be read stays open.
 * - The newest runs (one huge value each, listed once its record is written
 *   and durable: log/vlog.h): a run whose record is lost as above, or whose
 *   header is damaged, is garbage. Runs are listed in LSN order, so the walk
 *   from the newest stops at the first run the levels cover.
 * A skipped part is counted again at each open until the levels cover it: an
 * overcount only makes GC collect its segment sooner. */
int gc_count_crash_garbage(par_region *r, uint64_t last, crash_losses *lost);

typedef struct gc_task {
  uint32_t seg, inc, nsegs;
} gc_task;

/* With view_mu held. gc_pick finds the most garbage-laden segment over the
 * threshold (claiming it unless dry); gc_reclaimable says whether collected
 * segments wait that no reader can reach any more. */
int gc_pick(par_region *r, gc_task *t, int dry);
int gc_reclaimable(par_region *r);
/* A claimed collection ended with rc (view_mu held): a segment that failed
 * waits for the next merge's publication (gc_merge_published); one that
 * failed while the region is failed (region_failed) stalls GC until then,
 * or until a reclaim frees space, instead of cycling through the
 * candidates. */
void gc_run_done(gc_state *g, const gc_task *t, int rc, int region_failed);
void gc_merge_published(gc_state *g);
int gc_is_stalled(const gc_state *g);
/* Whether collected segments wait to be dropped (view_mu held). */
int gc_has_collected(const gc_state *g);
/* A send-index export (repl/export.c), view_mu held: while one is open GC
 * drops nothing; gc_export_hold returns the dropped LSN (gc_state), and
 * gc_dropping says whether inc is being dropped now (an export leaves it
 * out). gc_export_release returns 1 when the last export let go. */
uint64_t gc_export_hold(gc_state *g);
int gc_dropping(const gc_state *g, uint32_t inc);
int gc_export_release(gc_state *g);
/* Frees those segments (no locks held: view_mu is taken to choose them and
 * to let them go, not across the synced redo record that drops them). A
 * region out of room is let retry its merges once space came back. */
void gc_reclaim(par_region *r);
/* Collects one segment (no locks held). */
int gc_run(par_region *r, const gc_task *t);

/* For a merge that copies large values into a sorted run
 * (log/sorted_run.h), called (no locks held) after it registered a view of
 * its own: the incarnations, sorted, of the single-segment large-log
 * segments whose records it may copy, reading them until it drops that
 * view. GC frees a segment it emptied only once every view older than the
 * emptying is gone, so the segments of the description that GC is not
 * emptying yet stay readable; those it is emptying (pending) may be freed
 * and reused under the merge, and are left out. So are settled segments:
 * GC's relocations, which it appends in the order of the segment it
 * empties, and earlier runs. Copying those again would loop: GC empties a
 * run's partly filled last segment (its unused tail is garbage), the next
 * merge would copy the relocated values into a new run with a tail of its
 * own, and so on while merges are small. A pointer into a segment left out
 * is kept as it is. */
int gc_copyable_segments(par_region *r, uint32_t **incs, uint32_t *n);
/* Notes a segment of this session's GC relocations or sorted runs (any
 * lock but settled_mu may be held); PAR_ENOMEM only costs a later copy. */
void gc_note_settled(gc_state *g, uint32_t inc);
/* A large log left its head inc with tail unwritten bytes (counted as its
 * garbage next). For a settled segment GC keeps the tail out of the
 * segment's score: its values survived a collection already, and one too
 * large to share a segment (over half of one) leaves a tail in every head
 * it goes to, so collecting for the tail alone would move such values from
 * segment to segment for ever (test_gc gc_settles), a relocation and a WAL
 * record per move. The garbage itself is still counted (every byte nothing
 * points at is, test_gc_kill's audit): a settled segment is collected once
 * its dead records alone pass the threshold. Settled is this session's
 * only: after a reopen such a segment may be collected once more for its
 * tail, and its values then settle again. Any lock but settled_mu may be
 * held. */
void gc_note_left_tail(gc_state *g, uint32_t inc, uint32_t tail);

/* Back-pressure. What GC owes is the garbage of the segments it could
 * collect now (scored as gc_pick scores them; a collected segment waiting
 * for readers is no longer owed). While a region owes more than its bound
 * (gc_over_debt: the large log's bytes over GC_OWED_SHARE, at least
 * GC_OWED_FLOOR), its writers wait (gc_admit, holding no lock) and its
 * compaction worker collects before it spills (after the flush of a frozen
 * L0, whose room the relocations need): writers that outrun GC slow down to
 * its pace instead of growing the volume without bound. A writer goes on
 * after GC_PATIENCE_MS without the debt going down (a GC that keeps
 * failing, or a long merge holding the only worker, must not stop writes),
 * and so do the region's later writers until the debt changes; also when
 * the region failed, is closing, or is not a replication primary (a backup
 * never collects). The bound grows with the log: a merge that finds the
 * garbage of many updates at once makes many segments cross the threshold
 * together, and a fixed 64 MiB stopped every writer of a 1-3 GB log for
 * seconds at a time (docs/benchmarks.md, "GC's debt bound grows with the
 * log"). */
#define GC_OWED_FLOOR (32ull * PAR_SEGMENT_SIZE)
#define GC_OWED_SHARE 8u
#define GC_PATIENCE_MS 5000u
/* Recomputes what GC owes and the bound it is held to (view_mu held). */
void gc_note_owed(par_region *r);
uint64_t gc_owed(gc_state *g);
/* Whether owed is over the region's bound. */
int gc_over_debt(gc_state *g, uint64_t owed);
void gc_admit(par_region *r);

#endif
