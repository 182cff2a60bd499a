/* Warm-up: a region that opens reads the nodes of its device levels into
 * the page cache, in the background, upper levels first.
 *
 * Why: after an open (a restart, or each phase of a benchmark that starts
 * a new process) the page cache holds none of the trees, and every get
 * waits for a random read of the leaf it needs, one at a time, until the
 * working set is back. Reading the trees' segments in order (2 MiB reads)
 * brings the same pages in at the device's sequential speed, before most
 * gets ask for them. The values (large log, medium log) are left out: a get
 * reads each once, and they are most of the bytes.
 *
 * How much: the volume's budget (par_options.warm_mib; by default half of
 * what the process could still take when the volume opened: util/memavail.h),
 * shared by its regions in the order they open and taken a segment at a
 * time, so that a warm-up never reads more than fits beside what is in use.
 * Reads go through the page cache like the gets' (file_read_cached) into a
 * scratch buffer; nothing is kept. The segments are listed when the warm-up
 * starts: one that a merge frees meanwhile is read all the same (a wasted
 * read, never a wrong one: nothing reads what the warm-up read). */
#include <pthread.h>
#include <stdlib.h>

#include "api/internal.h"
#include "util/memavail.h"

#define SEG ((uint64_t)PAR_SEGMENT_SIZE)

uint64_t warm_budget(const par_options *o) {
  if (o->warm_mib != PAR_WARM_AUTO) return (uint64_t)o->warm_mib << 20;
  return mem_available() / 2;
}

/* A segment's worth of the volume's budget, if that much is left. */
static int take(par_volume *v) {
  uint64_t left = atomic_load(&v->warm_left);
  do {
    if (left < SEG) return 0;
  } while (!atomic_compare_exchange_weak(&v->warm_left, &left, left - SEG));
  return 1;
}

static void *warm_main(void *arg) {
  par_region *r = arg;
  par_volume *v = r->vol;
  void *buf = malloc(SEG);
  for (uint32_t i = 0; buf && i < r->warm_segs.n; i++) {
    if (__atomic_load_n(&r->closing, __ATOMIC_RELAXED) || !take(v)) break;
    /* A failed read stops the warm-up; the reads that need the page report it. */
    if (file_read_cached(&v->file, buf, SEG, seg_offset(r->warm_segs.v[i]))) break;
    atomic_fetch_add(&r->stats.warm_bytes, SEG);
  }
  free(buf);
  return NULL;
}

void region_warm_start(par_region *r) {
  if (atomic_load(&r->vol->warm_left) < SEG) return;
  uint64_t lsn;
  view *w = region_acquire_view(r, &lsn);
  int rc = PAR_OK;
  for (int i = 1; !rc && i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; !rc && j < LEVEL_TREES; j++)
      for (uint32_t k = 0; !rc && w->tree[i][j] && k < w->tree[i][j]->d.segs.n; k++)
        rc = seg_list_push(&r->warm_segs, w->tree[i][j]->d.segs.v[k]);
  view_unref(w);
  /* Out of memory or threads: no warm-up, which only costs the gets' time. */
  if (!rc && r->warm_segs.n) r->warm_running = !pthread_create(&r->warm_thread, NULL, warm_main, r);
}

void region_warm_join(par_region *r) {
  if (r->warm_running) pthread_join(r->warm_thread, NULL);
  r->warm_running = 0;
  seg_list_free(&r->warm_segs);
}
