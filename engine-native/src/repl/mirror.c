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
 * Durability follows the primary's large log: a new mirror segment is listed
 * in the catalog (one synced redo record) before anything points into it,
 * and the WAL writer syncs the mirror's bytes before it writes the pointers
 * to them (repl_mirror_written, as flush_large_logs does for the large
 * logs). Writes go through one segment-sized buffer, block-aligned (direct
 * I/O): the block holding the end of the prefix is written again with the
 * next records, from the tail kept in memory. */
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

static int copying(const par_region *r, uint32_t inc) {
  for (uint32_t k = 0; k < r->nrepl_copying; k++)
    if (r->repl_copying[k] == inc) return 1;
  return 0;
}

int repl_copying_add(par_region *r, uint32_t inc) {
  uint32_t *c = realloc(r->repl_copying, (r->nrepl_copying + 1) * sizeof *c);
  if (!c) return par_error(PAR_ENOMEM, "install");
  r->repl_copying = c;
  c[r->nrepl_copying++] = inc;
  return PAR_OK;
}

void repl_copying_remove(par_region *r, uint32_t inc) {
  for (uint32_t k = 0; k < r->nrepl_copying; k++)
    if (r->repl_copying[k] == inc) {
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

/* A new mirror of the primary's segment (pseg, inc), listed before anything
 * points into it; its incarnation is the region's from now on, so that a
 * promoted backup's own heads take later ones. */
static int mirror_create(par_region *r, uint32_t pseg, uint32_t inc) {
  struct repl_mirror *m = realloc(r->repl_mirror, (r->nrepl_mirror + 1) * sizeof *m);
  if (!m) return par_error(PAR_ENOMEM, "large-log mirror");
  r->repl_mirror = m;
  uint32_t bseg;
  int rc = segalloc_alloc(&r->vol->alloc, &bseg);
  vlog_seg listed = {.seg = bseg, .inc = inc, .nsegs = 1};
  if (!rc && (rc = region_persist(r, edit_list_mirror, &listed))) segalloc_free(&r->vol->alloc, bseg);
  if (rc) return rc;
  uint32_t next = atomic_load(&r->next_inc);
  while (next < inc && !atomic_compare_exchange_weak(&r->next_inc, &next, inc)) {
  }
  m[r->nrepl_mirror++] = (struct repl_mirror){.pseg = pseg, .inc = inc, .bseg = bseg, .open = 1, .whole = 1};
  return PAR_OK;
}

/* Records being added to mirror k: r->repl_apply_buf holds [base, end) of
 * its segment. */
typedef struct run {
  int k; /* -1: none */
  uint32_t base, end;
} run;

static int run_start(par_region *r, run *w, int k) {
  struct repl_mirror *m = &r->repl_mirror[k];
  w->k = k;
  w->base = m->used - m->used % PAR_BLOCK;
  w->end = m->used;
  if (w->end == w->base) return PAR_OK;
  if (m->tail) {
    memcpy(r->repl_apply_buf, m->tail, PAR_BLOCK);
    return PAR_OK;
  }
  return file_read_cached(&r->vol->file, r->repl_apply_buf, PAR_BLOCK, seg_offset(m->bseg) + w->base);
}

/* Writes the run's blocks; the mirror's prefix then ends at w->end. */
static int run_write(par_region *r, run *w) {
  if (w->k < 0) return PAR_OK;
  struct repl_mirror *m = &r->repl_mirror[w->k];
  uint32_t len = ALIGN_UP(w->end, PAR_BLOCK) - w->base;
  uint8_t *buf = r->repl_apply_buf;
  memset(buf + (w->end - w->base), 0, len - (w->end - w->base));
  int rc = file_write(&r->vol->file, buf, len, seg_offset(m->bseg) + w->base);
  if (!rc && w->end % PAR_BLOCK) {
    if (!m->tail && !(m->tail = file_buf_alloc(PAR_BLOCK))) rc = par_error(PAR_ENOMEM, "large-log mirror");
    if (!rc) memcpy(m->tail, buf + len - PAR_BLOCK, PAR_BLOCK);
  }
  if (!rc) {
    assert(w->end > m->used);
    m->used = w->end;
    atomic_fetch_add(&r->repl_stats.mirror_bytes, len);
    atomic_fetch_add(&r->repl_mirror_written, len);
  }
  w->k = -1;
  return rc;
}

static int check(const shipped_large *v) {
  const vptr *p = &v->from;
  if (!p->seg || p->inc == MEDIUM_INC || p->size != vlog_record_size(v->key_len, v->value_len) || p->off > SEG ||
      p->size > SEG - p->off)
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
  if (!r->repl_apply_buf && !(r->repl_apply_buf = file_buf_alloc(SEG)))
    rc = par_error(PAR_ENOMEM, "large-log mirror");
  run w = {.k = -1};
  for (uint32_t i = 0; i < n && !rc; i++) {
    const vptr p = v[i].from;
    int k = repl_mirror_find(r, p.inc);
    if (k < 0) {
      /* Only from the segment's first record, delivered the first time:
       * the records after one delivered again may be in the log copy
       * whole, and not in the mirror. */
      if (p.off != 0 || v[i].lsn < next || copying(r, p.inc)) continue;
      if ((rc = run_write(r, &w)) || (rc = mirror_create(r, p.seg, p.inc))) break;
      k = (int)r->nrepl_mirror - 1;
    }
    struct repl_mirror *m = &r->repl_mirror[k];
    uint32_t used = w.k == k ? w.end : m->used;
    if (p.off + p.size > used) {
      if (p.off != used && p.off != ALIGN_UP(used, PAR_BLOCK)) {
        m->whole = 0; /* a record is missing before it */
        continue;
      }
      if (w.k != k && ((rc = run_write(r, &w)) || (rc = run_start(r, &w, k)))) break;
      uint8_t *at = r->repl_apply_buf + (p.off - w.base);
      memset(r->repl_apply_buf + (w.end - w.base), 0, p.off - w.end); /* a flush's padding */
      size_t size = vlog_encode(at, vlog_seed(r->id, p.inc), v[i].lsn, v[i].key, v[i].key_len, v[i].value, v[i].value_len);
      assert(size == p.size);
      w.end = p.off + (uint32_t)size;
    }
    v[i].to = (vptr){m->bseg, p.off, p.inc, p.size};
  }
  if (!rc) rc = run_write(r, &w);
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
    for (uint32_t i = 0; m && i < d->nvlog; i++)
      if (d->vlog[i].nsegs == 1)
        m[n++] = (struct repl_mirror){.inc = d->vlog[i].inc, .bseg = d->vlog[i].seg, .garbage = d->vlog[i].garbage,
                                      .open = 1};
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
  free(r->repl_apply_buf);
  r->repl_mirror = NULL;
  r->repl_copying = NULL;
  r->repl_apply_buf = NULL;
  r->nrepl_mirror = r->nrepl_copying = 0;
}
