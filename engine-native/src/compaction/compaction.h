/* Compaction's entry points: the volume's workers, which run a region's
 * merges (compaction.c) and its large-log collections (gc/gc.c), and what
 * the region asks of them. */
#ifndef PAR_COMPACTION_COMPACTION_H
#define PAR_COMPACTION_COMPACTION_H

#include <stdint.h>

typedef struct par_volume par_volume;
typedef struct par_region par_region;
typedef struct view view;

int compaction_start(par_volume *v);
void compaction_stop(par_volume *v);
/* Queues the region if it has (or may have) compaction work. */
void compaction_schedule(par_region *r);
/* Waits until the region has no compaction queued or running. */
void compaction_drain(par_region *r);
/* Whether the region has merges or collections to run (view_mu held). */
int compaction_pending(par_region *r);
/* Bytes the merges already due in w would read (sources and destination
 * trees; they write about as much), and the spills those would push over
 * a level's capacity in turn. par_compact's forced merges are not counted. */
uint64_t compaction_pending_bytes(const par_region *r, const view *w);
/* The merge a free worker runs next, from the view alone: 1 to flush the
 * frozen L0, i + 1 to spill level i's waiting tree (tree[i][1]), 0 for
 * none. A merge into a busy level (dest_busy as in par_region) waits. A
 * flush goes first unless a spill is overdue: some level i's old tree
 * waits to spill while the tree that took the level's merges since is over
 * the level's capacity (l0_size x growth^i bytes) too. */
int compaction_next_merge(const view *w, const int *dest_busy, uint64_t l0_size, uint32_t growth);

#endif
