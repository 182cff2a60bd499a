/* The log stream: a primary's WAL read from an LSN (large values read back
 * from the large log), and a backup's apply of it with the primary's LSNs.
 *
 * The cursor reads WAL segments through the volume's memory map, and only
 * records the WAL writer has made durable, so a record it returns is never
 * rolled back by a crash of the primary; or, set to ship written records,
 * those it has written (pushing the log's tail buffer to the file itself),
 * which a power cut of the primary may roll back. A live cursor pins the WAL from
 * the first LSN of the last chunk it returned (a replication slot): a
 * compaction frees only the segments wholly below every pin
 * (region_wal_trimmable), so the bytes a read copies stay the log's, and a
 * reader that must send its last chunk again (its peer failed before
 * answering) can reopen a cursor there before closing this one. The pin
 * moves forward with each read and goes at the close; segments it kept go
 * at the next compaction's commit. A cursor that keeps more than its limit
 * of segments the levels cover (its reader stalled) is released: its reads
 * fail with PAR_ENOENT, as for an LSN already trimmed, and the reader needs
 * the levels first. So do reads before the region's log_readable_from: the
 * WAL is freed a segment at a time, and records the levels cover may point
 * into large-log segments since let go and taken again. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "repl/repl.h"
#include "util/coding.h"
#include "util/status.h"

#define SEG ((uint32_t)PAR_SEGMENT_SIZE)
#define SHIP_HDR 16u /* lsn u64 | count u32 | len u32 */

struct par_repl_cursor {
  par_region *r;
  uint64_t next;   /* LSN of the next record to return */
  wal_seg at;      /* segment being read; at.seg == 0: locate next */
  uint32_t off;    /* offset in it of the record carrying expect */
  uint64_t expect; /* LSN of the record at off */
  int written;     /* returns records once written, not once durable */
  /* Under vol->meta_mu: the region's cursor list, the first LSN whose
   * segment the cursor keeps (<= next), its limit, and whether it was
   * released for exceeding it. */
  par_repl_cursor *link;
  uint64_t pin;
  uint32_t limit;
  int released;
};

/* A cursor's pin moved or went: GC may drop the segments it collected and
 * held for the cursor (region_cursors_pin). */
static void wake_gc(par_region *r) {
  pthread_mutex_lock(&r->view_mu);
  int collected = gc_has_collected(&r->gc);
  pthread_mutex_unlock(&r->view_mu);
  if (collected) compaction_schedule(r);
}

PAR_API int par_repl_cursor_open(par_region *r, uint64_t from_lsn, par_repl_cursor **out) {
  if (!r || !out || !from_lsn) return par_error(PAR_EINVAL, "par_repl_cursor_open: NULL argument or LSN 0");
  par_repl_cursor *c = calloc(1, sizeof *c);
  if (!c) return par_error(PAR_ENOMEM, "log cursor");
  c->r = r;
  c->next = c->pin = from_lsn;
  c->limit = PAR_REPL_CURSOR_LIMIT;
  /* The cursor reads what the logs write next, soon after: through the page
   * cache, where a direct write would make each read a device read (a
   * replicated primary read back about 1.1 KB per SD write). */
  __atomic_store_n(&r->wal.cached, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&r->hot.cached, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&r->cold.cached, 1, __ATOMIC_RELAXED);
  pthread_mutex_lock(&r->vol->meta_mu);
  c->link = r->repl_cursors;
  r->repl_cursors = c;
  pthread_mutex_unlock(&r->vol->meta_mu);
  *out = c;
  return PAR_OK;
}

PAR_API int par_repl_cursor_set_limit(par_repl_cursor *c, uint32_t segments) {
  if (!c || !segments) return par_error(PAR_EINVAL, "par_repl_cursor_set_limit: NULL cursor or limit 0");
  pthread_mutex_lock(&c->r->vol->meta_mu);
  c->limit = segments;
  pthread_mutex_unlock(&c->r->vol->meta_mu);
  return PAR_OK;
}

PAR_API int par_repl_cursor_ship_written(par_repl_cursor *c) {
  if (!c) return par_error(PAR_EINVAL, "par_repl_cursor_ship_written: NULL cursor");
  c->written = 1;
  return PAR_OK;
}

PAR_API void par_repl_cursor_close(par_repl_cursor *c) {
  if (!c) return;
  pthread_mutex_lock(&c->r->vol->meta_mu);
  par_repl_cursor **p = &c->r->repl_cursors;
  while (*p != c) p = &(*p)->link;
  *p = c->link;
  pthread_mutex_unlock(&c->r->vol->meta_mu);
  wake_gc(c->r);
  free(c);
}

uint64_t region_cursors_pin(par_region *r) {
  uint64_t pin = UINT64_MAX;
  for (par_repl_cursor *c = r->repl_cursors; c; c = c->link)
    if (!c->released && c->pin < pin) pin = c->pin;
  return pin;
}

/* The count of d's first segments wholly below lsn. */
static uint32_t segs_below(const region_desc *d, uint64_t lsn) {
  uint32_t n = 0;
  while (n + 1 < d->nwal && d->wal[n + 1].first_lsn <= lsn) n++;
  return n;
}

uint32_t region_wal_trimmable(par_region *r, const region_desc *d, uint64_t covered, int drop_all) {
  uint32_t covered_segs = drop_all ? d->nwal : segs_below(d, covered + 1), drop = covered_segs;
  for (par_repl_cursor *c = r->repl_cursors; c; c = c->link) {
    if (c->released) continue;
    uint32_t keep = segs_below(d, c->pin); /* the segments before the pin's */
    if (keep >= covered_segs) continue;
    if (drop_all || covered_segs - keep > c->limit) c->released = 1;
    else if (keep < drop) drop = keep;
  }
  return drop;
}

/* PAR_ENOENT when a compaction released c (see the top). */
static int released_error(par_repl_cursor *c) {
  pthread_mutex_lock(&c->r->vol->meta_mu);
  int released = c->released;
  uint32_t limit = c->limit;
  uint64_t pin = c->pin;
  pthread_mutex_unlock(&c->r->vol->meta_mu);
  if (!released) return PAR_OK;
  return par_error(PAR_ENOENT, "the log cursor of region '%s' at LSN %llu kept more than %u WAL segments the levels "
                   "cover and was released: the log was trimmed past it", c->r->name, (unsigned long long)pin, limit);
}

/* PAR_ENOENT when records from lsn on may point into large-log segments let
 * go (log_readable_from): a cursor opened at an LSN the levels cover, or
 * while GC was dropping a segment, which its pin was too late to hold. */
static int unreadable_error(par_repl_cursor *c, uint64_t lsn) {
  uint64_t from = atomic_load(&c->r->log_readable_from);
  if (lsn >= from) return PAR_OK;
  return par_error(PAR_ENOENT, "the log of region '%s' at LSN %llu may point at large-log segments let go: it is "
                   "readable from LSN %llu on, after the levels", c->r->name, (unsigned long long)lsn,
                   (unsigned long long)from);
}

/* Moves c's pin to lsn and copies the log's shape (under meta_mu, so that
 * no commit in between frees a segment from lsn on). */
static int pin_and_list(par_repl_cursor *c, uint64_t lsn, wal_list *l) {
  par_region *r = c->r;
  pthread_mutex_lock(&r->vol->meta_mu);
  assert(lsn >= c->pin);
  int moved = lsn > c->pin;
  c->pin = lsn;
  pthread_mutex_unlock(&r->vol->meta_mu);
  if (moved) wake_gc(r);
  int rc = released_error(c);
  if (!rc) rc = unreadable_error(c, lsn);
  if (rc) {
    memset(l, 0, sizeof *l);
    return rc;
  }
  return repl_wal_list(r, l);
}

static int find_seg(const wal_list *l, const wal_seg *s) {
  for (uint32_t i = 0; i < l->n; i++)
    if (l->w[i].seg == s->seg && l->w[i].gen == s->gen && l->w[i].first_lsn == s->first_lsn) return (int)i;
  return -1;
}

/* Points the cursor at the segment whose records include c->next. */
static int locate(par_repl_cursor *c, const wal_list *l) {
  int i = -1;
  for (uint32_t k = 0; k < l->n; k++)
    if (l->w[k].first_lsn <= c->next) i = (int)k;
  if (i < 0)
    return par_error(PAR_ENOENT, "LSN %llu is no longer in the log of region '%s' (levels cover up to %llu)",
                     (unsigned long long)c->next, c->r->name, (unsigned long long)l->covered);
  c->at = l->w[i];
  c->off = 0;
  c->expect = l->w[i].first_lsn;
  return PAR_OK;
}

/* The ops of a record. Read from the WAL, each large value is read back
 * (*owned[i] to free) and from[i] is its place in the large log; decoded
 * from shipped bytes, a large value is a WAL_PUT whose from[i] is its place
 * in the primary's large log (from[i].size 0: not a large value), and
 * ptrs holds the pointers of those the mirror took. */
typedef struct rec_ops {
  uint32_t n;
  wal_op *ops;
  uint8_t **owned;
  vptr *from;
  uint8_t *ptrs;
  size_t size; /* shipped size */
} rec_ops;

static void rec_ops_free(rec_ops *o) {
  for (uint32_t i = 0; o->owned && i < o->n; i++) free(o->owned[i]);
  free(o->owned);
  free(o->ops);
  free(o->from);
  free(o->ptrs);
  memset(o, 0, sizeof *o);
}

/* Decodes count ops from [p, end) into o; ship: shipped bytes (large values
 * come whole after their place), else the WAL's (large values read back). */
static int decode_ops(par_region *r, const uint8_t *p, const uint8_t *end, uint32_t count, int ship,
                      rec_ops *o) {
  memset(o, 0, sizeof *o);
  if (count == 0 || count > (size_t)(end - p) / 3) return par_error(PAR_ECORRUPT, "record of %u ops in %zu bytes", count, (size_t)(end - p));
  o->ops = calloc(count, sizeof *o->ops);
  o->owned = calloc(count, sizeof *o->owned);
  o->from = calloc(count, sizeof *o->from);
  if (!o->ops || !o->owned || !o->from) {
    rec_ops_free(o);
    return par_error(PAR_ENOMEM, "record ops");
  }
  o->n = count;
  o->size = SHIP_HDR;
  for (uint32_t k = 0; k < count; k++) {
    uint32_t kl = 0, vl = 0;
    const uint8_t *q = p < end ? p + 1 : NULL;
    if (q) q = get_varint32(q, end, &kl);
    if (q) q = get_varint32(q, end, &vl);
    int type = p < end ? p[0] : 0;
    if (!ship && (type == WAL_GAP || type == WAL_TXN)) {
      rec_ops_free(o);
      return par_error(PAR_EINVAL, "the log of region '%s' holds %s: replication does not ship those", r->name,
                       type == WAL_GAP ? "writes made without it (PAR_NO_WAL)" : "a cross-region batch");
    }
    int large = type == WAL_PUT_LARGE && (ship ? vl > VPTR_SIZE && vl - VPTR_SIZE <= PAR_MAX_VALUE_SIZE : vl == VPTR_SIZE);
    int ok = q && kl >= 1 && kl <= PAR_MAX_KEY_SIZE && (vl <= PAR_MAX_VALUE_SIZE || large) &&
             (size_t)(end - q) >= (size_t)kl + vl &&
             (type == WAL_PUT || (type == WAL_DELETE && vl == 0) ||
              (type == WAL_DELETE_RANGE && vl >= 1 && vl <= PAR_MAX_KEY_SIZE) || large);
    if (!ok) {
      rec_ops_free(o);
      return par_error(PAR_ECORRUPT, "op %u of a log record is malformed", k);
    }
    wal_op *op = &o->ops[k];
    *op = (wal_op){(uint8_t)type, (uint16_t)kl, vl, q, q + kl};
    if (large && ship) {
      o->from[k] = vptr_decode(q + kl);
      *op = (wal_op){WAL_PUT, (uint16_t)kl, vl - VPTR_SIZE, q, q + kl + VPTR_SIZE};
    } else if (large) {
      tree_entry e = {.cat = CAT_LARGE, .key = q, .key_len = (uint16_t)kl, .value = q + kl,
                      .value_len = VPTR_SIZE, .ks = &r->keys};
      const uint8_t *val;
      uint32_t len;
      int rc = region_read_large(r, &e, &val, &len, &o->owned[k]);
      if (rc) {
        rec_ops_free(o);
        return rc;
      }
      o->from[k] = vptr_decode(q + kl);
      *op = (wal_op){WAL_PUT_LARGE, (uint16_t)kl, len, q, val};
    }
    o->size += wal_op_size(op->key_len, op->value_len + (large && !ship ? VPTR_SIZE : 0));
    p = q + kl + vl;
  }
  if (p != end) {
    rec_ops_free(o);
    return par_error(PAR_ECORRUPT, "log record has %zu bytes after its ops", (size_t)(end - p));
  }
  return PAR_OK;
}

/* A record read from the WAL, shipped: a large value goes after its place. */
static void encode_record(uint8_t *out, uint64_t lsn, const rec_ops *o) {
  enc64(out, lsn);
  enc32(out + 8, o->n);
  enc32(out + 12, (uint32_t)(o->size - SHIP_HDR));
  uint8_t *p = out + SHIP_HDR;
  for (uint32_t i = 0; i < o->n; i++) {
    const wal_op *op = &o->ops[i];
    int large = op->type == WAL_PUT_LARGE;
    *p++ = op->type;
    p = put_varint(p, op->key_len);
    p = put_varint(p, op->value_len + (large ? VPTR_SIZE : 0));
    memcpy(p, op->key, op->key_len);
    p += op->key_len;
    if (large) {
      vptr_encode(p, o->from[i]);
      p += VPTR_SIZE;
    }
    if (op->value_len) memcpy(p, op->value, op->value_len);
    p += op->value_len;
  }
}

PAR_API int par_repl_cursor_read(par_repl_cursor *c, void *buf, size_t cap, size_t *len,
                                 uint64_t *last_lsn) {
  if (!c || (!buf && cap) || !len || !last_lsn) return par_error(PAR_EINVAL, "par_repl_cursor_read: NULL argument");
  par_region *r = c->r;
  const uint64_t start = c->next;
  *len = 0;
  *last_lsn = start - 1;
  uint64_t readable = wal_durable_lsn(&r->wal);
  /* What writers appended since, pushed to the file: one write for every
   * write waiting on this cursor's reader, and no fdatasync on their path. */
  if (c->written) {
    int rc = wal_push(&r->wal, UINT64_MAX, &readable);
    if (rc) return rc;
  }
  wal_list l;
  int rc = pin_and_list(c, start, &l);
  size_t pos = 0;
  while (!rc && c->next <= readable) {
    int idx = c->at.seg ? find_seg(&l, &c->at) : -1;
    if (idx < 0) {
      if ((rc = locate(c, &l))) break;
      idx = find_seg(&l, &c->at);
    }
    const uint8_t *base = file_map(&r->vol->file) + seg_offset(c->at.seg);
    uint32_t seed = wal_seed(r->id, c->at.gen), size, count;
    if (!wal_parse(base, c->off, seed, c->expect, &size, &count)) {
      uint32_t aligned = ALIGN_UP(c->off, PAR_BLOCK); /* skip a seal's padding */
      if (aligned != c->off && aligned < SEG && wal_parse(base, aligned, seed, c->expect, &size, &count)) {
        c->off = aligned;
      } else if ((uint32_t)idx + 1 < l.n && l.w[idx + 1].first_lsn == c->expect) {
        c->at = l.w[idx + 1]; /* the record went to the next segment */
        c->off = 0;
        continue;
      } else if ((uint32_t)idx + 1 < l.n) {
        rc = par_error(PAR_ENOENT, "LSNs %llu..%llu are not in the log of region '%s'",
                       (unsigned long long)c->expect, (unsigned long long)(l.w[idx + 1].first_lsn - 1), r->name);
        break;
      } else {
        if (c->expect <= readable)
          rc = par_error(PAR_ECORRUPT, "written log record %llu of region '%s' cannot be read",
                         (unsigned long long)c->expect, r->name);
        break;
      }
    }
    uint64_t rec_last = c->expect + count - 1;
    if (rec_last > readable) break;
    if (c->expect < c->next) { /* locating: skip the records before next */
      if (c->next <= rec_last) {
        rc = par_error(PAR_EINVAL, "LSN %llu is inside a log record (%llu..%llu)", (unsigned long long)c->next,
                       (unsigned long long)c->expect, (unsigned long long)rec_last);
        break;
      }
    } else {
      rec_ops o;
      const uint8_t *rec = base + c->off;
      rc = decode_ops(r, rec + WAL_HDR, rec + size, count, 0, &o);
      if (rc) break;
      if (pos + o.size > cap) {
        if (!pos) {
          *len = o.size;
          rc = par_error(PAR_ETOOBIG, "log record %llu needs %zu bytes", (unsigned long long)c->expect, o.size);
        }
        rec_ops_free(&o);
        break;
      }
      encode_record((uint8_t *)buf + pos, c->expect, &o);
      pos += o.size;
      rec_ops_free(&o);
      c->next = rec_last + 1;
    }
    c->off += size;
    c->expect = rec_last + 1;
  }
  repl_wal_list_free(&l);
  /* Released during the copy, or a segment its values were read from let
   * go meanwhile: either may have been reused. */
  if (!rc && pos) rc = released_error(c);
  if (!rc && pos) rc = unreadable_error(c, start);
  if (rc) {
    /* Nothing returned: the next call starts again from the same LSN. */
    size_t need = rc == PAR_ETOOBIG ? *len : 0;
    c->next = start;
    c->at.seg = 0;
    *len = need;
    return rc;
  }
  *len = pos;
  *last_lsn = c->next - 1;
  return PAR_OK;
}

/* ---- apply ---- */

/* Applies one record (lsn, ops) unless the region holds it already. */
static int apply_record(par_region *r, uint64_t lsn, const wal_op *ops, uint32_t n) {
  pthread_mutex_lock(&r->write_mu);
  int role = r->repl_role;
  uint64_t next = r->next_lsn;
  int rc = PAR_OK;
  if (role != PAR_REPL_PRIMARY && lsn + n - 1 < next) {
    pthread_mutex_unlock(&r->write_mu);
    atomic_fetch_add(&r->repl_stats.skipped, 1);
    return PAR_OK;
  }
  if (role == PAR_REPL_PRIMARY)
    rc = par_error(PAR_EINVAL, "region '%s' is a primary: it takes no shipped records", r->name);
  else if (lsn != next)
    rc = par_error(PAR_EINVAL, "shipped record %llu..%llu does not follow the log of region '%s' (next LSN %llu)",
                   (unsigned long long)lsn, (unsigned long long)(lsn + n - 1), r->name, (unsigned long long)next);
  else if (role == PAR_REPL_BACKUP_SEND_INDEX && !(rc = wal_append(&r->wal, lsn, ops, n)))
    r->next_lsn = lsn + n; /* the log copy only: promotion replays it into L0 */
  pthread_mutex_unlock(&r->write_mu);
  /* A build-index backup applies as a primary does, at the given LSN (which
   * region_apply_at checks again under write_mu). */
  if (!rc && role == PAR_REPL_BACKUP_BUILD_INDEX) rc = region_apply_at(r, ops, n, 0, lsn);
  if (!rc) atomic_fetch_add(&r->repl_stats.applied, 1);
  return rc;
}

/* A send-index backup's log copy keeps a pointer for each large value the
 * mirror took (repl/mirror.c), written there before any record is logged;
 * next: the log copy's next LSN. */
static int place_large(par_region *r, rec_ops *recs, const uint64_t *lsns, uint32_t nrecs, uint64_t next) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < nrecs; i++)
    for (uint32_t k = 0; k < recs[i].n; k++) n += recs[i].from[k].size != 0;
  if (!n) return PAR_OK;
  shipped_large *v = malloc(n * sizeof *v);
  if (!v) return par_error(PAR_ENOMEM, "shipped large values");
  n = 0;
  for (uint32_t i = 0; i < nrecs; i++)
    for (uint32_t k = 0; k < recs[i].n; k++) {
      const wal_op *op = &recs[i].ops[k];
      if (recs[i].from[k].size)
        v[n++] = (shipped_large){.from = recs[i].from[k], .lsn = lsns[i] + k, .key = op->key, .value = op->value,
                                 .key_len = op->key_len, .value_len = op->value_len};
    }
  int rc = repl_mirror_place(r, v, n, next);
  n = 0;
  for (uint32_t i = 0; i < nrecs && !rc; i++)
    for (uint32_t k = 0; k < recs[i].n && !rc; k++) {
      if (!recs[i].from[k].size || !v[n++].to.seg) continue;
      if (!recs[i].ptrs && !(recs[i].ptrs = malloc((size_t)recs[i].n * VPTR_SIZE))) {
        rc = par_error(PAR_ENOMEM, "shipped large values");
        break;
      }
      uint8_t *ptr = recs[i].ptrs + (size_t)k * VPTR_SIZE;
      vptr_encode(ptr, v[n - 1].to);
      recs[i].ops[k] = (wal_op){WAL_PUT_LARGE, recs[i].ops[k].key_len, VPTR_SIZE, recs[i].ops[k].key, ptr};
    }
  free(v);
  return rc;
}

PAR_API int par_repl_apply(par_region *r, const void *records, size_t len, uint32_t flags,
                           uint64_t *applied_lsn) {
  if (!r || (!records && len) || !applied_lsn) return par_error(PAR_EINVAL, "par_repl_apply: NULL argument");
  if (flags & ~PAR_SYNC) return par_error(PAR_EINVAL, "par_repl_apply takes PAR_SYNC only, not flags %#x", flags);
  /* Decoded whole first: the mirror takes the large values of every record
   * before any is logged. A malformed record ends the decoding; the ones
   * before it are applied, and its error returned. */
  const uint8_t *p = records, *end = p + len;
  uint32_t nrecs = 0, cap = 0;
  rec_ops *recs = NULL;
  uint64_t *lsns = NULL;
  int bad = PAR_OK, rc = PAR_OK;
  while (!bad && p < end) {
    if ((size_t)(end - p) < SHIP_HDR) {
      bad = par_error(PAR_ECORRUPT, "shipped records end inside a record header");
      break;
    }
    uint64_t lsn = dec64(p);
    uint32_t count = dec32(p + 8), plen = dec32(p + 12);
    if (plen > (size_t)(end - p) - SHIP_HDR || lsn == 0 || lsn > UINT64_MAX - count) {
      bad = par_error(PAR_ECORRUPT, "shipped record %llu is malformed", (unsigned long long)lsn);
      break;
    }
    if (nrecs == cap) {
      cap = cap ? 2 * cap : 64;
      rec_ops *nr = realloc(recs, cap * sizeof *nr);
      uint64_t *nl = nr ? realloc(lsns, cap * sizeof *nl) : NULL;
      if (nr) recs = nr;
      if (nl) lsns = nl;
      if (!nr || !nl) {
        rc = par_error(PAR_ENOMEM, "shipped records");
        break;
      }
    }
    bad = decode_ops(r, p + SHIP_HDR, p + SHIP_HDR + plen, count, 1, &recs[nrecs]);
    if (!bad) lsns[nrecs++] = lsn;
    p += SHIP_HDR + plen;
  }
  pthread_mutex_lock(&r->repl_apply_mu);
  pthread_mutex_lock(&r->write_mu);
  int role = r->repl_role;
  uint64_t next = r->next_lsn;
  pthread_mutex_unlock(&r->write_mu);
  if (!rc && role == PAR_REPL_BACKUP_SEND_INDEX) rc = place_large(r, recs, lsns, nrecs, next);
  for (uint32_t i = 0; i < nrecs && !rc; i++) rc = apply_record(r, lsns[i], recs[i].ops, recs[i].n);
  pthread_mutex_unlock(&r->repl_apply_mu);
  for (uint32_t i = 0; i < nrecs; i++) rec_ops_free(&recs[i]);
  free(recs);
  free(lsns);
  if (!rc) rc = bad;
  pthread_mutex_lock(&r->write_mu);
  uint64_t last = r->next_lsn - 1;
  pthread_mutex_unlock(&r->write_mu);
  int src = (flags & PAR_SYNC) ? wal_sync(&r->wal, last) : PAR_OK;
  *applied_lsn = last;
  return rc ? rc : src;
}
