#include "gc/gc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/internal.h"
#include "io/mapguard.h"
#include "parallax/replication.h"
#include "util/clock.h"
#include "util/sorted_u32.h"
#include "util/status.h"

#define SEG ((uint32_t)PAR_SEGMENT_SIZE)

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
    if (!buf || file_read(&r->vol->file, buf, SEG, seg_offset(open[i].seg)) != PAR_OK) {
      open[i].nsegs = 0;
      continue;
    }
    uint32_t off = 0, seed = vlog_seed(r->id, open[i].inc);
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
    if (file_read(&r->vol->file, buf, PAR_BLOCK, seg_offset(runs[i].seg)) != PAR_OK) break;
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
  const gc_task *open;
  uint32_t nopen;
} crash_garbage;

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
  garbage_list *g = &lost->values;
  pthread_mutex_lock(&r->vol->meta_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  uint32_t nopen = 0, nruns = 0;
  uint64_t covered = d ? d->covered_lsn : 0;
  gc_task *open = d && d->nvlog ? malloc(d->nvlog * sizeof *open) : NULL;
  gc_task *runs = d && d->nvlog ? malloc(d->nvlog * sizeof *runs) : NULL;
  for (uint32_t i = 0; open && runs && i < d->nvlog; i++) {
    const vlog_seg *s = &d->vlog[i];
    if (s->open == VLOG_OPEN) open[nopen++] = (gc_task){s->seg, s->inc, 1};
    else if (s->nsegs > 1 && !s->garbage) runs[nruns++] = (gc_task){s->seg, s->inc, s->nsegs};
  }
  pthread_mutex_unlock(&r->vol->meta_mu);
  count_open_heads(r, open, nopen, last, lost);
  count_lost_runs(r, runs, nruns, covered, last, lost);
  /* Applied in one record; closes the open heads too (their tails were added). */
  int rc = PAR_OK;
  if (g->n || nopen) {
    crash_garbage c = {g, open, nopen};
    rc = region_persist(r, edit_crash_garbage, &c);
  }
  crash_losses_free(lost);
  free(open);
  free(runs);
  return rc;
}

/* The segments the region's large logs hold in memory (vlog_held): GC must
 * not read one, or it would miss the records not written yet and free the
 * segment under them. */
typedef struct held_segs {
  uint32_t inc[4];
  uint32_t n;
} held_segs;

static void held_by_logs(par_region *r, held_segs *h) {
  h->n = vlog_held(&r->hot, h->inc);
  h->n += vlog_held(&r->cold, h->inc + h->n);
}

static int is_held(const held_segs *h, uint32_t inc) {
  for (uint32_t i = 0; i < h->n; i++)
    if (h->inc[i] == inc) return 1;
  return 0;
}

static int is_pending(const par_region *r, uint32_t inc) {
  for (uint32_t i = 0; i < r->npending; i++)
    if (r->pending[i].inc == inc) return 1;
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

void gc_note_settled(par_region *r, uint32_t inc) {
  pthread_mutex_lock(&r->settled_mu);
  if (r->nsettled == r->settled_cap) {
    uint32_t cap = r->settled_cap ? r->settled_cap * 2 : 64;
    uint32_t *v = realloc(r->settled, cap * sizeof *v);
    if (v) r->settled = v;
    uint32_t *t = v ? realloc(r->settled_tail, cap * sizeof *t) : NULL;
    if (t) {
      r->settled_tail = t;
      r->settled_cap = cap;
    }
  }
  if (r->nsettled < r->settled_cap) {
    uint32_t i = r->nsettled++;
    for (; i > 0 && r->settled[i - 1] > inc; i--) {
      r->settled[i] = r->settled[i - 1];
      r->settled_tail[i] = r->settled_tail[i - 1];
    }
    r->settled[i] = inc;
    r->settled_tail[i] = 0;
  }
  pthread_mutex_unlock(&r->settled_mu);
}

/* Where inc is in the settled list (settled_mu held), or nsettled. */
static uint32_t settled_index(const par_region *r, uint32_t inc) {
  uint32_t lo = 0, hi = r->nsettled;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (r->settled[mid] < inc) lo = mid + 1;
    else hi = mid;
  }
  return lo < r->nsettled && r->settled[lo] == inc ? lo : r->nsettled;
}

void gc_note_left_tail(par_region *r, uint32_t inc, uint32_t tail) {
  pthread_mutex_lock(&r->settled_mu);
  uint32_t i = settled_index(r, inc);
  if (i < r->nsettled) r->settled_tail[i] = tail;
  pthread_mutex_unlock(&r->settled_mu);
}

/* A dropped segment's incarnation is never used again. */
static void forget_settled(par_region *r, uint32_t inc) {
  pthread_mutex_lock(&r->settled_mu);
  uint32_t i = settled_index(r, inc);
  if (i < r->nsettled) {
    uint32_t after = r->nsettled - i - 1;
    memmove(r->settled + i, r->settled + i + 1, after * sizeof *r->settled);
    memmove(r->settled_tail + i, r->settled_tail + i + 1, after * sizeof *r->settled_tail);
    r->nsettled--;
  }
  pthread_mutex_unlock(&r->settled_mu);
}

/* What collecting s is worth to gc_pick (meta_mu and settled_mu held): its
 * score, less a settled segment's tail (gc_note_left_tail). */
static uint64_t pick_score(const par_region *r, const vlog_seg *s) {
  uint64_t score = gc_score(s);
  uint32_t i = s->nsegs == 1 ? settled_index(r, s->inc) : r->nsettled;
  uint64_t tail = i < r->nsettled ? r->settled_tail[i] : 0;
  return score > tail ? score - tail : 0;
}

int gc_copyable_segments(par_region *r, uint32_t **incs, uint32_t *n) {
  *incs = NULL;
  *n = 0;
  pthread_mutex_lock(&r->view_mu);
  pthread_mutex_lock(&r->vol->meta_mu);
  pthread_mutex_lock(&r->settled_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  uint32_t *v = d && d->nvlog ? malloc(d->nvlog * sizeof *v) : NULL;
  int rc = d && d->nvlog && !v ? par_error(PAR_ENOMEM, "copyable large-log segments") : PAR_OK;
  for (uint32_t i = 0; v && i < d->nvlog; i++) {
    const vlog_seg *s = &d->vlog[i];
    if (s->nsegs == 1 && !is_pending(r, s->inc) && !sorted_u32_contains(r->settled, r->nsettled, s->inc))
      v[(*n)++] = s->inc;
  }
  pthread_mutex_unlock(&r->settled_mu);
  pthread_mutex_unlock(&r->vol->meta_mu);
  pthread_mutex_unlock(&r->view_mu);
  if (v) qsort(v, *n, sizeof *v, cmp_u32);
  *incs = v;
  return rc;
}

int gc_pick(par_region *r, gc_task *t, int dry) {
  /* A relocation appends to the large log and the WAL, which start only
   * after the region's WAL replay (whose flushes wake the workers). */
  if (r->gc_running || r->closing || !atomic_load(&r->logging)) return 0;
  held_segs held;
  held_by_logs(r, &held); /* before meta_mu: an appender takes it under a log's lock */
  uint64_t threshold = (uint64_t)SEG * r->vol->opts.gc_threshold_pct / 100;
  uint64_t best = 0;
  pthread_mutex_lock(&r->vol->meta_mu);
  pthread_mutex_lock(&r->settled_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  for (uint32_t i = 0; d && i < d->nvlog; i++) {
    const vlog_seg *s = &d->vlog[i];
    if (is_held(&held, s->inc) || s->inc == r->gc_skip_inc || is_pending(r, s->inc)) continue;
    uint64_t score = pick_score(r, s);
    if (score >= threshold && score > best) {
      best = score;
      t->seg = s->seg;
      t->inc = s->inc;
      t->nsegs = s->nsegs;
    }
  }
  pthread_mutex_unlock(&r->settled_mu);
  pthread_mutex_unlock(&r->vol->meta_mu);
  /* A head taken and listed since the first look: the next pick decides. */
  held_by_logs(r, &held);
  if (best && is_held(&held, t->inc)) best = 0;
  if (best && !dry) r->gc_running = 1;
  return best > 0;
}

void gc_note_owed(par_region *r) {
  held_segs held;
  held_by_logs(r, &held);
  uint64_t threshold = (uint64_t)SEG * r->vol->opts.gc_threshold_pct / 100, owed = 0, log_bytes = 0;
  pthread_mutex_lock(&r->vol->meta_mu);
  pthread_mutex_lock(&r->settled_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  for (uint32_t i = 0; d && i < d->nvlog; i++) {
    const vlog_seg *s = &d->vlog[i];
    uint64_t score = pick_score(r, s);
    log_bytes += (uint64_t)SEG * s->nsegs;
    if (!is_held(&held, s->inc) && !is_pending(r, s->inc) && score >= threshold) owed += score;
  }
  pthread_mutex_unlock(&r->settled_mu);
  pthread_mutex_unlock(&r->vol->meta_mu);
  atomic_store(&r->gc_log_bytes, log_bytes);
  atomic_store(&r->gc_owed, owed);
}

int gc_over_debt(par_region *r, uint64_t owed) {
  uint64_t share = atomic_load(&r->gc_log_bytes) / GC_OWED_SHARE;
  return owed > (share > GC_OWED_FLOOR ? share : GC_OWED_FLOOR);
}

void gc_admit(par_region *r) {
  uint64_t now_owed = atomic_load(&r->gc_owed);
  if (!gc_over_debt(r, now_owed) || now_owed == atomic_load(&r->gc_owed_waited_out)) return;
  compaction_schedule(r);
  pthread_mutex_lock(&r->view_mu);
  atomic_fetch_add(&r->stats.stalls, 1);
  uint64_t owed, low = UINT64_MAX, since = 0;
  while (gc_over_debt(r, owed = atomic_load(&r->gc_owed)) && !r->closing && !r->failed && !r->gc_stalled &&
         r->repl_role == PAR_REPL_PRIMARY && atomic_load(&r->logging)) {
    uint64_t t = clock_mono_ms();
    if (owed < low) {
      low = owed;
      since = t;
    } else if (t - since > GC_PATIENCE_MS) {
      atomic_store(&r->gc_owed_waited_out, owed); /* the region's other writers go on too */
      break;
    }
    /* view_cv keeps the default (realtime) clock; the run that lowers the
     * debt broadcasts it, the timeout only bounds a missed wake-up. */
    uint64_t until = clock_ns(CLOCK_REALTIME) / 1000000u + 10;
    struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};
    pthread_cond_timedwait(&r->view_cv, &r->view_mu, &ts);
  }
  pthread_mutex_unlock(&r->view_mu);
}

/* Whether the collected segment i may be dropped (view_mu held): no view
 * that could read it is left, no log reader may still ship a value in it
 * (a value its key's newer versions made dead is still one of the log's
 * records; read_from: log_floor), and no export may still read it. */
static int droppable(par_region *r, uint32_t i, uint64_t oldest, uint64_t read_from) {
  return !r->repl_exports && r->pending[i].need_seq <= oldest && r->pending[i].newest_lsn < read_from;
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
  pthread_mutex_lock(&r->vol->meta_mu);
  uint64_t pin = region_cursors_pin(r);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  uint64_t uncovered = d ? d->covered_lsn + 1 : 1;
  pthread_mutex_unlock(&r->vol->meta_mu);
  return uncovered < pin ? uncovered : pin;
}

int gc_reclaimable(par_region *r) {
  if (!r->npending) return 0;
  uint64_t oldest = view_oldest_seq(r), read_from = log_floor(r);
  for (uint32_t i = 0; i < r->npending; i++)
    if (droppable(r, i, oldest, read_from)) return 1;
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
  pthread_mutex_lock(&r->view_mu);
  uint32_t n = 0, *incs = NULL;
  if (!r->reclaiming && gc_reclaimable(r)) incs = malloc(r->npending * sizeof *incs);
  uint64_t oldest = view_oldest_seq(r), read_from = log_floor(r);
  for (uint32_t i = 0; incs && i < r->npending; i++)
    if (droppable(r, i, oldest, read_from)) {
      r->pending[i].dropping = 1; /* gc_pick leaves it alone: it stays pending */
      incs[n++] = r->pending[i].inc;
      /* Before the drop: an export from here on leaves the segment out and
       * tells its backups which LSNs their logs need instead. */
      if (r->pending[i].last_lsn > r->gc_dropped_lsn) r->gc_dropped_lsn = r->pending[i].last_lsn;
      raise_lsn(&r->log_readable_from, r->pending[i].newest_lsn + 1);
    }
  r->reclaiming = n > 0;
  pthread_mutex_unlock(&r->view_mu);
  if (!n) {
    free(incs);
    return;
  }
  /* Each drop is durable before its segments can be taken again. */
  uint32_t dropped = 0;
  for (; dropped < n; dropped++) {
    drop_vlog dv = {incs[dropped], 0, 0};
    if (region_persist(r, edit_drop_vlog, &dv)) break; /* the rest stay pending, retried later */
    for (uint32_t k = 0; k < dv.nsegs; k++) segalloc_free(&r->vol->alloc, dv.seg + k);
    atomic_fetch_add(&r->stats.gc_freed, dv.nsegs);
    forget_settled(r, dv.inc);
  }
  if (dropped) segalloc_trim(&r->vol->alloc, 0);
  pthread_mutex_lock(&r->view_mu);
  for (uint32_t i = 0; i < r->npending;) {
    int gone = 0;
    for (uint32_t k = 0; k < dropped && !gone; k++) gone = r->pending[i].inc == incs[k];
    r->pending[i].dropping = 0;
    if (gone) r->pending[i] = r->pending[--r->npending];
    else i++;
  }
  r->reclaiming = 0;
  if (dropped && failed_for_room(r->failed)) { /* space came back: merges may retry */
    r->failed = 0;
    r->gc_stalled = 0;
  }
  pthread_cond_broadcast(&r->view_cv);
  pthread_mutex_unlock(&r->view_mu);
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
} live_check;

static int points_at(int rc, const tree_entry *e, vptr p) {
  return rc == PAR_OK && e->cat == CAT_LARGE && e->value_len == VPTR_SIZE && vptr_equal(vptr_decode(e->value), p);
}

/* Whether an L0 of w holds a version of key, or a range tombstone over it. */
static int in_l0(const view *w, uint64_t lsn, const void *key, size_t key_len) {
  memtable *mts[2] = {w->active, w->frozen};
  for (int i = 0; i < 2; i++)
    if (mts[i] && (memtable_get(mts[i], key, key_len, lsn) || memtable_range_hides(mts[i], key, key_len, lsn, 0)))
      return 1;
  return 0;
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
  c->verdict = in_l0(c->w, c->lsn, c->rec->key, c->rec->key_len) ? REC_SHADOWED_IN_L0 : REC_DEAD;
  return PAR_OK;
}

/* Re-appends the record at p if its key still points there (write_mu).
 * *relocated_lsn is the relocation's LSN; *shadow_lsn the view's LSN when
 * the record was found dead only because of L0. */
static int relocate(par_region *r, const vlog_record *rec, vptr p, uint64_t *relocated_lsn, uint64_t *shadow_lsn) {
  pthread_mutex_lock(&r->write_mu);
  live_check c = {.r = r, .rec = rec, .p = p};
  view *w = region_acquire_view(r, &c.lsn);
  c.w = w;
  int rc = mapguard_run(check_live, &c);
  int live = !rc && c.verdict == REC_LIVE;
  if (!rc && c.verdict == REC_SHADOWED_IN_L0) *shadow_lsn = c.lsn;
  view_unref(w);
  if (!rc && live && r->write_failed) rc = par_error(PAR_EFAILED, "the region refuses writes until a reopen");
  /* A run picked while the region was a primary may reach here after it
   * became a backup (par_repl_set_role): a relocation would then take an
   * LSN that the primary's shipped records use. The segment waits. */
  if (!rc && live && r->repl_role != PAR_REPL_PRIMARY)
    rc = par_error(PAR_EBUSY, "region '%s' is a backup now: GC relocates on primaries only", r->name);
  if (!rc && live) {
    memtable *m = region_make_room(r, &rc); /* PAR_EBUSY: never stall a compaction worker */
    uint64_t lsn = r->next_lsn;
    vptr np;
    if (m) rc = vlog_append(&r->cold, lsn, 0, rec->key, rec->key_len, rec->value, rec->value_len, &np);
    uint8_t enc[VPTR_SIZE];
    if (m && !rc) {
      vptr_encode(enc, np);
      wal_op op = {WAL_PUT_LARGE, rec->key_len, VPTR_SIZE, rec->key, enc};
      /* As a user write (write.c log_and_insert): the entry first, then the
       * record, whose LSN is spent once written. */
      mt_entry *me = memtable_entry(m, lsn, WAL_PUT_LARGE, rec->key, rec->key_len, enc, VPTR_SIZE);
      rc = me ? wal_append(&r->wal, lsn, &op, 1) : PAR_ENOMEM;
      if (!rc) {
        r->next_lsn = lsn + 1;
        if ((rc = memtable_link(m, me))) r->write_failed = rc;
      }
      if (!rc) {
        atomic_store(&r->last_lsn, lsn);
        *relocated_lsn = lsn;
        atomic_fetch_add(&r->stats.gc_relocated, rec->size);
      }
    }
  }
  pthread_mutex_unlock(&r->write_mu);
  if (!rc) rc = vlog_write_sealed(&r->cold); /* a buffer this relocation filled */
  return rc;
}

/* Whether L0 may hold writes made with PAR_NO_WAL: they become durable only
 * when a flush covers them. */
static int unlogged_in_l0(par_region *r) {
  uint64_t unlogged = atomic_load(&r->unlogged_lsn);
  if (!unlogged) return 0;
  pthread_mutex_lock(&r->vol->meta_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  int pending = !d || unlogged > d->covered_lsn;
  pthread_mutex_unlock(&r->vol->meta_mu);
  return pending;
}

/* The segment is emptied only once its relocations are durable, and the
 * writes that made its other records dead too: a crash that lost such a
 * write would make the record its key's newest version again, pointing into
 * a segment freed and maybe reused. */
int gc_run(par_region *r, const gc_task *t) {
  uint8_t *buf = file_buf_alloc(t->nsegs > 1 ? PAR_BLOCK : SEG);
  if (!buf) return par_error(PAR_ENOMEM, "GC buffer");
  if (t->nsegs > 1) { /* a dead run: nothing to relocate; its record's LSN from its header */
    int rc = file_read(&r->vol->file, buf, PAR_BLOCK, seg_offset(t->seg));
    uint64_t lsn = rc ? 0 : dec64(buf + 8);
    free(buf);
    return rc ? rc : retire(r, t, 0, 0, lsn);
  }
  int rc = file_read(&r->vol->file, buf, SEG, seg_offset(t->seg));
  uint32_t seed = vlog_seed(r->id, t->inc);
  uint64_t relocated = 0, shadowed = 0, newest = 0;
  uint32_t off = 0;
  vlog_record rec;
  /* A record that does not parse is either the end of the segment's
   * records or damage: the live records behind damage must be relocated
   * before the segment is reused, so the walk looks past it. (The damaged
   * record's own value was unreadable already.) */
  while (!rc && (vlog_next(buf, &off, seed, &rec) == PAR_OK || vlog_resync(buf, &off, seed, &rec) == PAR_OK)) {
    atomic_fetch_add(&r->stats.gc_scanned, rec.size);
    if (rec.lsn > newest) newest = rec.lsn;
    rc = relocate(r, &rec, (vptr){t->seg, off, t->inc, rec.size}, &relocated, &shadowed);
    off += rec.size;
  }
  free(buf);
  if (!rc && shadowed && unlogged_in_l0(r))
    rc = par_error(PAR_EBUSY, "a record's newer version may be an unlogged write: the segment waits for a flush");
  uint64_t durable = relocated > shadowed ? relocated : shadowed;
  if (!rc && durable) rc = wal_sync(&r->wal, durable);
  return rc ? rc : retire(r, t, 1, relocated, newest);
}

/* Readers that start from here on see the relocated pointers: the segment
 * is freed once every older view is gone. */
static int retire(par_region *r, const gc_task *t, int counted, uint64_t last_lsn, uint64_t newest_lsn) {
  /* Records past the log's end are writes a crash lost, whose LSNs are not
   * given again yet: no log record points to them (log_floor). */
  pthread_mutex_lock(&r->write_mu);
  uint64_t logged = r->next_lsn - 1;
  pthread_mutex_unlock(&r->write_mu);
  if (newest_lsn > logged) newest_lsn = logged;
  int rc = PAR_OK;
  pthread_mutex_lock(&r->view_mu);
  view *n = view_clone(r->view);
  if (!n) rc = par_error(PAR_ENOMEM, "view");
  if (!rc && r->npending == r->pending_cap) {
    uint32_t cap = r->pending_cap ? r->pending_cap * 2 : 4;
    void *p = realloc(r->pending, cap * sizeof *r->pending);
    if (!p) rc = par_error(PAR_ENOMEM, "GC list");
    else {
      r->pending = p;
      r->pending_cap = cap;
    }
  }
  if (!rc) {
    region_set_view(r, n);
    r->pending[r->npending].seg = t->seg;
    r->pending[r->npending].inc = t->inc;
    r->pending[r->npending].need_seq = n->seq;
    r->pending[r->npending].last_lsn = last_lsn;
    r->pending[r->npending].newest_lsn = newest_lsn;
    r->pending[r->npending].dropping = 0;
    r->npending++;
    if (counted) atomic_fetch_add(&r->stats.gc_runs, 1);
  } else if (n) {
    view_unref(n);
  }
  pthread_mutex_unlock(&r->view_mu);
  return rc;
}
