/* Segment allocator: hands out the volume's 2 MiB segments.
 *
 * Its state is never written to disk. On open it is derived from the
 * catalog — a segment is in use iff the redo log, a WAL or a level references
 * it — so a crash can neither leak a segment nor hand out one in use.
 * Invariant kept by the callers: a segment is freed only after the redo
 * record that stops referencing it is durable, and only once no reader can
 * still reach it.
 *
 * The file never shrinks, so without more its size would stay at its high
 * mark (a merge writes its new tree before the old one is freed).
 * segalloc_trim gives the blocks of free segments beyond a reserve back to
 * the file system (punched holes); allocation prefers free segments that
 * kept their blocks and reserves a released one's blocks again before
 * handing it out, so a full file system still shows at allocation.
 *
 * Releasing a segment and reserving it again costs file-system work (a
 * punch, a fallocate, and unwritten extents converted as the merge writes
 * them), so the reserve follows demand: it holds what the busiest of the
 * last TRIM_WINDOWS stretches between trims allocated. Each merge rewrites
 * its destination level whole, so the frequent small merges cycle through
 * kept segments, and what a rare large merge freed goes back once a few
 * small ones showed it is not needed. At rest (open, close) the reserve is
 * smaller still, segalloc_rest_floor: a closed volume's file holds little
 * more than its segments in use, and the first merges of the next session
 * reserve what they take again. */
#ifndef PAR_ALLOC_SEGALLOC_H
#define PAR_ALLOC_SEGALLOC_H

#include <pthread.h>
#include <stdint.h>

#include "io/file.h"

typedef struct segalloc {
  pthread_mutex_t mu;
  par_file *file;
  uint64_t *bits;   /* 1 = in use; segment 0 (superblocks) is always in use */
  uint64_t *holes;  /* 1 = free, its blocks released (never set with bits)  */
  uint32_t nsegs;   /* segments in the file                                */
  uint32_t cap;     /* segments the bitmaps can describe                   */
  uint32_t used;    /* set in bits, but for those being released            */
  uint32_t nholes;
  uint32_t releasing; /* set in bits while segalloc_trim punches them      */
  uint32_t hint;    /* lowest possibly free segment                        */
  int stopped;      /* segalloc_stop was called                            */
  int cannot_release; /* the file system refused a hole: trim does nothing */
  uint32_t allocs;  /* segments allocated since the last segalloc_trim      */
  uint32_t demand[8]; /* allocs of the last 8 stretches between trims       */
  uint32_t ndemand;   /* stretches recorded (the ring's next slot, mod 8)   */
  /* Segments a checkpoint is copying (segalloc_pin): a free of one of them
   * is only noted in deferred, and done by segalloc_unpin, so that it is
   * not handed out and overwritten while the checkpoint reads it. NULL
   * when no checkpoint runs; both describe pin_cap segments. */
  uint64_t *pinned, *deferred;
  uint32_t pin_cap;
  /* Freed segments whose pages are still to leave the page cache, when the
   * forgetter runs (segalloc_start_forgetter); describes cap segments. A
   * segment handed out again leaves the set: its pages are new data. */
  uint64_t *unforgotten;
  uint32_t nunforgotten;
  /* The forgetter thread. Its mutex is a leaf: segalloc_free takes it under
   * whatever locks its caller holds (a view's last reference can drop
   * under view_mu), so nothing else is taken while it is held. */
  struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int running; /* set and cleared under segalloc.mu */
    int wanted, stop;
  } forgetter;
} segalloc;

int segalloc_init(segalloc *a, par_file *file);
void segalloc_destroy(segalloc *a);
/* Allocates a segment, growing the file when none is free. */
int segalloc_alloc(segalloc *a, uint32_t *seg);
/* Allocates n consecutive segments (a value larger than one segment). */
int segalloc_alloc_run(segalloc *a, uint32_t n, uint32_t *first);
/* Frees a segment and drops its pages from the page cache: on the
 * forgetter's thread when it runs, else on the caller's. */
void segalloc_free(segalloc *a, uint32_t seg);
/* Starts the thread that drops freed segments' pages (par-forget). A drop
 * costs about 0.1 ms per cached segment, and the thread that frees a merged
 * tree is the one that drops its last reference: a get or a scan as often
 * as the merge's own. Without the thread (none could be started, or a
 * scratch allocator) each free drops its pages itself. */
void segalloc_start_forgetter(segalloc *a);
/* Stops the forgetter and drops what it had left; frees after the stop
 * drop their own pages. Frees may run meanwhile. */
void segalloc_stop_forgetter(segalloc *a);
/* Pins segs (segments in use) until segalloc_unpin: frees of them wait
 * until then. One pinned set at a time (api/checkpoint.c serializes). */
int segalloc_pin(segalloc *a, const uint32_t *segs, uint32_t n);
/* Ends the pin, doing the frees it deferred. */
void segalloc_unpin(segalloc *a);
/* Refuses every later allocation (PAR_EFAILED) until the volume is
 * reopened: called when a catalog write failed and the redo log cannot say
 * whether it is durable, so the segments that record named (which its
 * writer frees again) must keep their contents. */
void segalloc_stop(segalloc *a);
/* Marks a segment in use while the catalog is replayed; PAR_ECORRUPT when it
 * lies outside the file (a truncated volume: refused here, before anything
 * reads it through the map, where it would raise SIGBUS) or is referenced
 * twice. */
int segalloc_mark(segalloc *a, uint32_t seg);
int segalloc_in_use(segalloc *a, uint32_t seg);
void segalloc_counts(segalloc *a, uint32_t *total, uint32_t *used);
/* Free segments whose blocks were given back to the file system. */
uint32_t segalloc_released(segalloc *a);

/* Gives the blocks of free segments back to the file system while more
 * than the reserve hold theirs, highest segments first, a run at a time
 * without the lock held. The reserve is the floor, segalloc_trim_floor, and
 * also the most allocated between two trims lately (see above); at_rest it
 * is segalloc_rest_floor. Called where a thread may wait on the file system: after a merge
 * or GC frees space and after a region drop, and at rest at open and close.
 * Advisory: a failure stops it for the life of the allocator. */
void segalloc_trim(segalloc *a, int at_rest);
/* Once the catalog is replayed at open: trims at rest, then reserves the
 * blocks of the free segments kept (whether an earlier open released one
 * is not stored); one the file system cannot hold counts as released. */
void segalloc_settle(segalloc *a);
/* The least number of free segments that keep their blocks: a sixteenth
 * of those in use, at least SEGALLOC_MIN_FLOOR (64 MiB). */
#define SEGALLOC_MIN_FLOOR 32u
uint32_t segalloc_trim_floor(uint32_t used);
/* The free segments that keep their blocks at rest: a 64th of those in
 * use, at least SEGALLOC_REST_MIN (8 MiB), never more than the floor. */
#define SEGALLOC_REST_MIN 4u
uint32_t segalloc_rest_floor(uint32_t used);
/* For tests: the floor's minimum instead of SEGALLOC_MIN_FLOOR, so that
 * their small volumes release segments too (0 releases all but a
 * sixteenth). */
void segalloc_set_min_floor(uint32_t segs);
/* Segments of a volume that user writes' values leave to compaction and GC
 * (api/region.c), which go first when the room left is below it
 * (compaction.c). */
#define SEGALLOC_RESERVE 4u

/* Segments that can still be allocated: free ones in the file plus what the
 * file may grow by under its limit (the file system may hold less). */
uint64_t segalloc_room(segalloc *a);

static inline uint64_t seg_offset(uint32_t seg) { return (uint64_t)seg * (2u << 20); }

#endif
