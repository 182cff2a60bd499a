/* Compaction's entry points: the volume's workers, which run a region's
 * merges (compaction.c) and its large-log collections (gc/gc.c), and what
 * the region asks of them. */
#ifndef PAR_COMPACTION_COMPACTION_H
#define PAR_COMPACTION_COMPACTION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "parallax/parallax.h"

typedef struct view view;

/* A region's compaction bookkeeping, compaction.c's own (others use the
 * functions below), under the region's view_mu but for queued: a level's
 * active tree is the target of at most one merge, its spilling tree the
 * source of one. */
typedef struct compaction_state {
  int dest_busy[PAR_MAX_LEVELS + 1]; /* a merge writes into the level */
  int running;                       /* merges and collections in progress */
  int queued;                        /* on the volume's queue (compaction_workers.mu) */
  int inflight;                      /* workers holding this region */
  int compact_all;                   /* par_compact: spill every level downward */
  struct {                           /* atomics, read by par_region_stats */
    atomic_uint_fast64_t merges;     /* merges committed */
    atomic_uint_fast64_t medium_written; /* medium-log bytes flushes wrote */
    atomic_uint_fast64_t large_sorted;   /* record bytes merges copied into sorted runs */
    struct {
      atomic_uint_fast64_t read, written;  /* merges' bytes, by source and destination level */
      atomic_uint_fast64_t class_bytes[3]; /* leaf bytes written, by class: small, medium, large */
    } level[PAR_MAX_LEVELS + 1];
  } stats;
} compaction_state;

/* A volume's compaction workers (threads named par-compaction): they take
 * regions from the queue, run a merge or a collection of each, and queue
 * it again while it has more. mu comes before any region's view_mu, never
 * inside it. */
typedef struct compaction_workers {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  par_region **queue;                /* regions that may have compaction work */
  uint32_t qlen;                     /* of PAR_MAX_REGIONS slots */
  int stop;
  uint32_t n;
  pthread_t *threads;
} compaction_workers;

/* Starts a volume's workers (threads of them; 0: one) and stops them, once
 * its regions are closed. */
int compaction_start(compaction_workers *q, uint32_t threads);
void compaction_stop(compaction_workers *q);
/* A region's close, first step: no merge is queued for it from here on, and
 * a spill in its first half stops (compaction.c, MERGE_CANCELLED). */
void compaction_begin_close(par_region *r);
/* Queues the region if it has (or may have) compaction work. */
void compaction_schedule(par_region *r);
/* Waits until the region has no compaction queued or running. */
void compaction_drain(par_region *r);
/* Whether the region has merges or collections to run (view_mu held). */
int compaction_pending(par_region *r);
/* compaction_pending, or one runs (view_mu held). */
int compaction_busy(par_region *r);
/* par_compact: while on, every level spills down to the last (view_mu held). */
void compaction_set_all(par_region *r, int on);
/* Bytes the merges already due in w would read (sources and destination
 * trees; they write about as much), and the spills those would push over
 * a level's capacity in turn. par_compact's forced merges are not counted. */
uint64_t compaction_pending_bytes(const par_region *r, const view *w);
/* The merge a free worker runs next, from the view alone: 1 to flush the
 * frozen L0, i + 1 to spill level i's waiting tree (tree[i][1]), 0 for
 * none. A merge into a busy level (dest_busy as in compaction_state) waits. A
 * flush goes first unless a spill is overdue: some level i's old tree
 * waits to spill while the tree that took the level's merges since is over
 * the level's capacity (l0_size x growth^i bytes) too. */
int compaction_next_merge(const view *w, const int *dest_busy, uint64_t l0_size, uint32_t growth);

#endif
