/* Replication hooks (include/parallax/replication.h): shared helpers of
 * log.c (the log stream), index.c (send index) and role.c. */
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

#endif
