/* Compaction's entry points: the volume's workers, which run a region's
 * merges (compaction.c) and its large-log collections (gc/gc.c), and what
 * the region asks of them. */
#ifndef PAR_COMPACTION_COMPACTION_H
#define PAR_COMPACTION_COMPACTION_H

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
  int queued;                        /* on the volume's queue (sched_mu) */
  int inflight;                      /* workers holding this region */
  int compact_all;                   /* par_compact: spill every level downward */
} compaction_state;

int compaction_start(par_volume *v);
void compaction_stop(par_volume *v);
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
