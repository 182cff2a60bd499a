/* The range tombstones one read or one merge honours, per source of a view
 * (newest source first, the order of a merge's sources): an L0's tombstones
 * visible at the read's LSN, each with its LSN, or a device tree's range
 * set. A tombstone hides every entry of the older sources, and in an L0
 * the entries with an older LSN; never a tree's own entries (a merge drops
 * those it covers before it builds the tree). */
#ifndef PAR_SCAN_RANGEDEL_H
#define PAR_SCAN_RANGEDEL_H

#include <stdint.h>

#include "index/memtable.h"
#include "meta/catalog.h"

#define RDEL_MAX_SOURCES (2 + PAR_MAX_LEVELS * LEVEL_TREES)

typedef struct rdel {
  int n;   /* sources */
  int any; /* whether any source has a tombstone: otherwise nothing is hidden */
  struct {
    const mt_entry **l0; /* malloc'd; the memtable keeps the entries alive */
    uint32_t nl0;
    range_set l0_cover;   /* the union of l0's ranges (hides the older sources) */
    const range_set *set; /* what hides the older sources: l0_cover, or a tree's
                             set (which outlives the read) */
  } src[RDEL_MAX_SOURCES];
} rdel;

/* Appends a source: an L0 at snapshot snap, or a tree's range set. */
int rdel_add_memtable(rdel *d, memtable *m, uint64_t snap);
void rdel_add_tree(rdel *d, const range_set *set);
void rdel_free(rdel *d);

/* Whether key, found in source i (at lsn if that source is an L0), is
 * hidden by a range tombstone. */
int rdel_hides(const rdel *d, int i, uint64_t lsn, const void *key, size_t key_len);

/* Adds every range of every source to out (a merge's output tree). */
int rdel_union(const rdel *d, range_set *out);

#endif
