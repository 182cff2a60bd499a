#include "meta/catalog.h"

#include <stdlib.h>
#include <string.h>

#include "util/coding.h"
#include "util/status.h"

int seg_list_push(seg_list *l, uint32_t seg) {
  if (l->n == l->cap) {
    uint32_t cap = l->cap ? l->cap * 2 : 8;
    uint32_t *v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v) return par_error(PAR_ENOMEM, "segment list of %u", cap);
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = seg;
  return PAR_OK;
}

void seg_list_free(seg_list *l) {
  free(l->v);
  memset(l, 0, sizeof *l);
}

int seg_list_copy(seg_list *dst, const seg_list *src) {
  memset(dst, 0, sizeof *dst);
  if (!src->n) return PAR_OK;
  dst->v = malloc((size_t)src->n * sizeof *dst->v);
  if (!dst->v) return par_error(PAR_ENOMEM, "segment list copy");
  memcpy(dst->v, src->v, (size_t)src->n * sizeof *dst->v);
  dst->n = dst->cap = src->n;
  return PAR_OK;
}

void tree_desc_free(tree_desc *t) {
  seg_list_free(&t->segs);
  seg_list_free(&t->msegs);
  range_set_free(&t->rtombs);
  memset(t, 0, sizeof *t);
}

int tree_desc_copy(tree_desc *dst, const tree_desc *src) {
  *dst = *src;
  memset(&dst->msegs, 0, sizeof dst->msegs);
  memset(&dst->rtombs, 0, sizeof dst->rtombs);
  int rc = seg_list_copy(&dst->segs, &src->segs);
  if (!rc) rc = seg_list_copy(&dst->msegs, &src->msegs);
  if (!rc) rc = range_set_copy(&dst->rtombs, &src->rtombs);
  if (rc) tree_desc_free(dst);
  return rc;
}

void region_desc_free(region_desc *d) {
  free(d->wal);
  free(d->vlog);
  free(d->parts);
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) tree_desc_free(&d->level[i][j]);
  memset(d, 0, sizeof *d);
}

int region_desc_copy(region_desc *dst, const region_desc *src) {
  *dst = *src;
  dst->wal = NULL;
  dst->wal_cap = dst->nwal;
  dst->vlog = NULL;
  dst->vlog_cap = dst->nvlog;
  dst->parts = NULL;
  dst->parts_cap = dst->nparts;
  memset(dst->level, 0, sizeof dst->level);
  if (src->nparts) {
    dst->parts = malloc(src->nparts * sizeof *dst->parts);
    if (!dst->parts) goto oom;
    memcpy(dst->parts, src->parts, src->nparts * sizeof *dst->parts);
  }
  if (src->nwal) {
    dst->wal = malloc(src->nwal * sizeof *dst->wal);
    if (!dst->wal) goto oom;
    memcpy(dst->wal, src->wal, src->nwal * sizeof *dst->wal);
  }
  if (src->nvlog) {
    dst->vlog = malloc(src->nvlog * sizeof *dst->vlog);
    if (!dst->vlog) goto oom;
    memcpy(dst->vlog, src->vlog, src->nvlog * sizeof *dst->vlog);
  }
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++)
      if (tree_desc_copy(&dst->level[i][j], &src->level[i][j])) goto oom;
  return PAR_OK;
oom:
  region_desc_free(dst);
  return par_error(PAR_ENOMEM, "region description copy");
}

int region_desc_add_wal(region_desc *d, wal_seg w) {
  if (d->nwal == d->wal_cap) {
    uint32_t cap = d->wal_cap ? d->wal_cap * 2 : 4;
    wal_seg *v = realloc(d->wal, cap * sizeof *v);
    if (!v) return par_error(PAR_ENOMEM, "WAL segment list");
    d->wal = v;
    d->wal_cap = cap;
  }
  d->wal[d->nwal++] = w;
  return PAR_OK;
}

int region_desc_add_vlog(region_desc *d, vlog_seg v) {
  if (d->nvlog == d->vlog_cap) {
    uint32_t cap = d->vlog_cap ? d->vlog_cap * 2 : 4;
    vlog_seg *n = realloc(d->vlog, cap * sizeof *n);
    if (!n) return par_error(PAR_ENOMEM, "large-log segment list");
    d->vlog = n;
    d->vlog_cap = cap;
  }
  d->vlog[d->nvlog++] = v;
  return PAR_OK;
}

vlog_seg *region_desc_find_vlog(region_desc *d, uint32_t inc) {
  for (uint32_t i = 0; i < d->nvlog; i++)
    if (d->vlog[i].inc == inc) return &d->vlog[i];
  return NULL;
}

int region_desc_for_each_seg(const region_desc *d, int (*fn)(void *arg, uint32_t seg), void *arg) {
  for (uint32_t i = 0; i < d->nwal; i++) {
    int rc = fn(arg, d->wal[i].seg);
    if (rc) return rc;
  }
  for (uint32_t i = 0; i < d->nvlog; i++)
    for (uint32_t k = 0; k < d->vlog[i].nsegs; k++) {
      int rc = fn(arg, d->vlog[i].seg + k);
      if (rc) return rc;
    }
  for (int pass = 0; pass < 2; pass++) /* the trees' nodes, then their medium segments */
    for (int i = 1; i <= PAR_MAX_LEVELS; i++)
      for (int j = 0; j < LEVEL_TREES; j++) {
        const seg_list *l = pass ? &d->level[i][j].msegs : &d->level[i][j].segs;
        for (uint32_t k = 0; k < l->n; k++) {
          int rc = fn(arg, l->v[k]);
          if (rc) return rc;
        }
      }
  return PAR_OK;
}

int region_desc_add_part(region_desc *d, uint64_t first, uint64_t last) {
  if (d->nparts == d->parts_cap) {
    uint32_t cap = d->parts_cap ? d->parts_cap * 2 : 8;
    struct lsn_range *v = realloc(d->parts, (size_t)cap * sizeof *v);
    if (!v) return par_error(PAR_ENOMEM, "cross-region batch parts");
    d->parts = v;
    d->parts_cap = cap;
  }
  d->parts[d->nparts++] = (struct lsn_range){first, last};
  return PAR_OK;
}

int region_desc_has_part(const region_desc *d, uint64_t first, uint64_t last) {
  for (uint32_t i = 0; i < d->nparts; i++)
    if (d->parts[i].first == first && d->parts[i].last == last) return 1;
  return 0;
}

void region_desc_prune_parts(region_desc *d) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < d->nparts; i++)
    if (d->parts[i].last > d->covered_lsn) d->parts[k++] = d->parts[i];
  d->nparts = k;
}

/* Layout: id u32 | name_len u16 | name | covered u64 | gen u32 | nwal u32 |
 * nwal x (seg u32, gen u32, first_lsn u64) | ntrees u16 |
 * ntrees x (level u8, slot u8, root u64, height u32, entries u64, bytes u64,
 *           nsegs u32, nsegs x u32, nmsegs u32, nmsegs x u32, medium_bytes u64) |
 * next_inc u32 | nvlog u32 |
 * nvlog x (seg u32, inc u32, garbage u64, nsegs u32, open u32: state | end << 2) |
 * [nparts u32 | nparts x (first u64, last u64)] — only when nparts > 0 or
 *   range tombstones follow, so descriptions without committed cross-region
 *   parts keep the older layout |
 * [nrt u16 | nrt x (level u8, slot u8, count u32,
 *                   count x (begin_len u16, begin, end_len u16, end))] — the
 *   trees' range tombstones (format 4), only when some tree has any or an
 *   incarnation reservation follows; a tree holding only range tombstones
 *   is listed above with root 0 |
 * [inc_reserved u32] — (format 5) only when past next_inc */
size_t region_desc_encode(const region_desc *d, uint8_t *out) {
  size_t n = 0;
  size_t name_len = strlen(d->name);
#define PUT(bits, v) do { if (out) enc##bits(out + n, (v)); n += (bits) / 8; } while (0)
  PUT(32, d->id);
  PUT(16, (uint16_t)name_len);
  if (out) memcpy(out + n, d->name, name_len);
  n += name_len;
  PUT(64, d->covered_lsn);
  PUT(32, d->wal_gen);
  PUT(32, d->nwal);
  for (uint32_t i = 0; i < d->nwal; i++) {
    PUT(32, d->wal[i].seg);
    PUT(32, d->wal[i].gen);
    PUT(64, d->wal[i].first_lsn);
  }
  uint16_t ntrees = 0, nrt = 0;
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      ntrees += tree_desc_present(&d->level[i][j]);
      nrt += d->level[i][j].rtombs.n != 0;
    }
  PUT(16, ntrees);
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      const tree_desc *t = &d->level[i][j];
      if (!tree_desc_present(t)) continue;
      if (out) { out[n] = (uint8_t)i; out[n + 1] = (uint8_t)j; }
      n += 2;
      PUT(64, t->root);
      PUT(32, t->height);
      PUT(64, t->entries);
      PUT(64, t->bytes);
      const seg_list *lists[2] = {&t->segs, &t->msegs};
      for (int l = 0; l < 2; l++) {
        PUT(32, lists[l]->n);
        for (uint32_t k = 0; k < lists[l]->n; k++) PUT(32, lists[l]->v[k]);
      }
      PUT(64, t->medium_bytes);
    }
  PUT(32, d->next_inc);
  PUT(32, d->nvlog);
  for (uint32_t i = 0; i < d->nvlog; i++) {
    PUT(32, d->vlog[i].seg);
    PUT(32, d->vlog[i].inc);
    PUT(64, d->vlog[i].garbage);
    PUT(32, d->vlog[i].nsegs);
    PUT(32, d->vlog[i].open | d->vlog[i].end << 2);
  }
  int reserved = d->inc_reserved > d->next_inc;
  if (d->nparts || nrt || reserved) {
    PUT(32, d->nparts);
    for (uint32_t i = 0; i < d->nparts; i++) {
      PUT(64, d->parts[i].first);
      PUT(64, d->parts[i].last);
    }
  }
  if (nrt || reserved) {
    PUT(16, nrt);
    for (int i = 1; i <= PAR_MAX_LEVELS; i++)
      for (int j = 0; j < LEVEL_TREES; j++) {
        const range_set *rs = &d->level[i][j].rtombs;
        if (!rs->n) continue;
        if (out) { out[n] = (uint8_t)i; out[n + 1] = (uint8_t)j; }
        n += 2;
        PUT(32, rs->n);
        for (uint32_t k = 0; k < rs->n; k++) {
          PUT(16, rs->v[k].begin_len);
          if (out) memcpy(out + n, rs->v[k].begin, rs->v[k].begin_len);
          n += rs->v[k].begin_len;
          PUT(16, rs->v[k].end_len);
          if (out) memcpy(out + n, rs->v[k].end, rs->v[k].end_len);
          n += rs->v[k].end_len;
        }
      }
  }
  if (reserved) PUT(32, d->inc_reserved);
#undef PUT
  return n;
}

int region_desc_decode(region_desc *d, const uint8_t *in, size_t len) {
  memset(d, 0, sizeof *d);
  size_t n = 0;
#define NEED(k) do { if (len - n < (size_t)(k)) goto bad; } while (0)
#define GET(bits, dst) do { NEED((bits) / 8); (dst) = dec##bits(in + n); n += (bits) / 8; } while (0)
  uint16_t name_len;
  GET(32, d->id);
  GET(16, name_len);
  if (name_len > PAR_MAX_REGION_NAME) goto bad;
  NEED(name_len);
  memcpy(d->name, in + n, name_len);
  d->name[name_len] = 0;
  n += name_len;
  GET(64, d->covered_lsn);
  GET(32, d->wal_gen);
  uint32_t nwal;
  GET(32, nwal);
  if (nwal > len / 16) goto bad;
  for (uint32_t i = 0; i < nwal; i++) {
    wal_seg w;
    GET(32, w.seg);
    GET(32, w.gen);
    GET(64, w.first_lsn);
    if (region_desc_add_wal(d, w)) goto oom;
  }
  uint16_t ntrees;
  GET(16, ntrees);
  uint8_t listed[PAR_MAX_LEVELS + 1][LEVEL_TREES] = {{0}};
  for (uint16_t t = 0; t < ntrees; t++) {
    NEED(2);
    uint8_t lvl = in[n], slot = in[n + 1];
    n += 2;
    if (lvl < 1 || lvl > PAR_MAX_LEVELS || slot >= LEVEL_TREES) goto bad;
    tree_desc *td = &d->level[lvl][slot];
    if (listed[lvl][slot]) goto bad;
    listed[lvl][slot] = 1;
    GET(64, td->root);
    GET(32, td->height);
    GET(64, td->entries);
    GET(64, td->bytes);
    seg_list *lists[2] = {&td->segs, &td->msegs};
    for (int l = 0; l < 2; l++) {
      uint32_t nsegs;
      GET(32, nsegs);
      if (nsegs > len / 4) goto bad;
      for (uint32_t k = 0; k < nsegs; k++) {
        uint32_t s;
        GET(32, s);
        if (seg_list_push(lists[l], s)) goto oom;
      }
    }
    GET(64, td->medium_bytes);
  }
  GET(32, d->next_inc);
  uint32_t nvlog;
  GET(32, nvlog);
  if (nvlog > len / 24) goto bad;
  for (uint32_t i = 0; i < nvlog; i++) {
    vlog_seg v;
    GET(32, v.seg);
    GET(32, v.inc);
    GET(64, v.garbage);
    GET(32, v.nsegs);
    GET(32, v.open);
    v.end = v.open >> 2;
    v.open &= 3;
    int parked = v.open == VLOG_PARKED_HOT || v.open == VLOG_PARKED_COLD;
    if (v.nsegs == 0 || v.nsegs > len || (v.open && v.nsegs != 1) || v.end >= (parked ? PAR_SEGMENT_SIZE : 1))
      goto bad;
    if (region_desc_add_vlog(d, v)) goto oom;
  }
  if (n < len) {
    uint32_t nparts;
    GET(32, nparts);
    if (nparts > len / 16) goto bad;
    for (uint32_t i = 0; i < nparts; i++) {
      uint64_t first, last;
      GET(64, first);
      GET(64, last);
      if (last < first || last <= d->covered_lsn) goto bad;
      if (region_desc_add_part(d, first, last)) goto oom;
    }
    if (nparts == 0 && n == len) goto bad; /* an empty list only precedes what follows */
  }
  if (n < len) {
    uint16_t nrt;
    GET(16, nrt);
    if (nrt == 0 && n == len) goto bad; /* an empty list only precedes a reservation */
    for (uint16_t t = 0; t < nrt; t++) {
      NEED(2);
      uint8_t lvl = in[n], slot = in[n + 1];
      n += 2;
      if (lvl < 1 || lvl > PAR_MAX_LEVELS || slot >= LEVEL_TREES || !listed[lvl][slot]) goto bad;
      range_set *rs = &d->level[lvl][slot].rtombs;
      uint32_t count;
      GET(32, count);
      if (rs->n || count == 0 || count > len / 6) goto bad;
      for (uint32_t k = 0; k < count; k++) {
        uint16_t bl, el;
        GET(16, bl);
        NEED(bl);
        const uint8_t *b = in + n;
        n += bl;
        GET(16, el);
        NEED(el);
        const uint8_t *e = in + n;
        n += el;
        /* Stored sorted and disjoint: each range starts after the last one ends. */
        if (key_cmp(b, bl, e, el) >= 0 ||
            (rs->n && key_cmp(rs->v[rs->n - 1].end, rs->v[rs->n - 1].end_len, b, bl) >= 0))
          goto bad;
        if (range_set_add(rs, b, bl, e, el)) goto oom;
      }
    }
  }
  if (n < len) {
    GET(32, d->inc_reserved);
    if (d->inc_reserved <= d->next_inc) goto bad;
  }
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++)
      if (listed[i][j] && !tree_desc_present(&d->level[i][j])) goto bad;
  if (n != len) goto bad;
  return PAR_OK;
#undef GET
#undef NEED
bad:
  region_desc_free(d);
  return par_error(PAR_ECORRUPT, "malformed region description in the redo log");
oom:
  region_desc_free(d);
  return PAR_ENOMEM;
}
