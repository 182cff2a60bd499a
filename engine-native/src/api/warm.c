/* Warm-up: a region that opens reads what its next gets will want into the
 * page cache, in the background.
 *
 * Why: after an open (a restart, or each phase of a benchmark that starts
 * a new process) the page cache holds none of the volume, and every get
 * waits for a random read of the leaf it needs, one at a time, until the
 * working set is back. Asking for those pages together, before most gets
 * do, brings them in at the device's speed for many reads at once.
 *
 * What, in this order:
 *  1. the pages of the region's trees that the residency record (api/
 *     resident.c: what was in the page cache when the volume last closed)
 *     names: the hot leaves, wherever they are in the key space;
 *  2. the record's pages of the region's values (large log, medium
 *     segments): the hot values;
 *  3. the rest of the trees' pages, upper levels first, leaves in key
 *     order. Without a record this is all the warm-up does. Values are not
 *     read here: a get reads each once, and they are most of the bytes.
 *
 * How much: the volume's budget (par_options.warm_mib; by default half of
 * what the process could still take when the volume opened: util/memavail.h),
 * shared by its regions in the order they open and taken a run of pages at
 * a time, so that a warm-up never reads more than fits beside what is in
 * use. A segment's runs are asked for together (file_prefetch), then read
 * through the page cache (file_read_cached) into a scratch buffer, which
 * waits for them; nothing is kept. The segments are listed when the warm-up
 * starts: one that a merge or GC frees meanwhile is read all the same (a
 * wasted read, never a wrong one: nothing reads what the warm-up read). */
#include <pthread.h>
#include <stdlib.h>

#include "api/internal.h"
#include "util/memavail.h"

#define SEG ((uint64_t)PAR_SEGMENT_SIZE)
#define PAGE RESIDENT_PAGE
#define SEG_PAGES RESIDENT_SEG_PAGES
/* Pages of a gap between two runs read through rather than asked for apart. */
#define GAP_PAGES 2u

uint64_t warm_budget(const par_options *o) {
  if (o->warm_mib != PAR_WARM_AUTO) return (uint64_t)o->warm_mib << 20;
  return mem_available() / 2;
}

/* len bytes of the volume's budget, if that much is left. */
static int take(par_volume *v, uint64_t len) {
  uint64_t left = atomic_load(&v->warm_left);
  do {
    if (left < len) return 0;
  } while (!atomic_compare_exchange_weak(&v->warm_left, &left, left - len));
  return 1;
}

static int page_in(const uint64_t *bits, uint32_t p) { return bits && (bits[p / 64] >> (p % 64) & 1); }

typedef struct run {
  uint32_t first, pages;
} run;

/* The runs of seg's pages whose record bit equals want (bits NULL: no page
 * is recorded), gaps of up to GAP_PAGES closed; returns how many. */
static uint32_t runs_of(const uint64_t *bits, int want, run *out) {
  uint32_t n = 0;
  for (uint32_t p = 0; p < SEG_PAGES; p++) {
    if (page_in(bits, p) != want) continue;
    if (n && p - (out[n - 1].first + out[n - 1].pages) <= GAP_PAGES) out[n - 1].pages = p + 1 - out[n - 1].first;
    else out[n++] = (run){p, 1};
  }
  return n;
}

/* Reads the pages of seg whose record bit equals want; 0 once the budget
 * is spent, closing is set or a read failed: the warm-up stops. */
static int warm_seg(par_region *r, uint32_t seg, int want, run *runs, void *buf) {
  par_volume *v = r->vol;
  uint64_t base = seg_offset(seg);
  uint32_t n = runs_of(resident_seg_bits(v, seg), want, runs), asked = 0;
  while (asked < n && take(v, (uint64_t)runs[asked].pages * PAGE)) {
    file_prefetch(&v->file, base + (uint64_t)runs[asked].first * PAGE, (uint64_t)runs[asked].pages * PAGE);
    asked++;
  }
  for (uint32_t i = 0; i < asked; i++) {
    if (__atomic_load_n(&r->closing, __ATOMIC_RELAXED)) return 0;
    /* A failed read stops the warm-up; the reads that need the page report it. */
    uint64_t len = (uint64_t)runs[i].pages * PAGE;
    if (file_read_cached(&v->file, buf, len, base + (uint64_t)runs[i].first * PAGE)) return 0;
    atomic_fetch_add(&r->stats.warm_bytes, len);
  }
  return asked == n && !__atomic_load_n(&r->closing, __ATOMIC_RELAXED);
}

static void *warm_main(void *arg) {
  par_region *r = arg;
  void *buf = malloc(SEG);
  run *runs = malloc(SEG_PAGES / 2 * sizeof *runs + sizeof *runs);
  int go = buf && runs;
  if (r->vol->resident_bits) {
    for (uint32_t i = 0; go && i < r->warm_segs.n; i++) go = warm_seg(r, r->warm_segs.v[i], 1, runs, buf);
    for (uint32_t i = 0; go && i < r->warm_vsegs.n; i++) go = warm_seg(r, r->warm_vsegs.v[i], 1, runs, buf);
  }
  for (uint32_t i = 0; go && i < r->warm_segs.n; i++) go = warm_seg(r, r->warm_segs.v[i], 0, runs, buf);
  free(runs);
  free(buf);
  return NULL;
}

/* The region's value segments, for the record's pages of them. */
static int list_value_segs(par_region *r) {
  par_volume *v = r->vol;
  int rc = PAR_OK;
  pthread_mutex_lock(&v->meta_mu);
  const region_desc *d = catalog_find(&v->cat, r->name);
  for (uint32_t i = 0; d && !rc && i < d->nvlog; i++)
    for (uint32_t k = 0; !rc && k < d->vlog[i].nsegs; k++) rc = seg_list_push(&r->warm_vsegs, d->vlog[i].seg + k);
  for (int i = 1; d && !rc && i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; !rc && j < LEVEL_TREES; j++)
      for (uint32_t k = 0; !rc && k < d->level[i][j].msegs.n; k++) rc = seg_list_push(&r->warm_vsegs, d->level[i][j].msegs.v[k]);
  pthread_mutex_unlock(&v->meta_mu);
  return rc;
}

void region_warm_start(par_region *r) {
  if (atomic_load(&r->vol->warm_left) < PAGE) return;
  uint64_t lsn;
  view *w = region_acquire_view(r, &lsn);
  int rc = PAR_OK;
  for (int i = 1; !rc && i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; !rc && j < LEVEL_TREES; j++)
      for (uint32_t k = 0; !rc && w->tree[i][j] && k < w->tree[i][j]->d.segs.n; k++)
        rc = seg_list_push(&r->warm_segs, w->tree[i][j]->d.segs.v[k]);
  view_unref(w);
  if (!rc && r->vol->resident_bits) rc = list_value_segs(r);
  /* Out of memory or threads: no warm-up, which only costs the gets' time. */
  if (!rc && (r->warm_segs.n || r->warm_vsegs.n))
    r->warm_running = !pthread_create(&r->warm_thread, NULL, warm_main, r);
}

void region_warm_join(par_region *r) {
  if (r->warm_running) pthread_join(r->warm_thread, NULL);
  r->warm_running = 0;
  seg_list_free(&r->warm_segs);
  seg_list_free(&r->warm_vsegs);
}
