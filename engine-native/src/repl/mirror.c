/* A send-index backup's large-log mirror written as the log arrives
 * (Talos's value log): a shipped large value comes with its place in the
 * primary's large log, and the backup writes it there in its mirror of that
 * segment, seeded with its own region id; its log copy keeps only a pointer.
 * An install then finds the segment's records in place and copies nothing
 * of it, where the backup used to write each value twice: whole in its log
 * copy, then again when an install copied the segment.
 *
 * The primary appends a segment's records in LSN order (user writes and GC
 * relocations each append under write_mu, to one head each), and a backup
 * applies LSNs in order, so records arrive in the order of their offsets:
 * each starts where the previous ended, or at the next block after a flush's
 * padding. A mirror therefore holds a prefix of its segment, [0, used), with
 * every record of it. A value that does not extend the prefix (the backup
 * started after the segment's first record, an install is copying the
 * segment, a record is missing before it) is not placed: the log copy takes
 * it whole, as before, and the mirror is no longer whole (an install copies
 * it again, in place).
 *
 * A value too large for a segment is the one record of a run of segments
 * on the primary (vlog_append_huge). Its record arrives whole, so apply
 * writes it at once into a run of the backup's, listed after the write as
 * the primary's is (place_huge). An install that lacks the run reserves
 * one and copies it part by part; apply, if the record arrives meanwhile,
 * writes it into that run and makes it the mirror's, and the install then
 * writes none of it (repl/install.c, run_taken).
 *
 * Writes follow the primary's large log. A new mirror segment is listed in
 * the catalog (one synced redo record) before anything points into it.
 * Records go to a buffer, the run, which holds the end of one mirror
 * segment (a head takes records until it fills, so there is rarely more
 * than one) and is written block-aligned (direct I/O): its full blocks once
 * 256 KiB of them are new, the rest when the WAL writer is about to write
 * the pointers to them, and then synced (repl_mirror_write_pending and
 * repl_mirror_written, from flush_large_logs) — a backup applies without
 * PAR_SYNC, and a write per apply would cost a block per few records. An
 * install that writes into the mirror or replaces its list, and a
 * promotion, first write and end the run (repl_mirror_settle); a run
 * started again reads the block holding its mirror's end from the tail kept
 * in memory. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "repl/repl.h"
#include "util/status.h"

#define SEG ((uint32_t)PAR_SEGMENT_SIZE)

int repl_mirror_find(const par_region *r, uint32_t inc) {
  for (uint32_t k = 0; k < r->nrepl_mirror; k++)
    if (r->repl_mirror[k].inc == inc) return (int)k;
  return -1;
}

static const struct repl_copying *copying(const par_region *r, uint32_t inc) {
  for (uint32_t k = 0; k < r->nrepl_copying; k++)
    if (r->repl_copying[k].inc == inc) return &r->repl_copying[k];
  return NULL;
}

int repl_copying_add(par_region *r, uint32_t inc, uint32_t bseg, uint32_t nsegs) {
  struct repl_copying *c = realloc(r->repl_copying, (r->nrepl_copying + 1) * sizeof *c);
  if (!c) return par_error(PAR_ENOMEM, "install");
  r->repl_copying = c;
  c[r->nrepl_copying++] = (struct repl_copying){inc, bseg, nsegs};
  return PAR_OK;
}

void repl_copying_remove(par_region *r, uint32_t inc) {
  for (uint32_t k = 0; k < r->nrepl_copying; k++)
    if (r->repl_copying[k].inc == inc) {
      r->repl_copying[k] = r->repl_copying[--r->nrepl_copying];
      return;
    }
  assert(0 && "an install's copy was not registered");
}

static int edit_list_mirror(region_desc *d, void *arg, seg_list *freed) {
  (void)freed;
  const vlog_seg *s = arg;
  if (s->inc > d->next_inc) d->next_inc = s->inc;
  return region_desc_add_vlog(d, *s);
}

/* A new mirror of the primary's segment (pseg, inc) in bseg (nsegs of them
 * from it for a run), listed before anything points into it; its
 * incarnation is the region's from now on, so that a promoted backup's own
 * heads take later ones. */
static int mirror_add(par_region *r, uint32_t pseg, uint32_t inc, uint32_t bseg, uint32_t nsegs, uint32_t used) {
  struct repl_mirror *m = realloc(r->repl_mirror, (r->nrepl_mirror + 1) * sizeof *m);
  if (!m) return par_error(PAR_ENOMEM, "large-log mirror");
  r->repl_mirror = m;
  vlog_seg listed = {.seg = bseg, .inc = inc, .nsegs = nsegs};
  int rc = region_persist(r, edit_list_mirror, &listed);
  if (rc) return rc;
  uint32_t next = atomic_load(&r->next_inc);
  while (next < inc && !atomic_compare_exchange_weak(&r->next_inc, &next, inc)) {
  }
  m[r->nrepl_mirror++] = (struct repl_mirror){.pseg = pseg, .inc = inc, .bseg = bseg, .used = used, .nsegs = nsegs,
                                              .open = nsegs == 1, .whole = 1};
  return PAR_OK;
}

static int mirror_create(par_region *r, uint32_t pseg, uint32_t inc) {
  uint32_t bseg;
  int rc = segalloc_alloc(&r->vol->alloc, &bseg);
  if (!rc && (rc = mirror_add(r, pseg, inc, bseg, 1, 0))) segalloc_free(&r->vol->alloc, bseg);
  return rc;
}

/* A value too large for a segment, which the primary wrote alone into a
 * run of segments: the backup writes it whole into a run of its own, the
 * one an install copying it reserved or a new one, and lists the run only
 * then, as vlog_append_huge does (a listed run always holds its record).
 * view_mu held: an install writes the parts of a reserved run under it,
 * and leaves one the mirror took. */
static int place_huge(par_region *r, shipped_large *v, uint64_t next) {
  const vptr p = v->from;
  int k = repl_mirror_find(r, p.inc);
  if (k >= 0) {
    v->to = (vptr){r->repl_mirror[k].bseg, 0, p.inc, p.size};
    return PAR_OK;
  }
  if (v->lsn < next) return PAR_OK; /* the log copy holds it: apply skips it */
  uint32_t n = (p.size + SEG - 1) / SEG, bseg;
  const struct repl_copying *c = copying(r, p.inc);
  if (c && c->nsegs != n)
    return par_error(PAR_ECORRUPT, "a shipped value of %u bytes in a run the layout gave %u segments", p.size,
                     c->nsegs);
  int rc = c ? (bseg = c->bseg, PAR_OK) : segalloc_alloc_run(&r->vol->alloc, n, &bseg);
  if (!rc)
    rc = vlog_write_huge(&r->vol->file, vlog_seed(r->id, p.inc), bseg, v->lsn, v->key, v->key_len, v->value,
                         v->value_len);
  if (!rc) rc = mirror_add(r, p.seg, p.inc, bseg, n, p.size);
  if (rc && !c)
    for (uint32_t i = 0; i < n; i++) segalloc_free(&r->vol->alloc, bseg + i);
  if (rc) return rc;
  atomic_fetch_add(&r->repl_stats.mirror_bytes, ALIGN_UP(p.size, PAR_BLOCK));
  v->to = (vptr){bseg, 0, p.inc, p.size};
  return PAR_OK;
}

/* Writes the run's buffer up to upto (its end, or a block boundary before
 * it) where the file lacks it (repl_run_mu held). */
static int run_write(par_region *r, uint32_t upto) {
  typeof(r->repl_run) *w = &r->repl_run;
  assert(w->k >= 0 && upto <= w->end);
  if (upto <= w->written) return PAR_OK;
  uint32_t from = w->written - w->written % PAR_BLOCK, to = ALIGN_UP(upto, PAR_BLOCK);
  uint8_t *buf = r->repl_run_buf; /* [base, base + SEG) of the segment */
  if (upto == w->end) memset(buf + (w->end - w->base), 0, to - w->end); /* the last block's rest */
  int rc = file_write(&r->vol->file, buf + (from - w->base), to - from, seg_offset(w->bseg) + from);
  if (rc) return rc;
  w->written = upto;
  atomic_fetch_add(&r->repl_stats.mirror_bytes, to - from);
  atomic_fetch_add(&r->repl_mirror_written, to - from);
  return PAR_OK;
}

int repl_mirror_write_pending(par_region *r) {
  pthread_mutex_lock(&r->repl_run_mu);
  int rc = r->repl_run.k >= 0 ? run_write(r, r->repl_run.end) : PAR_OK;
  pthread_mutex_unlock(&r->repl_run_mu);
  return rc;
}

/* Writes the run and ends it, its last block kept as its mirror's tail
 * (view_mu and repl_run_mu held). */
static int run_close(par_region *r) {
  typeof(r->repl_run) *w = &r->repl_run;
  if (w->k < 0) return PAR_OK;
  int rc = run_write(r, w->end);
  if (rc) return rc;
  struct repl_mirror *m = &r->repl_mirror[w->k];
  assert(m->bseg == w->bseg && m->used == w->end);
  if (w->end % PAR_BLOCK) {
    if (!m->tail && !(m->tail = file_buf_alloc(PAR_BLOCK))) return par_error(PAR_ENOMEM, "large-log mirror");
    memcpy(m->tail, r->repl_run_buf + (w->end - w->end % PAR_BLOCK - w->base), PAR_BLOCK);
  }
  w->k = -1;
  return PAR_OK;
}

int repl_mirror_settle(par_region *r, int sync) {
  pthread_mutex_lock(&r->repl_run_mu);
  uint64_t before = atomic_load(&r->repl_mirror_written);
  int rc = run_close(r);
  pthread_mutex_unlock(&r->repl_run_mu);
  if (!rc && sync && atomic_load(&r->repl_mirror_written) != before) rc = file_sync(&r->vol->file);
  return rc;
}

/* Makes mirror k the run's (view_mu and repl_run_mu held): its buffer
 * starts with the block holding the mirror's end, as the file has it. */
static int run_start(par_region *r, int k) {
  int rc = run_close(r);
  if (rc) return rc;
  const struct repl_mirror *m = &r->repl_mirror[k];
  typeof(r->repl_run) *w = &r->repl_run;
  uint32_t base = m->used - m->used % PAR_BLOCK;
  if (base != m->used)
    rc = m->tail ? (memcpy(r->repl_run_buf, m->tail, PAR_BLOCK), PAR_OK)
                 : file_read_cached(&r->vol->file, r->repl_run_buf, PAR_BLOCK, seg_offset(m->bseg) + base);
  if (!rc) *w = (typeof(*w)){.k = k, .bseg = m->bseg, .base = base, .end = m->used, .written = m->used};
  return rc;
}

/* Adds the record of v at its place to mirror k, the run's (view_mu and
 * repl_run_mu held). Full blocks are written once the run holds
 * MIRROR_WRITE_AHEAD bytes the file lacks: the rest waits for the WAL
 * writer (repl_mirror_write_pending), which writes the pointers to them. */
#define MIRROR_WRITE_AHEAD (256u << 10)
static int run_add(par_region *r, const shipped_large *v) {
  typeof(r->repl_run) *w = &r->repl_run;
  const vptr p = v->from;
  uint8_t *buf = r->repl_run_buf; /* [base, base + SEG) of the segment */
  memset(buf + (w->end - w->base), 0, p.off - w->end); /* a flush's padding */
  size_t size = vlog_encode(buf + (p.off - w->base), vlog_seed(r->id, p.inc), v->lsn, v->key, v->key_len, v->value, v->value_len);
  assert(size == p.size);
  w->end = p.off + (uint32_t)size;
  r->repl_mirror[w->k].used = w->end;
  uint32_t full = w->end - w->end % PAR_BLOCK;
  return full > w->written && full - w->written >= MIRROR_WRITE_AHEAD ? run_write(r, full) : PAR_OK;
}

static int check(const shipped_large *v) {
  const vptr *p = &v->from;
  int run = p->off == 0 && p->size > SEG; /* vlog_append_huge's */
  if (!p->seg || p->inc == MEDIUM_INC || p->size != vlog_record_size(v->key_len, v->value_len) || p->off > SEG ||
      (p->size > SEG - p->off && !run))
    return par_error(PAR_ECORRUPT, "a shipped large value's place (%u:%u, %u bytes, incarnation %u) is malformed",
                     p->seg, p->off, p->size, p->inc);
  return PAR_OK;
}

int repl_mirror_place(par_region *r, shipped_large *v, uint32_t n, uint64_t next) {
  int rc = PAR_OK;
  for (uint32_t i = 0; i < n && !rc; i++) {
    v[i].to = (vptr){0};
    rc = check(&v[i]);
  }
  if (rc || !n) return rc;
  pthread_mutex_lock(&r->view_mu);
  if (!r->repl_run_buf && !(r->repl_run_buf = file_buf_alloc(SEG))) rc = par_error(PAR_ENOMEM, "large-log mirror");
  for (uint32_t i = 0; i < n && !rc; i++) {
    const vptr p = v[i].from;
    if (p.size > SEG) {
      if ((rc = place_huge(r, &v[i], next))) break;
      continue;
    }
    int k = repl_mirror_find(r, p.inc);
    if (k < 0) {
      /* Only from the segment's first record, delivered the first time:
       * the records after one delivered again may be in the log copy
       * whole, and not in the mirror. */
      if (p.off != 0 || v[i].lsn < next || copying(r, p.inc)) continue;
      if ((rc = mirror_create(r, p.seg, p.inc))) break;
      k = (int)r->nrepl_mirror - 1;
    }
    struct repl_mirror *m = &r->repl_mirror[k];
    if (p.off + p.size > m->used) {
      if (p.off != m->used && p.off != ALIGN_UP(m->used, PAR_BLOCK)) {
        m->whole = 0; /* a record is missing before it */
        continue;
      }
      pthread_mutex_lock(&r->repl_run_mu);
      if (r->repl_run.k != k) rc = run_start(r, k);
      if (!rc) rc = run_add(r, &v[i]);
      pthread_mutex_unlock(&r->repl_run_mu);
      if (rc) break;
    }
    v[i].to = (vptr){m->bseg, p.off, p.inc, p.size};
  }
  pthread_mutex_unlock(&r->view_mu);
  if (rc)
    for (uint32_t i = 0; i < n; i++) v[i].to = (vptr){0};
  return rc;
}

int repl_mirror_rebuild(par_region *r) {
  pthread_mutex_lock(&r->view_mu);
  int rc = PAR_OK;
  if (!r->nrepl_mirror) {
    pthread_mutex_lock(&r->vol->meta_mu);
    const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
    struct repl_mirror *m = calloc(d->nvlog ? d->nvlog : 1, sizeof *m);
    uint32_t n = 0;
    for (uint32_t i = 0; m && i < d->nvlog; i++) {
      uint32_t k = d->vlog[i].nsegs;
      m[n++] = (struct repl_mirror){.inc = d->vlog[i].inc, .bseg = d->vlog[i].seg, .garbage = d->vlog[i].garbage,
                                    .nsegs = k, .used = k > 1 ? k * SEG : 0, .open = k == 1};
    }
    pthread_mutex_unlock(&r->vol->meta_mu);
    if (!m) rc = par_error(PAR_ENOMEM, "large-log mirror");
    free(r->repl_mirror);
    r->repl_mirror = m;
    r->nrepl_mirror = m ? n : 0;
  }
  pthread_mutex_unlock(&r->view_mu);
  return rc;
}

void repl_mirror_free(par_region *r) {
  for (uint32_t k = 0; k < r->nrepl_mirror; k++) free(r->repl_mirror[k].tail);
  free(r->repl_mirror);
  free(r->repl_copying);
  free(r->repl_run_buf);
  r->repl_mirror = NULL;
  r->repl_copying = NULL;
  r->repl_run_buf = NULL;
  r->nrepl_mirror = r->nrepl_copying = 0;
}
