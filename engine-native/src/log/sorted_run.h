/* A sorted run of the large log (DiffKV §3.3, "compaction-triggered
 * merge"): the large values a spill moves into the last level, copied in
 * the key order the merge visits them, into segments of their own.
 *
 * Values are appended to the large log in write order, so the values of
 * adjacent keys sit in different places and a scan reads a page for each.
 * Copied into a run, a scan of the last level reads them a few to a page.
 * Each value is copied once when it reaches the last level (again only when
 * the level spills into a new, deeper one), and its old record becomes
 * garbage for GC, in the same catalog record that installs the new tree.
 *
 * The run's segments are written whole with direct I/O (a segment's
 * records and the block padding after them), before the merge commits;
 * the commit's redo record lists them (closed, with their unused tails as
 * garbage) and its fdatasync makes them durable with the tree that points
 * at them. A crash before the commit leaves them free, a failed merge
 * gives them back. Records keep their LSN: a copy is the same write. */
#ifndef PAR_LOG_SORTED_RUN_H
#define PAR_LOG_SORTED_RUN_H

#include <stdint.h>

#include "alloc/segalloc.h"
#include "io/file.h"
#include "log/vlog.h"

/* Takes a segment and a new incarnation for the run; ntaken segments are
 * taken already (the description must find room for all of them).
 * PAR_ENOSPC or PAR_ELIMIT when there is no room: the run stops. */
typedef int (*sorted_run_take_fn)(void *ctx, uint32_t ntaken, uint32_t *seg, uint32_t *inc);

typedef struct sorted_run_seg {
  uint32_t seg, inc;
  uint32_t used; /* record bytes, padding excluded */
} sorted_run_seg;

typedef struct sorted_run {
  par_file *file;
  segalloc *alloc;
  uint32_t region_id;
  sorted_run_take_fn take;
  void *ctx;
  uint8_t *buf;         /* the image of the last segment, written once full */
  sorted_run_seg *segs; /* taken, in order; the last one is being filled */
  uint32_t nsegs, cap;
  uint32_t seed;
  int stopped;          /* no room for another segment: appends refuse */
  uint64_t bytes;       /* record bytes copied */
} sorted_run;

void sorted_run_init(sorted_run *s, par_file *f, segalloc *alloc, uint32_t region_id, sorted_run_take_fn take,
                     void *ctx);
/* Copies rec (whose size must fit a segment) to the run; *out points at
 * the copy. PAR_ENOSPC / PAR_ELIMIT once no segment can be taken (the run
 * is stopped: the caller keeps the old pointer, now and after); any other
 * error (a failed write) fails the merge. */
int sorted_run_append(sorted_run *s, const vlog_record *rec, vptr *out);
/* Writes the last segment. */
int sorted_run_finish(sorted_run *s);
/* Gives every segment back: the merge failed before its commit recorded
 * them, so nothing durable points into them. */
void sorted_run_abort(sorted_run *s);
void sorted_run_free(sorted_run *s);

#endif
