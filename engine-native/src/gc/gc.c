#include "gc/gc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc/segalloc.h"
#include "api/region.h"
#include "compaction/compaction.h"
#include "index/node.h"
#include "io/mapguard.h"
#include "util/clock.h"
#include "util/sorted_u32.h"
#include "util/status.h"

#define SEG ((uint32_t)PAR_SEGMENT_SIZE)

void gc_state_init(gc_state *g, uint32_t threshold_pct) {
  memset(g, 0, sizeof *g);
  g->threshold = (uint64_t)SEG * threshold_pct / 100;
  pthread_mutex_init(&g->settled_mu, NULL);
}

void gc_state_free(gc_state *g) {
  free(g->pending);
  free(g->settled);
  free(g->settled_tail);
  pthread_mutex_destroy(&g->settled_mu);
}

void gc_run_done(gc_state *g, const gc_task *t, int rc, int region_failed) {
  assert(g->running);
  g->running = 0;
  if (rc) g->skip_inc = t->inc; /* e.g. L0 full: retry after the next merge */
  if (rc && region_failed) g->stalled = 1;
}

void gc_merge_published(gc_state *g) {
  g->skip_inc = 0;
  g->stalled = 0;
}

int gc_is_stalled(const gc_state *g) { return g->stalled; }

int gc_has_collected(const gc_state *g) { return g->npending > 0; }

uint64_t gc_export_hold(gc_state *g) {
  g->exports++;
  return g->dropped_lsn;
}

int gc_dropping(const gc_state *g, uint32_t inc) {
  for (uint32_t k = 0; k < g->npending; k++)
    if (g->pending[k].dropping && g->pending[k].inc == inc) return 1;
  return 0;
}

int gc_export_release(gc_state *g) {
  assert(g->exports > 0);
  return --g->exports == 0;
}

void garbage_add(garbage_list *g, vptr p) {
  for (uint32_t i = 0; i < g->n; i++)
    if (g->v[i].inc == p.inc) {
      g->v[i].bytes += p.size;
      return;
    }
  if (g->n == g->cap) {
    uint32_t cap = g->cap ? g->cap * 2 : 8;
    void *v = realloc(g->v, cap * sizeof *g->v);
    if (!v) return; /* an undercount only delays collection */
    g->v = v;
    g->cap = cap;
  }
  g->v[g->n].inc = p.inc;
  g->v[g->n].bytes = p.size;
  g->n++;
}

void garbage_apply(const garbage_list *g, region_desc *d) {
  for (uint32_t i = 0; i < g->n; i++) {
    vlog_seg *s = region_desc_find_vlog(d, g->v[i].inc);
    if (!s) continue;
    s->garbage += g->v[i].bytes;
    if (s->garbage > (uint64_t)SEG * s->nsegs) s->garbage = (uint64_t)SEG * s->nsegs;
  }
}

void garbage_free(garbage_list *g) {
  free(g->v);
  memset(g, 0, sizeof *g);
}

void garbage_close_head(region_desc *d, vptr tail) {
  vlog_seg *s = region_desc_find_vlog(d, tail.inc);
  if (!s) return;
  assert(s->nsegs == 1 && tail.size <= SEG);
  s->garbage += tail.size;
  if (s->garbage > SEG) s->garbage = SEG;
  s->open = VLOG_CLOSED;
  s->end = 0;
}

static int edit_close_heads(region_desc *d, void *arg, seg_list *freed) {
  (void)freed;
  const garbage_list *g = arg;
  for (uint32_t i = 0; i < g->n; i++)
    garbage_close_head(d, (vptr){0, 0, g->v[i].inc, (uint32_t)g->v[i].bytes});
  return PAR_OK;
}

int garbage_close_heads(par_region *r, const garbage_list *tails) {
  return region_persist(r, edit_close_heads, (void *)tails);
}

static int edit_add_garbage(region_desc *d, void *arg, seg_list *freed) {
  (void)freed;
  garbage_apply(arg, d);
  return PAR_OK;
}

int garbage_persist(par_region *r, const garbage_list *g) {
  return region_persist(r, edit_add_garbage, (void *)g);
}

int crash_losses_add_unlogged(crash_losses *c, uint64_t first, uint64_t last) {
  assert(first <= last && (!c->nunlogged || c->unlogged[c->nunlogged - 1][1] < first));
  if (c->nunlogged == c->cap) {
    uint32_t cap = c->cap ? c->cap * 2 : 16;
    void *v = realloc(c->unlogged, cap * sizeof *c->unlogged);
    if (!v) return par_error(PAR_ENOMEM, "lost LSN ranges");
    c->unlogged = v;
    c->cap = cap;
  }
  c->unlogged[c->nunlogged][0] = first;
  c->unlogged[c->nunlogged++][1] = last;
  return PAR_OK;
}

void crash_losses_free(crash_losses *c) {
  garbage_free(&c->values);
  free(c->unlogged);
  memset(c, 0, sizeof *c);
}

/* Whether lsn is past last or in one of c's unlogged ranges. */
static int lost_lsn(const crash_losses *c, uint64_t last, uint64_t lsn) {
  if (lsn > last) return 1;
  uint32_t lo = 0, hi = c->nunlogged;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (c->unlogged[mid][1] < lsn) lo = mid + 1;
    else hi = mid;
  }
  return lo < c->nunlogged && c->unlogged[lo][0] <= lsn;
}

/* The tail and the records of lost writes of each open head (gc.h); a head
 * that could not be read is marked to stay open (nsegs 0). */
static void count_open_heads(par_region *r, gc_task *open, uint32_t n, uint64_t last, crash_losses *c) {
  garbage_list *g = &c->values;
  uint8_t *buf = file_buf_alloc(SEG);
  for (uint32_t i = 0; i < n; i++) {
    if (!buf || file_read(region_file(r), buf, SEG, seg_offset(open[i].seg)) != PAR_OK) {
      open[i].nsegs = 0;
      continue;
    }
    uint32_t off = 0, seed = vlog_seed(region_id(r), open[i].inc);
    vlog_record rec;
    for (; vlog_next(buf, &off, seed, &rec) == PAR_OK; off += rec.size)
      if (lost_lsn(c, last, rec.lsn)) garbage_add(g, (vptr){open[i].seg, off, open[i].inc, rec.size});
    uint32_t used = ALIGN_UP(off, PAR_BLOCK);
    garbage_add(g, (vptr){open[i].seg, used, open[i].inc, SEG - used});
  }
  free(buf);
}

/* The runs whose value the crash lost (gc.h), newest first, back to the
 * first the levels cover. */
static void count_lost_runs(par_region *r, const gc_task *runs, uint32_t n, uint64_t covered, uint64_t last,
                            crash_losses *c) {
  uint8_t *buf = file_buf_alloc(PAR_BLOCK);
  for (uint32_t i = n; buf && i-- > 0;) {
    if (file_read(region_file(r), buf, PAR_BLOCK, seg_offset(runs[i].seg)) != PAR_OK) break;
    uint64_t size = (uint64_t)dec32(buf + 4) + VLOG_HDR, lsn = dec64(buf + 8);
    int whole = size > (uint64_t)SEG * (runs[i].nsegs - 1) && size <= (uint64_t)SEG * runs[i].nsegs;
    /* A listed run holds its own record (vlog_append_huge), so a header
     * that does not describe it is damage: garbage too. */
    if (!whole || lost_lsn(c, last, lsn)) garbage_add(&c->values, (vptr){runs[i].seg, 0, runs[i].inc, SEG});
    else if (lsn <= covered) break; /* runs are listed in LSN order: the older ones are older still */
  }
  free(buf);
}

typedef struct crash_garbage {
  const garbage_list *g;
  gc_task *open, *runs;
  uint32_t nopen, nruns;
  uint64_t covered;
} crash_garbage;

/* The open heads and the newest runs of the description (region_read_desc).
 * Without the memory to list them, none is counted this time. */
static void list_crash_suspects(const region_desc *d, void *arg) {
  crash_garbage *c = arg;
  if (!d) return;
  c->covered = d->covered_lsn;
  c->open = d->nvlog ? malloc(d->nvlog * sizeof *c->open) : NULL;
  c->runs = d->nvlog ? malloc(d->nvlog * sizeof *c->runs) : NULL;
  for (uint32_t i = 0; c->open && c->runs && i < d->nvlog; i++) {
    const vlog_seg *s = &d->vlog[i];
    if (s->open == VLOG_OPEN) c->open[c->nopen++] = (gc_task){s->seg, s->inc, 1};
    else if (s->nsegs > 1 && !s->garbage) c->runs[c->nruns++] = (gc_task){s->seg, s->inc, s->nsegs};
  }
}

static int edit_crash_garbage(region_desc *d, void *arg, seg_list *freed) {
  (void)freed;
  const crash_garbage *c = arg;
  garbage_apply(c->g, d);
  for (uint32_t i = 0; i < c->nopen; i++) {
    vlog_seg *s = c->open[i].nsegs ? region_desc_find_vlog(d, c->open[i].inc) : NULL;
    if (s) s->open = VLOG_CLOSED;
  }
  return PAR_OK;
}

int gc_count_crash_garbage(par_region *r, uint64_t last, crash_losses *lost) {
  crash_garbage c = {.g = &lost->values};
  region_read_desc(r, list_crash_suspects, &c);
  count_open_heads(r, c.open, c.nopen, last, lost);
  count_lost_runs(r, c.runs, c.nruns, c.covered, last, lost);
  /* Applied in one record; closes the open heads too (their tails were added). */
  int rc = PAR_OK;
  if (c.g->n || c.nopen) rc = region_persist(r, edit_crash_garbage, &c);
  crash_losses_free(lost);
  free(c.open);
  free(c.runs);
  return rc;
}

/* The segments the region's large logs hold in memory (region_large_held). */
typedef struct held_segs {
  uint32_t inc[4];
  uint32_t n;
} held_segs;

static void held_by_logs(par_region *r, held_segs *h) { h->n = region_large_held(r, h->inc); }

static int is_held(const held_segs *h, uint32_t inc) {
  for (uint32_t i = 0; i < h->n; i++)
    if (h->inc[i] == inc) return 1;
  return 0;
}

static int is_pending(const gc_state *g, uint32_t inc) {
  for (uint32_t i = 0; i < g->npending; i++)
    if (g->pending[i].inc == inc) return 1;
  return 0;
}

/* What collecting s frees: a run holds one value, so any garbage means all
 * of it. */
static uint64_t gc_score(const vlog_seg *s) {
  return s->nsegs > 1 && s->garbage ? (uint64_t)SEG * s->nsegs : s->garbage;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

void gc_note_settled(gc_state *g, uint32_t inc) {
  pthread_mutex_lock(&g->settled_mu);
  if (g->nsettled == g->settled_cap) {
    uint32_t cap = g->settled_cap ? g->settled_cap * 2 : 64;
    uint32_t *v = realloc(g->settled, cap * sizeof *v);
    if (v) g->settled = v;
    uint32_t *t = v ? realloc(g->settled_tail, cap * sizeof *t) : NULL;
    if (t) {
      g->settled_tail = t;
      g->settled_cap = cap;
    }
  }
  if (g->nsettled < g->settled_cap) {
    uint32_t i = g->nsettled++;
    for (; i > 0 && g->settled[i - 1] > inc; i--) {
      g->settled[i] = g->settled[i - 1];
      g->settled_tail[i] = g->settled_tail[i - 1];
    }
    g->settled[i] = inc;
    g->settled_tail[i] = 0;
  }
  pthread_mutex_unlock(&g->settled_mu);
}

/* Where inc is in the settled list (settled_mu held), or nsettled. */
static uint32_t settled_index(const gc_state *g, uint32_t inc) {
  uint32_t lo = 0, hi = g->nsettled;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (g->settled[mid] < inc) lo = mid + 1;
    else hi = mid;
  }
  return lo < g->nsettled && g->settled[lo] == inc ? lo : g->nsettled;
}

void gc_note_left_tail(gc_state *g, uint32_t inc, uint32_t tail) {
  pthread_mutex_lock(&g->settled_mu);
  uint32_t i = settled_index(g, inc);
  if (i < g->nsettled) g->settled_tail[i] = tail;
  pthread_mutex_unlock(&g->settled_mu);
}

/* A dropped segment's incarnation is never used again. */
static void forget_settled(gc_state *g, uint32_t inc) {
  pthread_mutex_lock(&g->settled_mu);
  uint32_t i = settled_index(g, inc);
  if (i < g->nsettled) {
    uint32_t after = g->nsettled - i - 1;
    memmove(g->settled + i, g->settled + i + 1, after * sizeof *g->settled);
    memmove(g->settled_tail + i, g->settled_tail + i + 1, after * sizeof *g->settled_tail);
    g->nsettled--;
  }
  pthread_mutex_unlock(&g->settled_mu);
}

/* What collecting s is worth to gc_pick (settled_mu held): its score, less
 * a settled segment's tail (gc_note_left_tail). */
static uint64_t pick_score(const gc_state *g, const vlog_seg *s) {
  uint64_t score = gc_score(s);
  uint32_t i = s->nsegs == 1 ? settled_index(g, s->inc) : g->nsettled;
  uint64_t tail = i < g->nsettled ? g->settled_tail[i] : 0;
  return score > tail ? score - tail : 0;
}

typedef struct copyable {
  gc_state *g;
  uint32_t *v, n;
  int rc;
} copyable;

static void list_copyable(const region_desc *d, void *arg) {
  copyable *c = arg;
  gc_state *g = c->g;
  c->v = d && d->nvlog ? malloc(d->nvlog * sizeof *c->v) : NULL;
  if (d && d->nvlog && !c->v) c->rc = par_error(PAR_ENOMEM, "copyable large-log segments");
  pthread_mutex_lock(&g->settled_mu);
  for (uint32_t i = 0; c->v && i < d->nvlog; i++) {
    const vlog_seg *s = &d->vlog[i];
    if (s->nsegs == 1 && !is_pending(g, s->inc) && !sorted_u32_contains(g->settled, g->nsettled, s->inc))
      c->v[c->n++] = s->inc;
  }
  pthread_mutex_unlock(&g->settled_mu);
}

int gc_copyable_segments(par_region *r, uint32_t **incs, uint32_t *n) {
  copyable c = {.g = region_gc(r)};
  region_views_lock(r);
  region_read_desc(r, list_copyable, &c);
  region_views_unlock(r);
  if (c.v) qsort(c.v, c.n, sizeof *c.v, cmp_u32);
  *incs = c.v;
  *n = c.n;
  return c.rc;
}

/* The best candidate of a description (region_read_desc): the segment with
 * the highest score over the threshold that no log holds, GC is not
 * waiting to drop and did not just fail on. */
typedef struct candidate {
  gc_state *g;
  const held_segs *held;
  uint64_t best;
  gc_task t;
} candidate;

static void find_candidate(const region_desc *d, void *arg) {
  candidate *c = arg;
  gc_state *g = c->g;
  pthread_mutex_lock(&g->settled_mu);
  for (uint32_t i = 0; d && i < d->nvlog; i++) {
    const vlog_seg *s = &d->vlog[i];
    if (is_held(c->held, s->inc) || s->inc == g->skip_inc || is_pending(g, s->inc)) continue;
    uint64_t score = pick_score(g, s);
    if (score >= g->threshold && score > c->best) {
      c->best = score;
      c->t = (gc_task){s->seg, s->inc, s->nsegs};
    }
  }
  pthread_mutex_unlock(&g->settled_mu);
}

int gc_pick(par_region *r, gc_task *t, int dry) {
  gc_state *g = region_gc(r);
  /* A relocation appends to the large log and the WAL, which start only
   * after the region's WAL replay (whose flushes wake the workers). */
  if (g->running || region_is_closing(r) || !region_is_logging(r)) return 0;
  held_segs held;
  held_by_logs(r, &held); /* before the catalog's lock: an appender takes it under a log's lock */
  candidate c = {.g = g, .held = &held};
  region_read_desc(r, find_candidate, &c);
  /* A head taken and listed since the first look: the next pick decides. */
  held_by_logs(r, &held);
  if (c.best && is_held(&held, c.t.inc)) c.best = 0;
  if (!c.best) return 0;
  *t = c.t;
  if (!dry) g->running = 1;
  return 1;
}

typedef struct debt {
  gc_state *g;
  const held_segs *held;
  uint64_t owed, log_bytes;
} debt;

static void count_debt(const region_desc *d, void *arg) {
  debt *c = arg;
  gc_state *g = c->g;
  pthread_mutex_lock(&g->settled_mu);
  for (uint32_t i = 0; d && i < d->nvlog; i++) {
    const vlog_seg *s = &d->vlog[i];
    uint64_t score = pick_score(g, s);
    c->log_bytes += (uint64_t)SEG * s->nsegs;
    if (!is_held(c->held, s->inc) && !is_pending(g, s->inc) && score >= g->threshold) c->owed += score;
  }
  pthread_mutex_unlock(&g->settled_mu);
}

void gc_note_owed(par_region *r) {
  held_segs held;
  held_by_logs(r, &held);
  debt c = {.g = region_gc(r), .held = &held};
  region_read_desc(r, count_debt, &c);
  atomic_store(&c.g->log_bytes, c.log_bytes);
  atomic_store(&c.g->owed, c.owed);
}

uint64_t gc_owed(gc_state *g) { return atomic_load(&g->owed); }

int gc_over_debt(gc_state *g, uint64_t owed) {
  uint64_t share = atomic_load(&g->log_bytes) / GC_OWED_SHARE;
  return owed > (share > GC_OWED_FLOOR ? share : GC_OWED_FLOOR);
}

void gc_admit(par_region *r) {
  gc_state *g = region_gc(r);
  uint64_t now_owed = atomic_load(&g->owed);
  if (!gc_over_debt(g, now_owed) || now_owed == atomic_load(&g->owed_waited_out)) return;
  compaction_schedule(r);
  region_views_lock(r);
  region_note_stall(r);
  uint64_t owed, low = UINT64_MAX, since = 0;
  while (gc_over_debt(g, owed = atomic_load(&g->owed)) && !region_is_closing(r) && !region_failure(r) &&
         !g->stalled && region_is_primary(r) && region_is_logging(r)) {
    uint64_t t = clock_mono_ms();
    if (owed < low) {
      low = owed;
      since = t;
    } else if (t - since > GC_PATIENCE_MS) {
      atomic_store(&g->owed_waited_out, owed); /* the region's other writers go on too */
      break;
    }
    /* The run that lowers the debt wakes the views' waiters; the timeout
     * only bounds a missed wake-up. */
    region_views_wait_ms(r, 10);
  }
  region_views_unlock(r);
}

/* Whether the collected segment i may be dropped (the views' lock held):
 * no view that could read it is left, no log reader may still ship a value
 * in it (a value its key's newer versions made dead is still one of the
 * log's records; read_from: log_floor), and no export may still read it. */
static int droppable(const gc_state *g, uint32_t i, uint64_t oldest, uint64_t read_from) {
  return !g->exports && g->pending[i].need_seq <= oldest && g->pending[i].newest_lsn < read_from;
}

typedef struct floor_arg {
  par_region *r;
  uint64_t floor;
} floor_arg;

static void read_floor(const region_desc *d, void *arg) {
  floor_arg *f = arg;
  uint64_t pin = region_cursors_pin(f->r);
  uint64_t uncovered = d ? d->covered_lsn + 1 : 1;
  f->floor = uncovered < pin ? uncovered : pin;
}

/* The first LSN a log reader may still read: the lowest live cursor's pin,
 * or the first the levels do not cover, where a cursor opened later starts
 * (a backup that joins, after an install). Invariant: every value a log
 * record past the levels points to is readable. A segment that closed
 * after the last flush's freeze, while its merge ran, holds records past
 * the levels; dropped with the cursors alone in mind, its place was taken
 * again and a backup joining before the next flush could not be sent its
 * log (test_new_cursor_after_gc). */
static uint64_t log_floor(par_region *r) {
  floor_arg f = {r, 0};
  region_read_desc(r, read_floor, &f);
  return f.floor;
}

int gc_reclaimable(par_region *r) {
  const gc_state *g = region_gc(r);
  if (!g->npending) return 0;
  uint64_t oldest = view_oldest_seq(r), read_from = log_floor(r);
  for (uint32_t i = 0; i < g->npending; i++)
    if (droppable(g, i, oldest, read_from)) return 1;
  return 0;
}

typedef struct drop_vlog {
  uint32_t inc;
  uint32_t seg, nsegs; /* out: what to free */
} drop_vlog;

static int edit_drop_vlog(region_desc *d, void *arg, seg_list *freed) {
  drop_vlog *dv = arg;
  for (uint32_t i = 0; i < d->nvlog; i++)
    if (d->vlog[i].inc == dv->inc) {
      dv->seg = d->vlog[i].seg;
      dv->nsegs = d->vlog[i].nsegs;
      for (uint32_t k = 0; k < dv->nsegs; k++) {
        int rc = seg_list_push(freed, dv->seg + k);
        if (rc) return rc;
      }
      memmove(d->vlog + i, d->vlog + i + 1, (d->nvlog - i - 1) * sizeof *d->vlog);
      d->nvlog--;
      break;
    }
  return PAR_OK;
}

void gc_reclaim(par_region *r) {
  gc_state *g = region_gc(r);
  region_views_lock(r);
  uint32_t n = 0, *incs = NULL;
  if (!g->reclaiming && gc_reclaimable(r)) incs = malloc(g->npending * sizeof *incs);
  uint64_t oldest = view_oldest_seq(r), read_from = log_floor(r);
  for (uint32_t i = 0; incs && i < g->npending; i++)
    if (droppable(g, i, oldest, read_from)) {
      g->pending[i].dropping = 1; /* gc_pick leaves it alone: it stays pending */
      incs[n++] = g->pending[i].inc;
      /* Before the drop: an export from here on leaves the segment out and
       * tells its backups which LSNs their logs need instead. */
      if (g->pending[i].last_lsn > g->dropped_lsn) g->dropped_lsn = g->pending[i].last_lsn;
      region_raise_log_readable(r, g->pending[i].newest_lsn + 1);
    }
  g->reclaiming = n > 0;
  region_views_unlock(r);
  if (!n) {
    free(incs);
    return;
  }
  /* Each drop is durable before its segments can be taken again. */
  uint32_t dropped = 0;
  for (; dropped < n; dropped++) {
    drop_vlog dv = {incs[dropped], 0, 0};
    if (region_persist(r, edit_drop_vlog, &dv)) break; /* the rest stay pending, retried later */
    region_free_segments(r, dv.seg, dv.nsegs);
    atomic_fetch_add(&g->stats.freed, dv.nsegs);
    forget_settled(g, dv.inc);
  }
  if (dropped) region_trim(r);
  region_views_lock(r);
  for (uint32_t i = 0; i < g->npending;) {
    int gone = 0;
    for (uint32_t k = 0; k < dropped && !gone; k++) gone = g->pending[i].inc == incs[k];
    g->pending[i].dropping = 0;
    if (gone) g->pending[i] = g->pending[--g->npending];
    else i++;
  }
  g->reclaiming = 0;
  if (dropped && failed_for_room(region_failure(r))) { /* space came back: merges may retry */
    region_room_returned(r);
    g->stalled = 0;
  }
  region_views_wake(r);
  region_views_unlock(r);
  free(incs);
}

static int retire(par_region *r, const gc_task *t, int counted, uint64_t last_lsn, uint64_t newest_lsn);

/* What GC finds of a record: still its key's newest version (relocated),
 * dead in the device levels (durable), or dead only because of a newer
 * version in L0, which a crash may still lose: the record (in the levels,
 * or in L0 with its WAL record durable) would be its key's newest again. */
enum { REC_LIVE, REC_DEAD, REC_SHADOWED_IN_L0 };

typedef struct live_check {
  par_region *r;
  const view *w;
  uint64_t lsn;
  const vlog_record *rec;
  vptr p;
  int verdict;
  uint64_t shadow_lsn; /* the view's LSN when the verdict was REC_SHADOWED_IN_L0 */
} live_check;

static int points_at(int rc, const tree_entry *e, vptr p) {
  return rc == PAR_OK && e->cat == CAT_LARGE && e->value_len == VPTR_SIZE && vptr_equal(vptr_decode(e->value), p);
}

/* The record's verdict: lookups through the map, guarded (io/mapguard.h). */
static int check_live(void *arg) {
  live_check *c = arg;
  tree_entry e;
  int rc = region_lookup(c->r, c->w, c->lsn, c->rec->key, c->rec->key_len, NULL, &e);
  if (rc && rc != PAR_NOT_FOUND) return rc;
  if (points_at(rc, &e, c->p)) {
    c->verdict = REC_LIVE;
    return PAR_OK;
  }
  /* Not in L0: the lookup's answer came from the levels, which a crash
   * cannot take back. In L0, whether or not the levels point at the record:
   * the record itself may be in L0 too, logged before the newer write. */
  c->verdict = view_l0_holds(c->w, c->lsn, c->rec->key, c->rec->key_len) ? REC_SHADOWED_IN_L0 : REC_DEAD;
  return PAR_OK;
}

/* region_relocate's check: the record's verdict in the current view. */
static int still_live(void *arg, par_region *r, const view *w, uint64_t lsn, int *live) {
  live_check *c = arg;
  c->r = r;
  c->w = w;
  c->lsn = lsn;
  int rc = mapguard_run(check_live, c);
  if (!rc && c->verdict == REC_SHADOWED_IN_L0) c->shadow_lsn = lsn;
  *live = !rc && c->verdict == REC_LIVE;
  return rc;
}

/* The segment is emptied only once its relocations are durable, and the
 * writes that made its other records dead too: a crash that lost such a
 * write would make the record its key's newest version again, pointing into
 * a segment freed and maybe reused. */
int gc_run(par_region *r, const gc_task *t) {
  gc_state *g = region_gc(r);
  uint8_t *buf = file_buf_alloc(t->nsegs > 1 ? PAR_BLOCK : SEG);
  if (!buf) return par_error(PAR_ENOMEM, "GC buffer");
  if (t->nsegs > 1) { /* a dead run: nothing to relocate; its record's LSN from its header */
    int rc = file_read(region_file(r), buf, PAR_BLOCK, seg_offset(t->seg));
    uint64_t lsn = rc ? 0 : dec64(buf + 8);
    free(buf);
    return rc ? rc : retire(r, t, 0, 0, lsn);
  }
  int rc = file_read(region_file(r), buf, SEG, seg_offset(t->seg));
  uint32_t seed = vlog_seed(region_id(r), t->inc);
  uint64_t relocated = 0, shadowed = 0, newest = 0;
  uint32_t off = 0;
  vlog_record rec;
  /* A record that does not parse is either the end of the segment's
   * records or damage: the live records behind damage must be relocated
   * before the segment is reused, so the walk looks past it. (The damaged
   * record's own value was unreadable already.) */
  while (!rc && (vlog_next(buf, &off, seed, &rec) == PAR_OK || vlog_resync(buf, &off, seed, &rec) == PAR_OK)) {
    atomic_fetch_add(&g->stats.scanned, rec.size);
    if (rec.lsn > newest) newest = rec.lsn;
    live_check c = {.rec = &rec, .p = (vptr){t->seg, off, t->inc, rec.size}};
    uint64_t lsn = 0;
    rc = region_relocate(r, &rec, still_live, &c, &lsn);
    if (c.shadow_lsn) shadowed = c.shadow_lsn;
    if (lsn) {
      relocated = lsn;
      atomic_fetch_add(&g->stats.relocated, rec.size);
    }
    off += rec.size;
  }
  free(buf);
  if (!rc && shadowed && region_unlogged_in_l0(r))
    rc = par_error(PAR_EBUSY, "a record's newer version may be an unlogged write: the segment waits for a flush");
  uint64_t durable = relocated > shadowed ? relocated : shadowed;
  if (!rc && durable) rc = region_sync_log(r, durable);
  return rc ? rc : retire(r, t, 1, relocated, newest);
}

/* Readers that start from here on see the relocated pointers: the segment
 * is freed once every older view is gone. */
static int retire(par_region *r, const gc_task *t, int counted, uint64_t last_lsn, uint64_t newest_lsn) {
  gc_state *g = region_gc(r);
  /* Records past the log's end are writes a crash lost, whose LSNs are not
   * given again yet: no log record points to them (log_floor). */
  uint64_t logged = region_last_given_lsn(r);
  if (newest_lsn > logged) newest_lsn = logged;
  int rc = PAR_OK;
  region_views_lock(r);
  if (g->npending == g->pending_cap) {
    uint32_t cap = g->pending_cap ? g->pending_cap * 2 : 4;
    void *p = realloc(g->pending, cap * sizeof *g->pending);
    if (!p) rc = par_error(PAR_ENOMEM, "GC list");
    else {
      g->pending = p;
      g->pending_cap = cap;
    }
  }
  uint64_t seq = rc ? 0 : region_republish(r, &rc);
  if (!rc) {
    g->pending[g->npending++] = (struct gc_pending){t->seg, t->inc, seq, last_lsn, newest_lsn, 0};
    if (counted) atomic_fetch_add(&g->stats.runs, 1);
  }
  region_views_unlock(r);
  return rc;
}
