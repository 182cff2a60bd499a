/* Send index, the primary's side (Talos §4): an export holds a view of the
 * region's device levels and large log, so that nothing it lists is freed,
 * and ships their layout (repl/layout.h); the backup copies the segments
 * it names (repl/install.c). While an export is open GC drops no segment. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "repl/layout.h"
#include "repl/repl.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/status.h"

struct par_repl_export {
  par_region *r;
  view *v;          /* keeps the trees and their segments alive */
  int holds_gc;     /* counted in GC's exports: GC drops nothing meanwhile */
  uint64_t covered; /* the LSN v's levels cover */
  uint64_t dropped_lsn;
  uint32_t next_inc;
  uint32_t nvlog;
  vlog_seg *vlog;   /* the large log's segments, those GC is dropping left out */
  uint8_t *layout;
  size_t len;
};

static uint32_t tree_id(const par_file *f, const dtree *dt) {
  const tree_desc *t = &dt->d;
  uint8_t b[36];
  enc64(b, t->root);
  enc32(b + 8, t->height);
  enc64(b + 12, t->entries);
  enc64(b + 20, t->bytes);
  enc64(b + 28, dt->uid);
  uint32_t c = crc32c(0, b, sizeof b);
  c = crc32c(c, (const uint8_t *)t->segs.v, t->segs.n * sizeof *t->segs.v);
  if (t->root) c = crc32c(c, file_map(f) + t->root, 4); /* the root node's own checksum */
  for (uint32_t i = 0; i < t->rtombs.n; i++) {
    c = crc32c(c, t->rtombs.v[i].begin, t->rtombs.v[i].begin_len);
    c = crc32c(c, t->rtombs.v[i].end, t->rtombs.v[i].end_len);
  }
  return c ? c : 1;
}

/* The uid of t's medium set holding seg (every segment of d.msegs is in
 * one; 0, which no backup shares, if none is). */
static uint64_t mseg_uid(const dtree *t, uint32_t seg) {
  for (uint32_t i = 0; i < t->nsets; i++)
    for (uint32_t k = 0; k < t->sets[i]->segs.n; k++)
      if (t->sets[i]->segs.v[k] == seg) return t->sets[i]->uid;
  assert(0 && "a medium-log segment in no set of its tree");
  return 0;
}

static size_t rtombs_len(const tree_desc *t) { return t->rtombs.n ? range_set_encoded_size(&t->rtombs) : 0; }

PAR_API int par_repl_export_open(par_region *r, par_repl_export **out) {
  if (!r || !out) return par_error(PAR_EINVAL, "par_repl_export_open: NULL argument");
  par_repl_export *x = calloc(1, sizeof *x);
  if (!x) return par_error(PAR_ENOMEM, "export");
  x->r = r;
  int rc = PAR_OK;
  /* The catalog's covered LSN changes with the view under commit_mu (a
   * merge commit records the layout before it publishes the view). GC
   * marks the segments it drops under view_mu, after raising
   * its dropped LSN: from here on it drops none (gc_reclaimable), and the
   * ones it is dropping are left out of the list. */
  pthread_mutex_lock(&r->commit_mu);
  pthread_mutex_lock(&r->view_mu);
  x->v = r->view;
  atomic_fetch_add(&x->v->refs, 1);
  x->dropped_lsn = gc_export_hold(&r->gc);
  x->holds_gc = 1;
  pthread_mutex_lock(&r->vol->meta_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  x->covered = d->covered_lsn;
  x->next_inc = d->next_inc;
  x->vlog = calloc(d->nvlog ? d->nvlog : 1, sizeof *x->vlog);
  for (uint32_t i = 0; x->vlog && i < d->nvlog && !rc; i++) {
    if (!gc_dropping(&r->gc, d->vlog[i].inc)) x->vlog[x->nvlog++] = d->vlog[i];
  }
  pthread_mutex_unlock(&r->vol->meta_mu);
  pthread_mutex_unlock(&r->view_mu);
  pthread_mutex_unlock(&r->commit_mu);
  if (!x->vlog && !rc) rc = par_error(PAR_ENOMEM, "export");
  size_t len = LAYOUT_HDR + (size_t)VLOG_ENTRY * x->nvlog;
  uint32_t n = 0;
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      const dtree *t = x->v->tree[i][j];
      if (!t) continue;
      len += TREE_HDR + 4ull * t->d.segs.n + (uint64_t)MSEG_ENTRY * t->d.msegs.n + rtombs_len(&t->d);
      n++;
    }
  x->layout = rc ? NULL : malloc(len);
  if (!rc && !x->layout) rc = par_error(PAR_ENOMEM, "layout");
  if (rc) {
    par_repl_export_close(x);
    return rc;
  }
  uint8_t *p = x->layout;
  enc32(p, LAYOUT_MAGIC);
  enc64(p + 4, x->covered);
  enc32(p + 12, n);
  enc32(p + 16, r->id);
  enc32(p + 20, x->next_inc);
  enc32(p + 24, x->nvlog);
  enc64(p + 28, x->dropped_lsn);
  p += LAYOUT_HDR;
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      const dtree *t = x->v->tree[i][j];
      if (!t) continue;
      p[0] = (uint8_t)i;
      p[1] = (uint8_t)j;
      enc16(p + 2, 0);
      enc32(p + 4, tree_id(&r->vol->file, t));
      enc64(p + 8, t->d.root);
      enc32(p + 16, t->d.height);
      enc64(p + 20, t->d.entries);
      enc64(p + 28, t->d.bytes);
      enc32(p + 36, t->d.segs.n);
      enc32(p + 40, (uint32_t)rtombs_len(&t->d));
      enc32(p + 44, t->d.msegs.n);
      enc64(p + 48, t->d.medium_bytes);
      p += TREE_HDR;
      for (uint32_t k = 0; k < t->d.segs.n; k++, p += 4) enc32(p, t->d.segs.v[k]);
      for (uint32_t k = 0; k < t->d.msegs.n; k++, p += MSEG_ENTRY) {
        enc32(p, t->d.msegs.v[k]);
        enc64(p + 4, mseg_uid(t, t->d.msegs.v[k]));
      }
      if (t->d.rtombs.n) p = range_set_encode(&t->d.rtombs, p);
    }
  for (uint32_t i = 0; i < x->nvlog; i++, p += VLOG_ENTRY) {
    enc32(p, x->vlog[i].seg);
    enc32(p + 4, x->vlog[i].inc);
    enc64(p + 8, x->vlog[i].garbage);
    enc32(p + 16, x->vlog[i].open);
    enc32(p + 20, x->vlog[i].nsegs);
  }
  x->len = len;
  *out = x;
  return PAR_OK;
}

PAR_API int par_repl_export_layout(par_repl_export *x, void *buf, size_t cap, size_t *len) {
  if (!x || !len || (!buf && cap)) return par_error(PAR_EINVAL, "par_repl_export_layout: NULL argument");
  *len = x->len;
  if (cap < x->len) return par_error(PAR_ETOOBIG, "the layout needs %zu bytes", x->len);
  memcpy(buf, x->layout, x->len);
  return PAR_OK;
}

PAR_API uint64_t par_repl_export_covered(const par_repl_export *x) { return x ? x->covered : 0; }

/* Where an install's walk of a node segment stops (par_repl_install_segment:
 * nodes packed from the start, then a zero header), or SEG when a header
 * does not parse (the install reports it). */
static uint32_t nodes_end(const uint8_t *buf, uint32_t seg) {
  uint32_t off = 0;
  while (off + NODE_HDR <= SEG && dec16(buf + off + 4) != 0) {
    node_hdr h;
    if (node_header(buf + off, seg_offset(seg) + off, &h) || h.pages == 0) return SEG;
    off += h.pages * PAR_BLOCK;
  }
  return off + NODE_HDR;
}

/* Where an install's walk of a log segment stops (reseed_records: its
 * records, read with vlog_next). */
static uint32_t records_end(const uint8_t *buf, uint32_t seed) {
  uint32_t off = 0;
  vlog_record rec;
  while (vlog_next(buf, &off, seed, &rec) == PAR_OK) off += rec.size;
  return off;
}

PAR_API int par_repl_export_segment(par_repl_export *x, uint32_t seg, void *buf, size_t *len) {
  if (!x || !buf) return par_error(PAR_EINVAL, "par_repl_export_segment: NULL argument");
  enum { NOT_FOUND, NODES, LOG, RUN } kind = NOT_FOUND;
  uint32_t inc = MEDIUM_INC, run = 0;
  for (int i = 1; i <= PAR_MAX_LEVELS && !kind; i++)
    for (int j = 0; j < LEVEL_TREES && !kind; j++) {
      const dtree *t = x->v->tree[i][j];
      for (uint32_t k = 0; t && k < t->d.segs.n; k++)
        if (t->d.segs.v[k] == seg) kind = NODES;
      for (uint32_t k = 0; t && k < t->d.msegs.n; k++)
        if (t->d.msegs.v[k] == seg) kind = LOG;
    }
  for (uint32_t i = 0; i < x->nvlog && !kind; i++)
    if (x->vlog[i].nsegs > 1 && seg - x->vlog[i].seg < x->vlog[i].nsegs) {
      kind = RUN;
      run = x->vlog[i].seg;
    } else if (x->vlog[i].seg == seg) {
      kind = LOG;
      inc = x->vlog[i].inc;
    }
  if (!kind) return par_error(PAR_EINVAL, "segment %u is not in the exported levels or logs", seg);
  /* One read of the whole segment through the page cache, not a copy from
   * the map: the map is MADV_RANDOM, so a copy faulted an uncached segment
   * in a page (one device read) at a time. Trees and large-log segments are
   * written with direct I/O, so the first backup's export reads a segment
   * from the device and the next backups' find it cached. Merges writing
   * their trees through the page cache instead, so that every export read
   * them from memory, cost a send-index primary 1.1 µs more CPU per write
   * (docs/replication.md: the dirty pages' writeback, much of it in the
   * WAL's fdatasync) than the device reads save. A head of the large log may be appended
   * meanwhile: the records the levels point at were durable before the
   * levels were, so they are in what this reads. */
  int rc = file_read_cached(&x->r->vol->file, buf, SEG, seg_offset(seg));
  if (rc || !len) return rc;
  if (kind == RUN) { /* a part of the one record a run holds, as it is: the install checks it whole */
    uint8_t rlen[4]; /* the record's length, in its header */
    if (seg == run) memcpy(rlen, (const uint8_t *)buf + 4, 4);
    else if ((rc = file_read_cached(&x->r->vol->file, rlen, 4, seg_offset(run) + 4))) return rc;
    uint64_t end = (uint64_t)dec32(rlen) + VLOG_HDR, from = (uint64_t)(seg - run) * SEG;
    *len = end <= from ? PAR_BLOCK : end - from < SEG ? ALIGN_UP((uint32_t)(end - from), PAR_BLOCK) : SEG;
    return PAR_OK;
  }
  /* What an install needs of it: a tree's last segment, a medium set's and
   * a head are mostly unused. Its walk stops at the header after the last
   * node or record; past these bytes it reads zeros, where the walk here
   * found nothing either. */
  uint32_t end = kind == NODES ? nodes_end(buf, seg) : records_end(buf, vlog_seed(x->r->id, inc)) + VLOG_HDR;
  end = ALIGN_UP(end, PAR_BLOCK);
  *len = end < SEG ? end : SEG;
  return PAR_OK;
}

PAR_API void par_repl_export_close(par_repl_export *x) {
  if (!x) return;
  if (x->holds_gc) {
    pthread_mutex_lock(&x->r->view_mu);
    int last = gc_export_release(&x->r->gc);
    pthread_mutex_unlock(&x->r->view_mu);
    if (last) compaction_schedule(x->r); /* segments GC collected may be dropped now */
  }
  if (x->v) view_unref(x->v);
  free(x->vlog);
  free(x->layout);
  free(x);
}
