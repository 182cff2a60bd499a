/* Regions: open and close, and the callbacks through which the logs grow
 * the region's description. Recovery is in recovery.c, the write path in
 * write.c and batch.c, reads in read.c, flush/compact/stats in
 * maintenance.c. */
#include <sched.h>
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "parallax/replication.h"
#include "util/clock.h"
#include "util/status.h"

view *region_acquire_view(par_region *r, uint64_t *lsn) {
  pthread_mutex_lock(&r->cur_mu);
  view *w = r->view;
  atomic_fetch_add(&w->refs, 1);
  /* Read under cur_mu: a freeze (which swaps the view under it) cannot
   * slip between the LSN and the view, so no tree in w holds a newer entry. */
  *lsn = atomic_load(&r->last_lsn);
  pthread_mutex_unlock(&r->cur_mu);
  return w;
}

view *region_view(par_region *r) { return r->view; }

void region_set_view(par_region *r, view *w) {
  pthread_mutex_lock(&r->cur_mu);
  view *old = r->view;
  r->view = w;
  pthread_mutex_unlock(&r->cur_mu);
  /* An L0 that left the region's view (a flush merged it) no longer counts
   * against the memory budget, though readers may still hold it. */
  memtable *gone[2] = {old->active, old->frozen};
  for (int i = 0; i < 2; i++)
    if (gone[i] && gone[i] != w->active && gone[i] != w->frozen) memtable_discharge(gone[i]);
  view_unref(old);
}

uint64_t region_republish(par_region *r, int *rc) {
  view *n = view_clone(r->view);
  if (!n) {
    *rc = par_error(PAR_ENOMEM, "view");
    return 0;
  }
  region_set_view(r, n);
  return n->seq;
}

/* ---- the region as GC sees it (api/region.h) ---- */

uint32_t region_id(const par_region *r) { return r->id; }
gc_state *region_gc(par_region *r) { return &r->gc; }
par_file *region_file(par_region *r) { return &r->vol->file; }
void region_views_lock(par_region *r) { pthread_mutex_lock(&r->view_mu); }
void region_views_unlock(par_region *r) { pthread_mutex_unlock(&r->view_mu); }
void region_views_wake(par_region *r) { pthread_cond_broadcast(&r->view_cv); }

void region_views_wait(par_region *r) { pthread_cond_wait(&r->view_cv, &r->view_mu); }

void region_views_wait_ms(par_region *r, uint32_t ms) {
  /* view_cv keeps the default (realtime) clock. */
  uint64_t until = clock_ns(CLOCK_REALTIME) / 1000000u + ms;
  struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};
  pthread_cond_timedwait(&r->view_cv, &r->view_mu, &ts);
}

int region_is_closing(const par_region *r) { return __atomic_load_n(&r->closing, __ATOMIC_RELAXED); }
void region_mark_closing(par_region *r) { __atomic_store_n(&r->closing, 1, __ATOMIC_RELAXED); }
int region_failure(const par_region *r) { return r->failed; }
int region_is_primary(const par_region *r) { return r->repl_role == PAR_REPL_PRIMARY; }
int region_is_logging(par_region *r) { return atomic_load(&r->logging); }

void region_room_returned(par_region *r) {
  if (failed_for_room(r->failed)) r->failed = 0;
}

void region_note_stall(par_region *r) { atomic_fetch_add(&r->stats.stalls, 1); }

void region_read_desc(par_region *r, desc_read_fn fn, void *arg) {
  pthread_mutex_lock(&r->vol->meta_mu);
  fn(catalog_find_id(&r->vol->cat, r->id), arg);
  pthread_mutex_unlock(&r->vol->meta_mu);
}

void region_free_segments(par_region *r, uint32_t seg, uint32_t n) {
  for (uint32_t k = 0; k < n; k++) segalloc_free(&r->vol->alloc, seg + k);
}

void region_trim(par_region *r) { segalloc_trim(&r->vol->alloc, 0); }

uint32_t region_large_held(par_region *r, uint32_t inc[4]) {
  uint32_t n = vlog_held(&r->hot, inc);
  return n + vlog_held(&r->cold, inc + n);
}

void region_raise_log_readable(par_region *r, uint64_t lsn) { raise_lsn(&r->log_readable_from, lsn); }

int region_sync_log(par_region *r, uint64_t lsn) { return wal_sync(&r->wal, lsn); }

/* ---- the region as compaction sees it (api/region.h) ---- */

const par_options *region_options(const par_region *r) { return &r->vol->opts; }
compaction_state *region_compaction(par_region *r) { return &r->comp; }
compaction_workers *region_workers(par_region *r) { return &r->vol->workers; }
segalloc *region_alloc(par_region *r) { return &r->vol->alloc; }
const key_source *region_keys(par_region *r) { return &r->keys; }
int region_role(const par_region *r) { return r->repl_role; }
void region_set_failure(par_region *r, int rc) { r->failed = rc; }
void region_commit_lock(par_region *r) { pthread_mutex_lock(&r->commit_mu); }
void region_commit_unlock(par_region *r) { pthread_mutex_unlock(&r->commit_mu); }
int region_logs_shipped(par_region *r) { return __atomic_load_n(&r->wal.cached, __ATOMIC_RELAXED); }
int region_persist_sync(par_region *r, uint64_t ticket) { return redolog_sync(&r->vol->log, ticket); }

/* ---- the region's description ---- */

static int persist(par_region *r, desc_edit_fn fn, void *arg, uint64_t *ticket) {
  par_volume *v = r->vol;
  pthread_mutex_lock(&v->meta_mu);
  region_desc *cur = catalog_find_id(&v->cat, r->id);
  region_desc d;
  seg_list freed = {0};
  int rc = region_desc_copy(&d, cur);
  if (!rc) rc = fn(&d, arg, &freed);
  if (!rc) region_desc_prune_parts(&d); /* parts the levels now cover */
  if (!rc) rc = redolog_put_region(&v->log, &d, freed.v, freed.n, ticket);
  if (!rc) {
    region_desc_free(cur);
    *cur = d;
    /* Bound the redo log. A failed checkpoint leaves the current stream in
     * place, which stays correct; the next commit tries again. */
    if (v->log.bytes > REDO_CHECKPOINT_BYTES) redolog_checkpoint(&v->log, &v->cat);
  } else {
    region_desc_free(&d);
  }
  pthread_mutex_unlock(&v->meta_mu);
  seg_list_free(&freed);
  return rc;
}

int region_persist_unsynced(par_region *r, desc_edit_fn fn, void *arg, uint64_t *ticket) {
  return persist(r, fn, arg, ticket);
}

/* The sync waits without meta_mu: other regions' commits and the logs'
 * segment listings append meanwhile, and one fdatasync covers several. */
int region_persist(par_region *r, desc_edit_fn fn, void *arg) {
  uint64_t ticket = 0;
  int rc = persist(r, fn, arg, &ticket);
  return rc ? rc : redolog_sync(&r->vol->log, ticket);
}

/* ---- WAL segments ---- */

typedef struct wal_add {
  wal_seg w;
} wal_add;

static int edit_add_wal(region_desc *d, void *arg, seg_list *freed) {
  (void)freed;
  const wal_add *a = arg;
  d->wal_gen = a->w.gen;
  return region_desc_add_wal(d, a->w);
}

static int take_wal_segment(void *ctx, uint32_t *seg) {
  par_region *r = ctx;
  return segalloc_alloc(&r->vol->alloc, seg);
}

static int list_wal_segment(void *ctx, uint32_t seg, uint64_t first_lsn) {
  par_region *r = ctx;
  wal_add a = {{seg, r->wal.gen, first_lsn}};
  int rc = region_persist(r, edit_add_wal, &a);
  if (rc) segalloc_free(&r->vol->alloc, seg);
  return rc;
}

/* After a crash the log may end before its last listed segments: a power
 * cut can lose every record of a segment that was allocated (and recorded
 * in the catalog) while the one before it was still being synced. Replay
 * stops at the gap (wal_replay), so those segments are dead, and the
 * session's new generation must not be listed after them: every later
 * replay would stop at the same gap before reaching it, and lose its
 * records, synced ones included. next_lsn is the first LSN replay did not
 * find; segments starting past it are dropped. */
typedef struct wal_trim {
  uint64_t next_lsn;
  seg_list dropped;
} wal_trim;

static int edit_drop_dead_wal(region_desc *d, void *arg, seg_list *freed) {
  wal_trim *t = arg;
  uint32_t n = d->nwal;
  while (n > 0 && d->wal[n - 1].first_lsn > t->next_lsn) n--;
  for (uint32_t i = n; i < d->nwal; i++)
    if (seg_list_push(freed, d->wal[i].seg) || seg_list_push(&t->dropped, d->wal[i].seg)) return PAR_ENOMEM;
  d->nwal = n;
  return PAR_OK;
}

static int drop_dead_wal(par_region *r, const region_desc *d, uint64_t last) {
  if (!d->nwal || d->wal[d->nwal - 1].first_lsn <= last + 1) return PAR_OK;
  wal_trim t = {last + 1, {0}};
  int rc = region_persist(r, edit_drop_dead_wal, &t);
  for (uint32_t i = 0; !rc && i < t.dropped.n; i++) segalloc_free(&r->vol->alloc, t.dropped.v[i]);
  seg_list_free(&t.dropped);
  return rc;
}

/* ---- large-log segments ---- */

/* Segments are taken in memory (with an incarnation from the region's
 * counter, which the listing carries into the description) and listed
 * later by the WAL's writer thread (log/vlog.h); a sorted run's at its
 * merge's commit. Records may reach a segment before its listing (a full
 * buffer is written at once), and a crash before it leaves them there, in
 * a segment free again. An incarnation is never taken twice, or the next
 * use of such a segment under it would find those records valid (it seeds
 * their checksums): a walk of the new head after a crash would take them
 * for its own, and their LSNs, below the recovered end, for writes that
 * were replayed, leaving them uncounted as garbage for good. So the
 * counter moves within a reservation the catalog holds (inc_reserved): an
 * open starts past it and reserves inc_reservation, the WAL thread's
 * listings extend it while half of it is left, and a take that would pass
 * it anyway (a burst that outran the listings) extends it itself. */
uint32_t inc_reservation = 1024;

/* Raises the reservation in memory to upto, once persisted. */
static void raise_reserved(par_region *r, uint32_t upto) {
  uint32_t cur = atomic_load(&r->inc_reserved);
  while (cur < upto && !atomic_compare_exchange_weak(&r->inc_reserved, &cur, upto)) {
  }
}

/* The reservation a listing should extend to (0: none due). */
static uint32_t reservation_due(par_region *r) {
  uint32_t next = atomic_load(&r->next_inc), reserved = atomic_load(&r->inc_reserved);
  uint32_t n = inc_reservation;
  if (reserved >= next && reserved - next >= n / 2) return 0;
  return next <= UINT32_MAX - n ? next + n : 0;
}

static int edit_reserve_incs(region_desc *d, void *arg, seg_list *freed) {
  (void)freed;
  uint32_t upto = *(const uint32_t *)arg;
  if (upto > d->inc_reserved) d->inc_reserved = upto;
  return PAR_OK;
}

/* Makes inc part of the catalog's reservation: a redo record and its
 * fdatasync when it is not yet. */
static int reserve_inc(par_region *r, uint32_t inc) {
  if (inc <= atomic_load(&r->inc_reserved)) return PAR_OK;
  pthread_mutex_lock(&r->inc_mu);
  int rc = PAR_OK;
  if (inc > atomic_load(&r->inc_reserved)) {
    uint32_t n = inc_reservation;
    if (inc > UINT32_MAX - n)
      rc = par_error(PAR_ELIMIT, "region %s has used up its large-log incarnations", r->name);
    uint32_t upto = inc + n - 1;
    if (!rc) rc = region_persist(r, edit_reserve_incs, &upto);
    if (!rc) raise_reserved(r, upto);
  }
  pthread_mutex_unlock(&r->inc_mu);
  return rc;
}

static int take_segments(par_region *r, uint32_t n, uint32_t *seg, uint32_t *inc) {
  int rc = segalloc_alloc_run(&r->vol->alloc, n, seg);
  if (rc) return rc;
  *inc = atomic_fetch_add(&r->next_inc, 1) + 1;
  if ((rc = reserve_inc(r, *inc)))
    for (uint32_t k = 0; k < n; k++) segalloc_free(&r->vol->alloc, *seg + k);
  return rc;
}

/* Bytes one large-log segment adds to the description (catalog.c). */
#define VLOG_SEG_DESC_BYTES 24u

/* The hot head takes user writes' values: it leaves the volume's last
 * SEGALLOC_RESERVE segments to merges and GC, which need room to find and
 * give back garbage (without it a full volume cannot even flush the L0
 * whose merge would show which values died), and the description's last
 * REDO_DESC_RESERVE bytes to GC and the WAL (the few heads taken and not
 * yet listed come out of that reserve: the listing itself never fails for
 * room). */
static int take_hot(void *ctx, uint32_t n, uint32_t *seg, uint32_t *inc) {
  par_region *r = ctx;
  if (segalloc_room(&r->vol->alloc) < (uint64_t)n + SEGALLOC_RESERVE)
    return par_error(PAR_ENOSPC, "the volume is full: its last %u segments are kept for compaction and GC",
                     SEGALLOC_RESERVE);
  pthread_mutex_lock(&r->vol->meta_mu);
  size_t len = redolog_region_payload(catalog_find_id(&r->vol->cat, r->id), 0) + VLOG_SEG_DESC_BYTES;
  pthread_mutex_unlock(&r->vol->meta_mu);
  if (len + REDO_DESC_RESERVE > redolog_payload_limit)
    return par_error(PAR_ELIMIT, "region %s: its description would take %zu bytes of the %u a redo record "
                     "holds, %u of which are kept for GC and the WAL", r->name, len,
                     redolog_payload_limit, REDO_DESC_RESERVE);
  return take_segments(r, n, seg, inc);
}

/* The cold head takes GC's relocations: it may use the space and the
 * description room the hot head leaves. Its records are settled: merges
 * into the last level do not copy them (gc.h). */
static int take_cold(void *ctx, uint32_t n, uint32_t *seg, uint32_t *inc) {
  par_region *r = ctx;
  int rc = take_segments(r, n, seg, inc);
  if (!rc) gc_note_settled(&r->gc, *inc);
  return rc;
}

/* A merge's sorted run (log/sorted_run.h) is an optimisation: it leaves a
 * quarter of the volume's limit to user writes, merges and GC (a copy
 * takes room until GC frees the segment it emptied), and the description
 * the room the hot head leaves, counting the segments the run took and the
 * commit will list. */
int region_take_sorted(void *ctx, uint32_t ntaken, uint32_t *seg, uint32_t *inc) {
  par_region *r = ctx;
  uint64_t keep = SEGALLOC_RESERVE + r->vol->file.limit / PAR_SEGMENT_SIZE / 4;
  if (segalloc_room(&r->vol->alloc) < 1u + keep) return PAR_ENOSPC;
  pthread_mutex_lock(&r->vol->meta_mu);
  size_t len = redolog_region_payload(catalog_find_id(&r->vol->cat, r->id), 0) +
               (size_t)(ntaken + 1) * VLOG_SEG_DESC_BYTES;
  pthread_mutex_unlock(&r->vol->meta_mu);
  if (len + REDO_DESC_RESERVE > redolog_payload_limit) return PAR_ELIMIT;
  return take_segments(r, 1, seg, inc);
}

typedef struct vlog_listing {
  const vlog_taken *taken;
  const vptr *left;
  uint32_t ntaken, nleft;
  uint32_t reserve; /* the incarnation reservation's new end, or 0 */
} vlog_listing;

static int edit_list_vlog(region_desc *d, void *arg, seg_list *freed) {
  (void)freed;
  const vlog_listing *a = arg;
  for (uint32_t i = 0; i < a->ntaken; i++) {
    const vlog_taken *t = &a->taken[i];
    assert(t->inc <= d->inc_reserved); /* taken within the reservation (take_segments) */
    if (t->inc > d->next_inc) d->next_inc = t->inc;
    /* A single segment becomes a head; a run holds one huge value, written whole. */
    int rc = region_desc_add_vlog(d, (vlog_seg){.seg = t->seg, .inc = t->inc, .nsegs = t->n, .open = t->n == 1 ? VLOG_OPEN : VLOG_CLOSED});
    if (rc) return rc;
  }
  for (uint32_t i = 0; i < a->nleft; i++) garbage_close_head(d, a->left[i]);
  if (a->reserve > d->inc_reserved) d->inc_reserved = a->reserve;
  return PAR_OK;
}

static int list_vlog(void *ctx, const vlog_taken *taken, uint32_t ntaken, const vptr *left, uint32_t nleft) {
  par_region *r = ctx;
  vlog_listing a = {taken, left, ntaken, nleft, reservation_due(r)};
  /* Before the tails count: GC must never see one of its own segments'
   * tails as garbage worth a collection (gc.h, gc_note_left_tail). */
  for (uint32_t i = 0; i < nleft; i++) gc_note_left_tail(&r->gc, left[i].inc, left[i].size);
  int rc = region_persist(r, edit_list_vlog, &a);
  if (!rc && a.reserve) raise_reserved(r, a.reserve);
  return rc;
}

static void give_back_vlog(void *ctx, uint32_t seg, uint32_t n) {
  par_region *r = ctx;
  for (uint32_t k = 0; k < n; k++) segalloc_free(&r->vol->alloc, seg + k);
}

/* The WAL's pointer records reach the disk after the values they point to,
 * and those are durable first: one fdatasync covering both would let a power
 * cut keep the WAL block and lose the value (the key would then fail its
 * reads; for a GC relocation, the index would point at the torn copy while
 * the next GC pass frees the good one). The segments the large logs took
 * since are listed first (log/vlog.h). A send-index backup's large-log
 * mirror, where apply puts the values its log copy points to, is written and
 * synced here too (repl/mirror.c). Called by the WAL writer thread only, which
 * alone touches large_synced. */
static uint64_t covered_lsn(par_region *r) {
  pthread_mutex_lock(&r->vol->meta_mu);
  uint64_t covered = catalog_find_id(&r->vol->cat, r->id)->covered_lsn;
  pthread_mutex_unlock(&r->vol->meta_mu);
  return covered;
}

static int flush_large_logs(void *ctx) {
  par_region *r = ctx;
  uint64_t durable = wal_durable_lsn(&r->wal), covered = covered_lsn(r);
  int rc = repl_mirror_write_pending(r);
  if (!rc) rc = vlog_list_pending(&r->hot, durable, covered);
  if (!rc) rc = vlog_list_pending(&r->cold, durable, covered);
  if (!rc) rc = vlog_flush(&r->hot);
  if (!rc) rc = vlog_flush(&r->cold);
  uint64_t written = vlog_written(&r->hot) + vlog_written(&r->cold) + atomic_load(&r->repl_mirror_written);
  if (!rc && written != r->large_synced) {
    rc = file_sync(&r->vol->file);
    if (!rc) r->large_synced = written;
  }
  return rc;
}

/* The WAL thread writes the large log's sealed buffers (region_apply kicks
 * it), so that the writer whose append filled one goes on appending while
 * the buffer is written; a write of it measured 0.47 ms, a third of a
 * single writer's time in par_bench's SD load when the writer waited for
 * it. A failure fails the large log: later writes, syncs and flushes
 * report it. */
static void write_sealed_large(void *ctx) {
  par_region *r = ctx;
  (void)vlog_write_sealed(&r->hot);
}

int region_logs_listed(par_region *r) {
  return !wal_unlisted(&r->wal) && !vlog_unlisted(&r->hot) && !vlog_unlisted(&r->cold);
}

/* ---- open / close ---- */

static void region_free(par_region *r) {
  view_unref(r->view);
  gc_state_free(&r->gc);
  repl_mirror_free(r);
  free(r->repl_medium);
  pthread_mutex_destroy(&r->write_mu);
  pthread_mutex_destroy(&r->repl_apply_mu);
  pthread_mutex_destroy(&r->repl_run_mu);
  pthread_mutex_destroy(&r->commit_mu);
  pthread_mutex_destroy(&r->view_mu);
  pthread_mutex_destroy(&r->cur_mu);
  pthread_mutex_destroy(&r->live_mu);
  pthread_mutex_destroy(&r->inc_mu);
  pthread_cond_destroy(&r->view_cv);
  free(r);
}

/* Takes r off the open list; once no writer holds a pin on it (api/budget.c
 * pins a region it found on the list while it schedules it), r may be freed. */
static void unlink_open(par_volume *v, par_region *r) {
  pthread_mutex_lock(&v->meta_mu);
  for (par_region **p = &v->open; *p; p = &(*p)->next_open)
    if (*p == r) {
      *p = r->next_open;
      break;
    }
  pthread_mutex_unlock(&v->meta_mu);
  while (atomic_load(&r->budget_pins)) sched_yield();
}

static int region_open(par_volume *v, const char *name, int create, par_region **out);

/* Each session starts a new WAL generation in a new segment, and WAL
 * segments go only when a flush of L0 covers them: a process that keeps
 * crashing (or closing) soon after it opens holds a segment per session
 * while its L0 never fills. When the log replayed at open holds more
 * segments than a full L0 needs plus REPLAY_SLACK_SEGMENTS session starts,
 * the replayed L0 is frozen here and flushed by a worker (the open does not
 * wait), so the WAL's space stays bounded however short the sessions. */
#define REPLAY_SLACK_SEGMENTS 4u

static void freeze_short_sessions(par_region *r, uint32_t replayed_segments) {
  uint64_t full_l0 = (r->vol->opts.l0_size + PAR_SEGMENT_SIZE - 1) / PAR_SEGMENT_SIZE;
  if (replayed_segments <= full_l0 + REPLAY_SLACK_SEGMENTS) return;
  atomic_store(&r->freeze_wanted, 1); /* the worker scheduled at the end of the open freezes */
}

/* Opens and closes hold region_lock shared: a checkpoint sees no region
 * half open or half closed (api/checkpoint.c). */
PAR_API int par_region_open(par_volume *v, const char *name, int create, par_region **out) {
  if (!v || !name || !out) return par_error(PAR_EINVAL, "par_region_open: NULL argument");
  pthread_rwlock_rdlock(&v->region_lock);
  int rc = region_open(v, name, create, out);
  pthread_rwlock_unlock(&v->region_lock);
  return rc;
}

static int region_open(par_volume *v, const char *name, int create, par_region **out) {
  *out = NULL;
  if (!*name || strlen(name) > PAR_MAX_REGION_NAME)
    return par_error(strlen(name) ? PAR_ETOOBIG : PAR_EINVAL, "region name must be 1..%u bytes", PAR_MAX_REGION_NAME);
  par_region *r = calloc(1, sizeof *r);
  if (!r) return par_error(PAR_ENOMEM, "region");
  r->vol = v;
  pthread_mutex_init(&r->write_mu, NULL);
  r->write_spin_ns = WRITE_SPIN_MAX_NS;
  pthread_mutex_init(&r->repl_apply_mu, NULL);
  pthread_mutex_init(&r->repl_run_mu, NULL);
  r->repl_run.k = -1;
  pthread_mutex_init(&r->commit_mu, NULL);
  pthread_mutex_init(&r->view_mu, NULL);
  pthread_mutex_init(&r->cur_mu, NULL);
  pthread_mutex_init(&r->live_mu, NULL);
  gc_state_init(&r->gc, v->opts.gc_threshold_pct);
  pthread_mutex_init(&r->inc_mu, NULL);
  pthread_cond_init(&r->view_cv, NULL);

  /* Claim the region in the catalog and copy its description. */
  pthread_mutex_lock(&v->meta_mu);
  region_desc *cur = catalog_find(&v->cat, name);
  int rc = PAR_OK;
  if (!cur && create) {
    rc = volume_create_region(v, name);
    cur = catalog_find(&v->cat, name);
  } else if (!cur) {
    rc = par_error(PAR_ENOENT, "no region named '%s'", name);
  }
  for (par_region *o = v->open; !rc && o; o = o->next_open)
    if (o->id == cur->id) rc = par_error(PAR_EBUSY, "region '%s' is already open", name);
  region_desc d;
  memset(&d, 0, sizeof d);
  if (!rc) rc = region_desc_copy(&d, cur);
  if (!rc) {
    r->id = cur->id;
    r->keys = (key_source){&v->file, r->id};
    snprintf(r->name, sizeof r->name, "%s", name);
    r->next_open = v->open;
    v->open = r;
  }
  pthread_mutex_unlock(&v->meta_mu);
  if (rc) {
    region_free(r);
    return rc;
  }

  uint64_t last;
  crash_losses lost = {0};
  /* Before the replay: its merges into the last level take incarnations
   * for their sorted runs. Past the reservation: the last session may have
   * taken any of it. */
  uint32_t inc_start = d.inc_reserved > d.next_inc ? d.inc_reserved : d.next_inc;
  atomic_store(&r->next_inc, inc_start);
  atomic_store(&r->inc_reserved, inc_start);
  /* On a full volume the takes reserve, or fail as they would anyway. */
  if ((rc = reserve_inc(r, inc_start + 1)) == PAR_ENOSPC) rc = PAR_OK;
  if (!rc) rc = region_recover(r, &d, &last, &lost);
  if (!rc) rc = drop_dead_wal(r, &d, last);
  uint32_t gen = d.wal_gen + 1;
  uint32_t replayed_segments = d.nwal;
  atomic_store(&r->log_readable_from, d.covered_lsn + 1);
  region_desc_free(&d);
  if (!rc) {
    r->next_lsn = r->open_lsn = last + 1;
    atomic_store(&r->last_lsn, last);
    rc = vlog_init(&r->hot, &v->file, r->id, take_hot, list_vlog, give_back_vlog, r);
    if (!rc) rc = vlog_init(&r->cold, &v->file, r->id, take_cold, list_vlog, give_back_vlog, r);
    /* On a full volume the count waits for a later session: nothing is lost. */
    if (!rc && (rc = gc_count_crash_garbage(r, last, &lost)) == PAR_ENOSPC) rc = PAR_OK;
    if (!rc && (rc = large_heads_resume(r)) == PAR_ENOSPC) rc = PAR_OK;
    if (!rc) rc = wal_start(&r->wal, &v->file, r->id, gen, v->opts.durability_interval_ms, last,
                            take_wal_segment, list_wal_segment, flush_large_logs, write_sealed_large, r);
    if (!rc) atomic_store(&r->logging, 1);
    if (!rc) freeze_short_sessions(r, replayed_segments);
  }
  crash_losses_free(&lost); /* when the count was not reached */
  if (rc) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", par_last_error());
    pthread_mutex_lock(&r->view_mu);
    __atomic_store_n(&r->closing, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&r->view_mu);
    compaction_drain(r);
    unlink_open(v, r);
    if (r->hot.buf) vlog_destroy(&r->hot);
    if (r->cold.buf) vlog_destroy(&r->cold);
    region_free(r);
    return par_error(rc, "cannot open region '%s': %s", name, msg);
  }
  region_warm_start(r);
  compaction_schedule(r);
  *out = r;
  return PAR_OK;
}

static int region_close(par_region *r);

PAR_API int par_region_close(par_region *r) {
  if (!r) return par_error(PAR_EINVAL, "par_region_close: NULL region");
  par_volume *v = r->vol;
  pthread_rwlock_rdlock(&v->region_lock);
  int rc = region_close(r);
  pthread_rwlock_unlock(&v->region_lock);
  return rc;
}

static int region_close(par_region *r) {
  par_volume *v = r->vol;
  /* Unlogged writes exist only in L0: make them durable (PAR_NO_WAL). */
  int flushed = atomic_load(&r->unlogged_lsn) ? par_flush(r) : PAR_OK;
  compaction_begin_close(r);
  region_warm_join(r); /* it stops at its next segment */
  compaction_drain(r);
  int rc = wal_stop(&r->wal); /* also writes the large logs' buffers */
  /* On a full volume the count waits for a later session: nothing is lost. */
  if (!rc && (rc = large_heads_park(r)) == PAR_ENOSPC) rc = PAR_OK;
  vlog_destroy(&r->hot);
  vlog_destroy(&r->cold);
  unlink_open(v, r);
  region_free(r);
  return rc ? rc : flushed;
}
