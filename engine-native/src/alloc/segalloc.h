/* Segment allocator: hands out the volume's 2 MiB segments.
 *
 * Its state is never written to disk. On open it is derived from the
 * catalog — a segment is in use iff the redo log, a WAL or a level references
 * it — so a crash can neither leak a segment nor hand out one in use.
 * Invariant kept by the callers: a segment is freed only after the redo
 * record that stops referencing it is durable, and only once no reader can
 * still reach it. */
#ifndef PAR_ALLOC_SEGALLOC_H
#define PAR_ALLOC_SEGALLOC_H

#include <pthread.h>
#include <stdint.h>

#include "io/file.h"

typedef struct segalloc {
  pthread_mutex_t mu;
  par_file *file;
  uint64_t *bits;   /* 1 = in use; segment 0 (superblocks) is always in use */
  uint32_t nsegs;   /* segments in the file                                */
  uint32_t cap;     /* segments the bitmap can describe                    */
  uint32_t used;
  uint32_t hint;    /* lowest possibly free segment                        */
  int stopped;      /* segalloc_stop was called                            */
  /* Segments a checkpoint is copying (segalloc_pin): a free of one of them
   * is only noted in deferred, and done by segalloc_unpin, so that it is
   * not handed out and overwritten while the checkpoint reads it. NULL
   * when no checkpoint runs; both describe pin_cap segments. */
  uint64_t *pinned, *deferred;
  uint32_t pin_cap;
} segalloc;

int segalloc_init(segalloc *a, par_file *file);
void segalloc_destroy(segalloc *a);
/* Allocates a segment, growing the file when none is free. */
int segalloc_alloc(segalloc *a, uint32_t *seg);
/* Allocates n consecutive segments (a value larger than one segment). */
int segalloc_alloc_run(segalloc *a, uint32_t n, uint32_t *first);
void segalloc_free(segalloc *a, uint32_t seg);
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
/* Segments of a volume that user writes' values leave to compaction and GC
 * (api/region.c), which go first when the room left is below it
 * (compaction.c). */
#define SEGALLOC_RESERVE 4u

/* Segments that can still be allocated: free ones in the file plus what the
 * file may grow by under its limit (the file system may hold less). */
uint64_t segalloc_room(segalloc *a);

static inline uint64_t seg_offset(uint32_t seg) { return (uint64_t)seg * (2u << 20); }

#endif
