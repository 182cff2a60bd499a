/* Views (api/view.c): what a read or a merge sees of a region, the two L0s
 * and the device trees, as one immutable object. */
#ifndef PAR_API_VIEW_H
#define PAR_API_VIEW_H

#include <stdatomic.h>
#include <stdint.h>

#include "index/memtable.h"
#include "index/tree.h"
#include "parallax/parallax.h"

typedef struct view view;

/* Everything a read needs, immutable once published: the two L0s and the
 * device trees. Any change (freeze, compaction) publishes a new view; a
 * reader holds a reference to the view it started with, which keeps its
 * memtables and its trees' segments alive. */
struct view {
  atomic_int refs;
  par_region *owner;
  uint64_t seq;                  /* creation order within the region   */
  struct view *prev, *next;      /* the region's live views, by seq    */
  memtable *active;              /* takes writes                       */
  memtable *frozen;              /* being compacted into L1, or NULL   */
  dtree *tree[PAR_MAX_LEVELS + 1][LEVEL_TREES]; /* newest first: [i][0], [i][1], [i+1][0] ... */
};

/* An empty view (a fresh L0 is the caller's to add), or a copy holding
 * references to everything src holds. Both are registered as live. */
view *view_create(par_region *r);
view *view_clone(const view *src);
void view_unref(view *v);

/* Reference to the current view and the LSN it is consistent at. */
view *region_acquire_view(par_region *r, uint64_t *lsn);
/* The current view (view_mu held), not referenced. */
view *region_view(par_region *r);
/* Makes w the current view (view_mu held; the region's reference moves to
 * w) and drops the region's reference to the previous one. */
void region_set_view(par_region *r, view *w);

#endif
