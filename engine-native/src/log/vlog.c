#include "log/vlog.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/segalloc.h"
#include "util/crc32c.h"
#include "util/status.h"

#define SEG ((uint32_t)PAR_SEGMENT_SIZE)
#define VLOG_CHUNK (256u * 1024)

void vptr_encode(uint8_t *p, vptr v) {
  enc32(p, v.seg);
  enc32(p + 4, v.off);
  enc32(p + 8, v.inc);
  enc32(p + 12, v.size);
}

vptr vptr_decode(const uint8_t *p) { return (vptr){dec32(p), dec32(p + 4), dec32(p + 8), dec32(p + 12)}; }

uint32_t vlog_seed(uint32_t region_id, uint32_t inc) {
  uint8_t b[8];
  enc32(b, region_id);
  enc32(b + 4, inc);
  return crc32c(0x766c6f67u, b, 8);
}

int vlog_init(vlog *l, par_file *f, uint32_t region_id, vlog_take_fn take, vlog_list_fn list,
              vlog_give_back_fn give_back, void *ctx) {
  memset(l, 0, sizeof *l);
  l->file = f;
  l->region_id = region_id;
  l->take = take;
  l->list = list;
  l->give_back = give_back;
  l->ctx = ctx;
  l->cap = VLOG_CHUNK;
  l->buf = file_buf_alloc(l->cap);
  if (!l->buf) return par_error(PAR_ENOMEM, "large-log buffer");
  pthread_mutex_init(&l->mu, NULL);
  pthread_mutex_init(&l->wmu, NULL);
  return PAR_OK;
}

void vlog_destroy(vlog *l) {
  free(l->buf);
  free(l->sealed);
  free(l->spare);
  free(l->taken);
  free(l->left);
  free(l->left_lsn);
  free(l->left_unlogged);
  pthread_mutex_destroy(&l->mu);
  pthread_mutex_destroy(&l->wmu);
  memset(l, 0, sizeof *l);
}

/* Room for one more taken and one more left head (mu held): made before a
 * segment is taken, so that noting it cannot fail. */
static int reserve_pending(vlog *l) {
  uint32_t need = (l->ntaken > l->nleft ? l->ntaken : l->nleft) + 1;
  if (need <= l->pending_cap) return PAR_OK;
  uint32_t cap = l->pending_cap ? l->pending_cap * 2 : 4;
  vlog_taken *t = realloc(l->taken, cap * sizeof *t);
  if (t) l->taken = t;
  vptr *p = t ? realloc(l->left, cap * sizeof *p) : NULL;
  if (p) l->left = p;
  uint64_t *n = p ? realloc(l->left_lsn, cap * sizeof *n) : NULL;
  if (n) l->left_lsn = n;
  uint64_t *u = n ? realloc(l->left_unlogged, cap * sizeof *u) : NULL;
  if (u) l->left_unlogged = u;
  if (!u) return par_error(PAR_ENOMEM, "large-log segment list");
  l->pending_cap = cap;
  return PAR_OK;
}

int vlog_resume(vlog *l, uint32_t seg, uint32_t inc, uint32_t end) {
  assert(!l->seg && !l->ntaken && end < SEG);
  uint32_t base = end - end % PAR_BLOCK;
  /* The partial last block, to be written again with the records after it
   * (as after a seal); seal zeroed the bytes past end. */
  int rc = end > base ? file_read(l->file, l->buf, PAR_BLOCK, seg_offset(seg) + base) : PAR_OK;
  if (rc) return rc;
  pthread_mutex_lock(&l->mu);
  rc = reserve_pending(l); /* room to leave it, as for a head taken */
  if (rc) {
    pthread_mutex_unlock(&l->mu);
    return rc;
  }
  l->seg = seg;
  l->inc = inc;
  l->seed = vlog_seed(l->region_id, inc);
  l->head_lsn = l->head_unlogged = 0; /* every record in it is durable and covered */
  l->base = base;
  l->fill = l->flushed = end - base;
  pthread_mutex_unlock(&l->mu);
  return PAR_OK;
}

/* The head stops being appended to: its tail from `used` on is garbage. */
static void leave_head(vlog *l, uint32_t used) {
  assert(l->nleft < l->pending_cap);
  l->left_lsn[l->nleft] = l->head_lsn;
  l->left_unlogged[l->nleft] = l->head_unlogged;
  l->left[l->nleft++] = (vptr){l->seg, used, l->inc, SEG - used};
  l->seg = 0;
}

/* Seals what the buffer holds that the file lacks, to the end of its last
 * block (mu held, no sealed buffer), and moves past its full blocks: a
 * spare buffer takes over the tail, starting with a partial last block,
 * which is written again with the records after it. Its earlier bytes are
 * written again as they were, so a torn write leaves the records there
 * whole (each sector holds one of two equal versions); padding each flush
 * to a block instead cost a log written in small flushes (a write with
 * PAR_SYNC each, a replicated primary) up to a block per flush, twice its
 * records' bytes in the SD mix. */
static int seal(vlog *l) {
  assert(!l->sealed && l->fill > l->flushed);
  uint8_t *next = l->spare ? l->spare : file_buf_alloc(VLOG_CHUNK);
  if (!next) return par_error(PAR_ENOMEM, "large-log buffer");
  l->spare = NULL;
  uint32_t len = ALIGN_UP(l->fill, PAR_BLOCK);
  memset(l->buf + l->fill, 0, len - l->fill);
  uint32_t full = l->fill - l->fill % PAR_BLOCK, keep = l->fill - full;
  memcpy(next, l->buf + full, keep);
  l->sealed = l->buf;
  l->sealed_seg = l->seg;
  l->sealed_inc = l->inc;
  l->sealed_base = l->base;
  l->sealed_fill = l->fill;
  l->sealed_len = len;
  l->sealed_cap = l->cap;
  __atomic_store_n(&l->has_sealed, 1, __ATOMIC_RELEASE);
  l->buf = next;
  l->cap = VLOG_CHUNK;
  l->base += full;
  l->fill = l->flushed = keep;
  if (l->base >= SEG) leave_head(l, SEG);
  return PAR_OK;
}

/* Writes the sealed buffer, if any (wmu held, mu not): appends and reads go
 * on meanwhile, reads of its records from the buffer itself. Once written
 * it becomes the spare (a buffer grown for one record is freed instead). */
static int write_sealed(vlog *l) {
  pthread_mutex_lock(&l->mu);
  const uint8_t *b = l->sealed;
  uint32_t len = l->sealed_len;
  uint64_t at = seg_offset(l->sealed_seg) + l->sealed_base;
  int rc = l->failed;
  pthread_mutex_unlock(&l->mu);
  if (!b || rc) return rc;
  rc = __atomic_load_n(&l->cached, __ATOMIC_RELAXED) ? file_write_cached(l->file, b, len, at)
                                                     : file_write(l->file, b, len, at);
  pthread_mutex_lock(&l->mu);
  assert(l->sealed == b); /* nobody seals over a sealed buffer */
  if (rc) {
    l->failed = rc;
  } else {
    if (!l->spare && l->sealed_cap == VLOG_CHUNK) l->spare = l->sealed;
    else free(l->sealed);
    l->sealed = NULL;
    __atomic_store_n(&l->has_sealed, 0, __ATOMIC_RELAXED);
    l->written += len;
  }
  pthread_mutex_unlock(&l->mu);
  return rc;
}

int vlog_write_sealed(vlog *l) {
  if (!__atomic_load_n(&l->has_sealed, __ATOMIC_ACQUIRE)) return PAR_OK;
  pthread_mutex_lock(&l->wmu);
  int rc = write_sealed(l);
  pthread_mutex_unlock(&l->wmu);
  return rc;
}

/* Appends seal under mu alone, so one may seal between the write of the
 * sealed buffer and the seal here: that buffer is written first. */
int vlog_flush(vlog *l) {
  pthread_mutex_lock(&l->wmu);
  int rc, again;
  do {
    rc = write_sealed(l);
    if (rc) break;
    pthread_mutex_lock(&l->mu);
    rc = l->failed;
    again = !rc && l->sealed;
    if (!rc && !again && l->fill > l->flushed) rc = seal(l);
    pthread_mutex_unlock(&l->mu);
  } while (!rc && again);
  if (!rc) rc = write_sealed(l);
  pthread_mutex_unlock(&l->wmu);
  return rc;
}

/* Whether left head i may be closed (mu held). */
static int closable(const vlog *l, uint32_t i, uint64_t durable_lsn, uint64_t covered_lsn) {
  return l->left_lsn[i] <= durable_lsn && l->left_unlogged[i] <= covered_lsn;
}

int vlog_list_pending(vlog *l, uint64_t durable_lsn, uint64_t covered_lsn) {
  pthread_mutex_lock(&l->mu);
  int rc = l->failed;
  uint32_t nt = l->ntaken, nl = 0;
  for (uint32_t i = 0; i < l->nleft; i++) nl += closable(l, i, durable_lsn, covered_lsn);
  vlog_taken *taken = NULL;
  vptr *left = NULL;
  if (!rc && (nt || nl)) {
    taken = malloc((nt + 1) * sizeof *taken);
    left = malloc((nl + 1) * sizeof *left);
    if (!taken || !left) rc = par_error(PAR_ENOMEM, "large-log segment list");
  }
  if (!rc && (nt || nl)) {
    memcpy(taken, l->taken, nt * sizeof *taken);
    /* The heads to close out; the rest move up, in order. */
    uint32_t closed = 0, kept = 0;
    for (uint32_t i = 0; i < l->nleft; i++) {
      if (closable(l, i, durable_lsn, covered_lsn)) {
        left[closed++] = l->left[i];
        continue;
      }
      l->left_lsn[kept] = l->left_lsn[i];
      l->left_unlogged[kept] = l->left_unlogged[i];
      l->left[kept++] = l->left[i];
    }
    assert(closed == nl && kept + nl == l->nleft);
    l->ntaken = 0;
    l->nleft = kept;
    l->listing = nt;
  }
  pthread_mutex_unlock(&l->mu);
  if (!rc && (nt || nl)) {
    /* Without mu: appenders go on (into the heads being listed, too). */
    rc = l->list(l->ctx, taken, nt, left, nl);
    pthread_mutex_lock(&l->mu);
    l->listing = 0;
    if (rc && !l->failed) l->failed = rc; /* the catalog takes no changes after a failed redo write */
    pthread_mutex_unlock(&l->mu);
  }
  free(taken);
  free(left);
  return rc;
}

uint32_t vlog_unlisted(vlog *l) {
  pthread_mutex_lock(&l->mu);
  uint32_t n = l->ntaken + l->listing;
  pthread_mutex_unlock(&l->mu);
  return n;
}

uint32_t vlog_held(vlog *l, uint32_t held[2]) {
  uint32_t n = 0;
  pthread_mutex_lock(&l->mu);
  if (l->seg) held[n++] = l->inc;
  if (l->sealed && (!l->seg || l->sealed_inc != l->inc)) held[n++] = l->sealed_inc;
  pthread_mutex_unlock(&l->mu);
  return n;
}

uint64_t vlog_written(vlog *l) {
  pthread_mutex_lock(&l->mu);
  uint64_t n = l->written;
  pthread_mutex_unlock(&l->mu);
  return n;
}

int vlog_append(vlog *l, uint64_t lsn, int unlogged, const void *key, uint16_t key_len, const void *value,
                uint32_t value_len, vptr *out) {
  size_t size = vlog_record_size(key_len, value_len);
  if (size > SEG) return par_error(PAR_ETOOBIG, "large-log record of %zu bytes exceeds a segment", size);
  pthread_mutex_lock(&l->mu);
  int rc = PAR_OK;
  while (!rc) {
    if (l->failed) {
      rc = par_error(PAR_EFAILED, "the large log failed earlier (%s)", par_strerror(l->failed));
    } else if (!l->seg) {
      uint32_t seg, inc;
      rc = reserve_pending(l);
      if (!rc) rc = l->take(l->ctx, 1, &seg, &inc);
      if (!rc) {
        l->taken[l->ntaken++] = (vlog_taken){seg, inc, 1};
        l->seg = seg;
        l->inc = inc;
        l->head_lsn = l->head_unlogged = 0;
        l->base = l->fill = l->flushed = 0;
        l->seed = vlog_seed(l->region_id, inc);
      }
    } else if (l->base + l->fill + size > SEG || l->fill + size > l->cap) {
      if (l->fill > l->flushed && l->sealed) {
        /* The buffer sealed before is not written yet: write it here, as
         * the appender that sealed it would. */
        pthread_mutex_unlock(&l->mu);
        vlog_write_sealed(l); /* a failure is in l->failed */
        pthread_mutex_lock(&l->mu);
      } else if (l->fill > l->flushed) {
        rc = seal(l);
      } else if (l->base + l->fill + size > SEG) leave_head(l, l->base + l->fill); /* the rest stays unused */
      else {
        uint32_t cap = ALIGN_UP(l->fill + (uint32_t)size, PAR_BLOCK);
        uint8_t *b = file_buf_alloc(cap);
        if (!b) rc = par_error(PAR_ENOMEM, "large-log buffer of %u bytes", cap);
        else {
          memcpy(b, l->buf, l->fill); /* the written part of the last block */
          free(l->buf);
          l->buf = b;
          l->cap = cap;
        }
      }
    } else {
      break;
    }
  }
  if (rc) {
    pthread_mutex_unlock(&l->mu);
    return rc;
  }
  vlog_encode(l->buf + l->fill, l->seed, lsn, key, key_len, value, value_len);
  *out = (vptr){l->seg, l->base + l->fill, l->inc, (uint32_t)size};
  if (lsn > l->head_lsn) l->head_lsn = lsn;
  if (unlogged && lsn > l->head_unlogged) l->head_unlogged = lsn;
  l->fill += (uint32_t)size;
  l->bytes += size;
  pthread_mutex_unlock(&l->mu);
  return PAR_OK;
}

size_t vlog_encode(uint8_t *r, uint32_t seed, uint64_t lsn, const void *key, uint16_t key_len,
                   const void *value, uint32_t value_len) {
  size_t size = vlog_record_size(key_len, value_len);
  enc32(r + 4, (uint32_t)(size - VLOG_HDR));
  enc64(r + 8, lsn);
  uint8_t *p = put_varint(r + VLOG_HDR, key_len);
  p = put_varint(p, value_len);
  memcpy(p, key, key_len);
  if (value_len) memcpy(p + key_len, value, value_len);
  enc32(r, crc32c(seed, r + 4, size - 4));
  return size;
}

int vlog_write_huge(par_file *f, uint32_t seed, uint32_t seg, uint64_t lsn, const void *key, uint16_t key_len,
                    const void *value, uint32_t value_len) {
  size_t size = vlog_record_size(key_len, value_len);
  assert(size > SEG);
  uint8_t *buf = file_buf_alloc(SEG);
  if (!buf) return par_error(PAR_ENOMEM, "large-value buffer");
  /* The header and key, then the value streamed through the buffer; the
   * checksum covers all of it, so it is computed first. */
  uint8_t *p = buf + VLOG_HDR;
  enc32(buf + 4, (uint32_t)(size - VLOG_HDR));
  enc64(buf + 8, lsn);
  p = put_varint(p, key_len);
  p = put_varint(p, value_len);
  memcpy(p, key, key_len);
  p += key_len;
  uint32_t crc = crc32c(seed, buf + 4, (size_t)(p - buf) - 4);
  crc = crc32c(crc, value, value_len);
  enc32(buf, crc);
  const uint8_t *v = value;
  size_t left = value_len, first = SEG - (size_t)(p - buf) < left ? SEG - (size_t)(p - buf) : left;
  memcpy(p, v, first);
  size_t fill = (size_t)(p - buf) + first;
  v += first;
  left -= first;
  int rc;
  for (uint64_t off = seg_offset(seg);;) {
    size_t len = ALIGN_UP(fill, PAR_BLOCK);
    memset(buf + fill, 0, len - fill);
    rc = file_write(f, buf, len, off);
    if (rc || !left) break;
    off += len;
    fill = left < SEG ? left : SEG;
    memcpy(buf, v, fill);
    v += fill;
    left -= fill;
  }
  free(buf);
  return rc;
}

int vlog_append_huge(vlog *l, uint64_t lsn, const void *key, uint16_t key_len, const void *value,
                     uint32_t value_len, vptr *out) {
  size_t size = vlog_record_size(key_len, value_len);
  uint32_t n = (uint32_t)((size + SEG - 1) / SEG), seg, inc;
  *out = (vptr){0};
  int rc = l->take(l->ctx, n, &seg, &inc);
  if (rc) return rc;
  if ((rc = vlog_write_huge(l->file, vlog_seed(l->region_id, inc), seg, lsn, key, key_len, value, value_len))) {
    l->give_back(l->ctx, seg, n);
    return rc;
  }
  /* A listing that fails after its record reached the file stops the
   * allocator (segalloc_stop), so the run given back is never reused. */
  vlog_taken run = {seg, inc, n};
  if ((rc = l->list(l->ctx, &run, 1, NULL, 0))) {
    l->give_back(l->ctx, seg, n);
    return rc;
  }
  /* Not added to `written`: the listing's fdatasync made the run durable. */
  pthread_mutex_lock(&l->mu);
  l->bytes += size;
  pthread_mutex_unlock(&l->mu);
  *out = (vptr){seg, 0, inc, (uint32_t)size};
  return PAR_OK;
}

int vlog_parse(const uint8_t *rec, size_t avail, uint32_t seed, vlog_record *out) {
  if (avail < VLOG_HDR) return PAR_ECORRUPT;
  uint32_t len = dec32(rec + 4);
  if (len > avail - VLOG_HDR) return PAR_ECORRUPT;
  /* The lengths must add up before the checksum is worth computing:
   * vlog_resync tries every offset of a segment, and most of them hold a
   * plausible len (garbage, an earlier incarnation's records), whose
   * checksum over up to 2 MiB made a GC pass over a segment's unwritten
   * tail take a large part of a second. */
  const uint8_t *end = rec + VLOG_HDR + len;
  uint32_t kl = 0, vl = 0;
  const uint8_t *p = get_varint32(rec + VLOG_HDR, end, &kl);
  if (p) p = get_varint32(p, end, &vl);
  if (!p || (size_t)(end - p) != (size_t)kl + vl || kl > 0xffff) return PAR_ECORRUPT;
  if (crc32c(seed, rec + 4, VLOG_HDR - 4 + len) != dec32(rec)) return PAR_ECORRUPT;
  out->lsn = dec64(rec + 8);
  out->key = p;
  out->key_len = (uint16_t)kl;
  out->value = p + kl;
  out->value_len = vl;
  out->size = VLOG_HDR + len;
  return PAR_OK;
}

int vlog_next(const uint8_t *seg_image, uint32_t *off, uint32_t seed, vlog_record *out) {
  uint32_t o = *off;
  if (o + VLOG_HDR <= SEG && vlog_parse(seg_image + o, SEG - o, seed, out) == PAR_OK) return PAR_OK;
  uint32_t next = ALIGN_UP(o, PAR_BLOCK); /* a flush's padding */
  if (next == o || next + VLOG_HDR > SEG || vlog_parse(seg_image + next, SEG - next, seed, out) != PAR_OK)
    return PAR_NOT_FOUND;
  *off = next;
  return PAR_OK;
}

int vlog_resync(const uint8_t *seg_image, uint32_t *off, uint32_t seed, vlog_record *out) {
  for (uint32_t o = *off + 1; o + VLOG_HDR <= SEG; o++)
    if (vlog_parse(seg_image + o, SEG - o, seed, out) == PAR_OK) {
      *off = o;
      return PAR_OK;
    }
  return PAR_NOT_FOUND;
}

/* Where record p's bytes are in memory (mu held): in the tail buffer or
 * the sealed one, with *avail bytes from there on; NULL when neither holds
 * it. */
static const uint8_t *buffered_at(const vlog *l, vptr p, uint32_t *avail) {
  if (l->seg && p.seg == l->seg && p.inc == l->inc && p.off >= l->base && p.off < l->base + l->fill) {
    *avail = l->base + l->fill - p.off;
    return l->buf + (p.off - l->base);
  }
  if (l->sealed && p.seg == l->sealed_seg && p.inc == l->sealed_inc && p.off >= l->sealed_base &&
      p.off < l->sealed_base + l->sealed_fill) {
    *avail = l->sealed_base + l->sealed_fill - p.off;
    return l->sealed + (p.off - l->sealed_base);
  }
  return NULL;
}

/* The lock is held only to look and to copy the record's bytes: writers
 * append under it, so the allocation and the checksum happen outside. */
int vlog_read_buffered(vlog *l, vptr p, uint8_t **copy, uint32_t *value_len) {
  pthread_mutex_lock(&l->mu);
  uint32_t avail = 0;
  int there = buffered_at(l, p, &avail) != NULL;
  /* A record in a buffer ends there: a damaged pointer's size must not
   * size the allocation. */
  uint32_t want = p.size < avail ? p.size : avail;
  pthread_mutex_unlock(&l->mu);
  if (!there) return 0;
  uint8_t *rec = malloc(want ? want : 1);
  if (!rec) return par_error(PAR_ENOMEM, "value copy");
  pthread_mutex_lock(&l->mu);
  const uint8_t *at = buffered_at(l, p, &avail); /* NULL: written out meanwhile, read from the file */
  if (at) {
    avail = avail < want ? avail : want;
    memcpy(rec, at, avail);
  }
  pthread_mutex_unlock(&l->mu);
  uint32_t seed = vlog_seed(l->region_id, p.inc);
  if (!at) {
    free(rec);
    return 0;
  }
  vlog_record r;
  if (vlog_parse(rec, avail, seed, &r) != PAR_OK) {
    free(rec);
    return par_error(PAR_ECORRUPT, "large-log record at %u:%u is damaged", p.seg, p.off);
  }
  memmove(rec, r.value, r.value_len); /* callers free the copy: the value goes first */
  *copy = rec;
  *value_len = r.value_len;
  return 1;
}

/* Where the record at p is in the volume, once p is checked to lie in it. */
static int record_offset(const par_file *f, vptr p, uint64_t *off) {
  uint64_t size = __atomic_load_n(&f->size, __ATOMIC_ACQUIRE);
  *off = seg_offset(p.seg) + p.off;
  if (p.off >= SEG || *off + p.size > size || p.size < VLOG_HDR)
    return par_error(PAR_ECORRUPT, "large-log pointer %u:%u is outside the volume", p.seg, p.off);
  return PAR_OK;
}

static int parse_at(const uint8_t *rec, uint32_t region_id, vptr p, vlog_record *out) {
  if (vlog_parse(rec, p.size, vlog_seed(region_id, p.inc), out) != PAR_OK)
    return par_error(PAR_ECORRUPT, "large-log record at %u:%u fails its checksum", p.seg, p.off);
  return PAR_OK;
}

int vlog_read_mapped(const par_file *f, uint32_t region_id, vptr p, vlog_record *out) {
  uint64_t off;
  int rc = record_offset(f, p, &off);
  return rc ? rc : parse_at(file_map(f) + off, region_id, p, out);
}

int vlog_read_copy(const par_file *f, uint32_t region_id, vptr p, uint8_t **copy, vlog_record *out) {
  uint64_t off;
  int rc = record_offset(f, p, &off);
  if (rc) return rc;
  uint8_t *buf = malloc(p.size);
  if (!buf) return par_error(PAR_ENOMEM, "large-log record of %u bytes", p.size);
  rc = file_read_cached(f, buf, p.size, off);
  if (!rc) rc = parse_at(buf, region_id, p, out);
  if (rc) {
    free(buf);
    return rc;
  }
  *copy = buf;
  return PAR_OK;
}

void vlog_readahead_note(vlog_readahead *ra, const par_file *f, vptr p) {
  uint32_t i = p.seg % VLOG_RA_SLOTS;
  uint64_t need = (uint64_t)p.off + p.size;
  if (ra->seg[i] != p.seg || p.off > ra->end[i]) {
    /* A new stream, or a jump past what was asked: start at this record. */
    ra->seg[i] = p.seg;
    ra->end[i] = p.off / PAR_BLOCK * PAR_BLOCK;
  }
  if (need + VLOG_RA_WINDOW / 2 <= ra->end[i] || ra->end[i] >= SEG) return;
  uint64_t end = need + VLOG_RA_WINDOW < SEG ? need + VLOG_RA_WINDOW : SEG;
  file_prefetch(f, seg_offset(p.seg) + ra->end[i], end - ra->end[i]);
  ra->end[i] = (uint32_t)end;
}
