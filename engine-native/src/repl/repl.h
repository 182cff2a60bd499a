/* Replication hooks (include/parallax/replication.h): shared helpers of
 * log.c (the log stream), export.c and install.c (send index) and role.c. */
#ifndef PAR_REPL_REPL_H
#define PAR_REPL_REPL_H

#include "api/internal.h"
#include "parallax/replication.h"

/* A copy of the region's WAL segment list and covered LSN, taken under
 * meta_mu: the log's shape at one moment. */
typedef struct wal_list {
  uint64_t covered;
  uint32_t n;
  wal_seg *w;
} wal_list;

int repl_wal_list(par_region *r, wal_list *out);
void repl_wal_list_free(wal_list *l);

/* In a description edit (meta_mu held): drops the WAL segments the covered
 * LSN and the region's log cursors allow (every one with drop_all, which
 * releases the cursors that still need one), as a compaction's commit does;
 * each goes to freed (the redo record's) and to wal_freed, which the caller
 * gives back to the allocator once the edit is durable. */
int repl_trim_wal(par_region *r, region_desc *d, int drop_all, seg_list *freed, seg_list *wal_freed);

/* The large-log mirror (repl/mirror.c), under view_mu unless said. */

/* The index of the mirror of the primary's segment of incarnation inc, or -1. */
int repl_mirror_find(const par_region *r, uint32_t inc);

/* A large value a primary shipped with its place in its large log (from);
 * to: where repl_mirror_place put it in the mirror (to.seg 0: nowhere, the
 * log copy takes it whole). */
typedef struct shipped_large {
  vptr from, to;
  uint64_t lsn;
  const uint8_t *key, *value;
  uint16_t key_len;
  uint32_t value_len;
} shipped_large;

/* Writes the values, in LSN order, into the mirror where they extend it
 * (see mirror.c); next: the log copy's next LSN (a value below it was
 * delivered before). Takes view_mu; the caller holds repl_apply_mu.
 * PAR_ECORRUPT for a malformed place; on an error no value is placed. */
int repl_mirror_place(par_region *r, shipped_large *v, uint32_t n, uint64_t next);

/* Writes and ends apply's run of records (view_mu held): before an install
 * writes into the mirror or replaces it, and before a promotion reads it;
 * sync: and syncs them when it wrote any. */
int repl_mirror_settle(par_region *r, int sync);

/* An install copies the segment of incarnation inc into a new mirror
 * segment: apply starts none for it until the install closes; a run of
 * nsegs > 1 it copies into the run from bseg, where apply may write the
 * run's record first (repl/mirror.c). */
int repl_copying_add(par_region *r, uint32_t inc, uint32_t bseg, uint32_t nsegs);
void repl_copying_remove(par_region *r, uint32_t inc);

/* A reopened region becoming a send-index backup: its large log, which its
 * log copy may point into, becomes the mirror, each segment to be copied
 * again in place (takes view_mu). */
int repl_mirror_rebuild(par_region *r);

#endif
