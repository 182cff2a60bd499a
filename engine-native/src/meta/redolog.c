#include "meta/redolog.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/coding.h"
#include "util/crc32c.h"
#include "util/status.h"

#define SEG ((uint32_t)PAR_SEGMENT_SIZE)
#define REC_MAGIC 0x4c525850u /* "PXRL" */
#define HDR 32u
/* A record starts block-aligned and must leave a block for a LINK record. */
#define MAX_PAYLOAD (SEG - 2 * PAR_BLOCK - HDR)

uint32_t redolog_payload_limit = MAX_PAYLOAD;

enum { REC_REGION = 1, REC_DROP = 2, REC_NEXT_ID = 3, REC_LINK = 4, REC_TXN = 5 };

/* Record: magic u32 | type u32 | len u32 | crc u32 | seq u64 | stream u64 |
 * payload[len]; crc covers the header (crc = 0) and the payload. */

region_desc *catalog_find(const catalog *c, const char *name) {
  for (uint32_t i = 0; i < c->n; i++)
    if (strcmp(c->regions[i]->name, name) == 0) return c->regions[i];
  return NULL;
}

region_desc *catalog_find_id(const catalog *c, uint32_t id) {
  for (uint32_t i = 0; i < c->n; i++)
    if (c->regions[i]->id == id) return c->regions[i];
  return NULL;
}

void catalog_free(catalog *c) {
  for (uint32_t i = 0; i < c->n; i++) {
    region_desc_free(c->regions[i]);
    free(c->regions[i]);
  }
  free(c->regions);
  memset(c, 0, sizeof *c);
}

int catalog_set(catalog *c, region_desc *d) {
  for (uint32_t i = 0; i < c->n; i++)
    if (c->regions[i]->id == d->id) {
      region_desc_free(c->regions[i]);
      *c->regions[i] = *d;
      return PAR_OK;
    }
  if (c->n == c->cap) {
    uint32_t cap = c->cap ? c->cap * 2 : 8;
    region_desc **v = realloc(c->regions, cap * sizeof *v);
    if (!v) return par_error(PAR_ENOMEM, "catalog");
    c->regions = v;
    c->cap = cap;
  }
  region_desc *copy = malloc(sizeof *copy);
  if (!copy) return par_error(PAR_ENOMEM, "catalog entry");
  *copy = *d;
  c->regions[c->n++] = copy;
  return PAR_OK;
}

void catalog_remove(catalog *c, uint32_t id) {
  for (uint32_t i = 0; i < c->n; i++)
    if (c->regions[i]->id == id) {
      region_desc_free(c->regions[i]);
      free(c->regions[i]);
      memmove(c->regions + i, c->regions + i + 1, (c->n - i - 1) * sizeof *c->regions);
      c->n--;
      return;
    }
}

static int ensure_buf(redolog *log, uint32_t len) {
  if (len <= log->buf_cap) return PAR_OK;
  free(log->buf);
  log->buf_cap = ALIGN_UP(len, PAR_BLOCK);
  log->buf = file_buf_alloc(log->buf_cap);
  if (!log->buf) {
    log->buf_cap = 0;
    return par_error(PAR_ENOMEM, "redo log buffer of %u bytes", len);
  }
  return PAR_OK;
}

static int write_record_at(redolog *log, uint32_t type, const uint8_t *payload, uint32_t len,
                           uint32_t seg, uint32_t off) {
  uint32_t total = ALIGN_UP(HDR + len, PAR_BLOCK);
  int rc = ensure_buf(log, total);
  if (rc) return rc;
  uint8_t *b = log->buf;
  memset(b, 0, total);
  enc32(b, REC_MAGIC);
  enc32(b + 4, type);
  enc32(b + 8, len);
  enc64(b + 16, log->seq);
  enc64(b + 24, log->sb.stream_id);
  if (len) memcpy(b + HDR, payload, len);
  enc32(b + 12, crc32c(0, b, HDR + len));
  log->writes++;
  rc = file_write(log->file, b, total, seg_offset(seg) + off);
  if (rc) return rc;
  log->seq++;
  log->bytes += total;
  return PAR_OK;
}

/* Appends without syncing; links a new segment when the record does not fit. */
static int append(redolog *log, uint32_t type, const uint8_t *payload, uint32_t len) {
  if (len > redolog_payload_limit)
    return par_error(PAR_ELIMIT, "catalog record of %u bytes exceeds the redo log limit of %u", len,
                     redolog_payload_limit);
  uint32_t total = ALIGN_UP(HDR + len, PAR_BLOCK);
  uint32_t cur = log->segs.v[log->segs.n - 1];
  if (log->off + total + PAR_BLOCK > SEG) {
    uint32_t next;
    int rc = segalloc_alloc(log->alloc, &next);
    if (rc) return rc;
    uint8_t link[4];
    enc32(link, next);
    rc = write_record_at(log, REC_LINK, link, 4, cur, log->off);
    if (!rc) rc = seg_list_push(&log->segs, next);
    if (rc) {
      segalloc_free(log->alloc, next);
      return rc;
    }
    cur = next;
    log->off = 0;
  }
  int rc = write_record_at(log, type, payload, len, cur, log->off);
  if (rc) return rc;
  log->off += total;
  return PAR_OK;
}

/* A record or superblock write failed after it may have reached the disk. */
static int fail(redolog *log, int rc) {
  log->failed = rc;
  segalloc_stop(log->alloc);
  return rc;
}

static int failed_error(const redolog *log) {
  return par_error(PAR_EFAILED, "a catalog write failed earlier (%s): reopen the volume", par_strerror(log->failed));
}

/* Appends a record, not yet synced; *ticket is the write count to sync to.
 * Every earlier record is made durable first: a power cut may then tear only
 * the stream's last record, which is what loading tells from damage (a
 * damaged record with valid ones after it is corruption). So a record
 * another thread has yet to sync is synced here, under the caller's lock,
 * which happens only when two changes overlap. */
static int append_record(redolog *log, uint32_t type, const uint8_t *payload, uint32_t len, uint64_t *ticket) {
  *ticket = log->writes;
  if (log->failed) return failed_error(log);
  if (log->stale) {
    int rc = redolog_checkpoint(log, log->cat);
    if (rc) return rc;
  }
  int rc = redolog_sync(log, log->writes);
  if (rc) return rc;
  assert(atomic_load(&log->durable_writes) >= log->writes);
  uint64_t issued = log->writes;
  rc = append(log, type, payload, len);
  *ticket = log->writes;
  /* Once a write was issued the record may be durable or not; a failure
   * before any write (a full volume refusing a link segment, a record over
   * the limit) leaves the log as it was. */
  return rc && log->writes != issued ? fail(log, rc) : rc;
}

int redolog_sync(redolog *log, uint64_t ticket) {
  if (atomic_load(&log->durable_writes) >= ticket) return PAR_OK;
  if (log->failed) return failed_error(log);
  int rc = file_sync(log->file);
  if (rc) return fail(log, rc);
  /* Writes issued up to ticket precede this fdatasync: raise the mark to
   * ticket (another thread's sync may have raised it further). */
  uint64_t seen = atomic_load(&log->durable_writes);
  while (seen < ticket && !atomic_compare_exchange_weak(&log->durable_writes, &seen, ticket)) {
  }
  return PAR_OK;
}

static int append_sync(redolog *log, uint32_t type, const uint8_t *payload, uint32_t len) {
  uint64_t ticket;
  int rc = append_record(log, type, payload, len, &ticket);
  return rc ? rc : redolog_sync(log, ticket);
}

size_t redolog_region_payload(const region_desc *d, uint32_t nfreed) {
  return 4 + region_desc_encode(d, NULL) + 4 + (size_t)nfreed * 4;
}

static uint8_t *encode_region(const region_desc *d, const uint32_t *freed, uint32_t nfreed,
                              uint32_t *len) {
  size_t dl = region_desc_encode(d, NULL);
  size_t n = redolog_region_payload(d, nfreed);
  uint8_t *p = malloc(n);
  if (!p) return NULL;
  enc32(p, (uint32_t)dl);
  region_desc_encode(d, p + 4);
  enc32(p + 4 + dl, nfreed);
  for (uint32_t i = 0; i < nfreed; i++) enc32(p + 8 + dl + 4 * i, freed[i]);
  *len = (uint32_t)n;
  return p;
}

int redolog_put_region(redolog *log, const region_desc *d, const uint32_t *freed, uint32_t nfreed,
                       uint64_t *ticket) {
  uint32_t len;
  uint8_t *p = encode_region(d, freed, nfreed, &len);
  if (!p) return par_error(PAR_ENOMEM, "redo record");
  int rc = append_record(log, REC_REGION, p, len, ticket);
  free(p);
  return rc;
}

int redolog_drop_region(redolog *log, uint32_t id) {
  uint8_t p[4];
  enc32(p, id);
  return append_sync(log, REC_DROP, p, 4);
}

int redolog_next_id(redolog *log, uint32_t next_id) {
  uint8_t p[4];
  enc32(p, next_id);
  return append_sync(log, REC_NEXT_ID, p, 4);
}

/* Payload: n u32 | n x (region id u32, first u64, last u64). */
int redolog_commit_parts(redolog *log, const txn_part *parts, uint32_t n) {
  uint32_t len = 4 + n * 20;
  uint8_t *p = malloc(len);
  if (!p) return par_error(PAR_ENOMEM, "redo record");
  enc32(p, n);
  for (uint32_t i = 0; i < n; i++) {
    enc32(p + 4 + 20 * i, parts[i].region_id);
    enc64(p + 8 + 20 * i, parts[i].first);
    enc64(p + 16 + 20 * i, parts[i].last);
  }
  int rc = append_sync(log, REC_TXN, p, len);
  free(p);
  return rc;
}

/* A committed batch's parts join their regions' descriptions; a region
 * dropped since is skipped. */
static int apply_txn(catalog *c, const uint8_t *p, uint32_t len) {
  if (len < 4 || (len - 4) / 20 != dec32(p) || (len - 4) % 20) return PAR_ECORRUPT;
  for (uint32_t i = 0; i < dec32(p); i++) {
    region_desc *d = catalog_find_id(c, dec32(p + 4 + 20 * i));
    uint64_t first = dec64(p + 8 + 20 * i), last = dec64(p + 16 + 20 * i);
    if (last < first) return PAR_ECORRUPT;
    if (d && last > d->covered_lsn && region_desc_add_part(d, first, last)) return PAR_ENOMEM;
  }
  return PAR_OK;
}

static uint64_t new_stream_id(uint64_t epoch) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t x = epoch * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32);
  x ^= x >> 31;
  return x ? x : 1;
}

/* Starts a stream in a fresh segment: the caller writes records, syncs and
 * flips the superblock. */
static int start_stream(redolog *log, uint64_t epoch) {
  uint32_t head;
  int rc = segalloc_alloc(log->alloc, &head);
  if (rc) return rc;
  seg_list_free(&log->segs);
  rc = seg_list_push(&log->segs, head);
  if (rc) {
    segalloc_free(log->alloc, head);
    return rc;
  }
  log->sb.epoch = epoch;
  log->sb.stream_id = new_stream_id(epoch);
  log->sb.stream_head = head;
  log->off = 0;
  log->seq = 1;
  log->bytes = 0;
  return PAR_OK;
}

int redolog_format(redolog *log, par_file *f, segalloc *a) {
  memset(log, 0, sizeof *log);
  log->file = f;
  log->alloc = a;
  int rc = start_stream(log, 1);
  if (!rc) rc = append(log, REC_NEXT_ID, (const uint8_t[4]){1, 0, 0, 0}, 4);
  if (!rc) rc = file_sync(f);
  if (!rc) rc = superblock_write(f, &log->sb);
  if (!rc) rc = superblock_mirror(f, &log->sb);
  return rc;
}

int redolog_checkpoint(redolog *log, const catalog *c) {
  if (log->failed) return failed_error(log);
  seg_list old = log->segs;
  memset(&log->segs, 0, sizeof log->segs);
  superblock prev = log->sb;
  uint32_t prev_off = log->off;
  uint64_t prev_seq = log->seq, prev_bytes = log->bytes;
  int rc = start_stream(log, prev.epoch + 1);
  if (rc) {
    log->segs = old;
    return rc;
  }
  uint8_t idb[4];
  enc32(idb, c->next_region_id);
  rc = append(log, REC_NEXT_ID, idb, 4);
  for (uint32_t i = 0; !rc && i < c->n; i++) {
    uint32_t len;
    uint8_t *p = encode_region(c->regions[i], NULL, 0, &len);
    rc = p ? append(log, REC_REGION, p, len) : par_error(PAR_ENOMEM, "checkpoint record");
    free(p);
  }
  if (!rc) rc = file_sync(log->file);
  if (!rc && (rc = superblock_write(log->file, &log->sb))) {
    /* Either stream may be the current one now: keep the segments of both. */
    seg_list_free(&old);
    return fail(log, rc);
  }
  if (rc) { /* the old stream stays current */
    for (uint32_t i = 0; i < log->segs.n; i++) segalloc_free(log->alloc, log->segs.v[i]);
    seg_list_free(&log->segs);
    log->segs = old;
    log->sb = prev;
    log->off = prev_off;
    log->seq = prev_seq;
    log->bytes = prev_bytes;
    return rc;
  }
  /* The update is durable. The mirror only adds redundancy: if it fails,
   * the copy it was writing is torn or older, and the new one wins. */
  (void)superblock_mirror(log->file, &log->sb);
  for (uint32_t i = 0; i < old.n; i++) segalloc_free(log->alloc, old.v[i]);
  seg_list_free(&old);
  log->stale = 0;
  return PAR_OK;
}

static int apply(catalog *c, uint32_t type, const uint8_t *p, uint32_t len) {
  switch (type) {
  case REC_NEXT_ID:
    if (len != 4) break;
    c->next_region_id = dec32(p);
    return PAR_OK;
  case REC_DROP:
    if (len != 4) break;
    catalog_remove(c, dec32(p));
    return PAR_OK;
  case REC_TXN: {
    int rc = apply_txn(c, p, len);
    if (rc != PAR_ECORRUPT) return rc;
    break;
  }
  case REC_REGION: {
    if (len < 8) break;
    uint32_t dl = dec32(p);
    if (dl > len - 8) break;
    region_desc d;
    int rc = region_desc_decode(&d, p + 4, dl);
    if (rc) return rc;
    if (d.id >= c->next_region_id) c->next_region_id = d.id + 1;
    rc = catalog_set(c, &d);
    if (rc) region_desc_free(&d);
    return rc;
  }
  default: break;
  }
  return par_error(PAR_ECORRUPT, "redo log record of type %u is malformed", type);
}

/* Whether a valid record of this stream with a sequence number above
 * log->seq lies in seg after off, where replay stopped. Each record is
 * synced before the next is written, so only damage can put one there. */
static int later_record(redolog *log, uint32_t seg, uint32_t off, int *found) {
  *found = 0;
  uint32_t start = off + PAR_BLOCK;
  if (start + PAR_BLOCK > SEG) return PAR_OK;
  int rc = ensure_buf(log, SEG - start);
  if (!rc) rc = file_read(log->file, log->buf, SEG - start, seg_offset(seg) + start);
  for (uint32_t o = 0; !rc && !*found && o + PAR_BLOCK <= SEG - start; o += PAR_BLOCK) {
    uint8_t *b = log->buf + o;
    uint32_t len = dec32(b + 8);
    if (dec32(b) != REC_MAGIC || dec64(b + 16) <= log->seq || dec64(b + 24) != log->sb.stream_id ||
        len > SEG - start - o - HDR)
      continue;
    uint32_t crc = dec32(b + 12);
    enc32(b + 12, 0);
    *found = crc32c(0, b, HDR + len) == crc;
  }
  return rc;
}

int redolog_load(redolog *log, par_file *f, segalloc *a, catalog *c) {
  memset(log, 0, sizeof *log);
  memset(c, 0, sizeof *c);
  log->file = f;
  log->alloc = a;
  int rc = superblock_read(f, &log->sb);
  if (rc) return rc;
  uint32_t seg = log->sb.stream_head;
  rc = segalloc_mark(a, seg);
  if (!rc) rc = seg_list_push(&log->segs, seg);
  log->seq = 1;
  uint32_t off = 0;
  uint8_t *hdr = file_buf_alloc(PAR_BLOCK);
  if (!hdr) rc = PAR_ENOMEM;
  while (!rc) {
    if (off + PAR_BLOCK > SEG) break;
    rc = file_read(f, hdr, PAR_BLOCK, seg_offset(seg) + off);
    if (rc) break;
    uint32_t type = dec32(hdr + 4), len = dec32(hdr + 8);
    if (dec32(hdr) != REC_MAGIC || dec64(hdr + 16) != log->seq ||
        dec64(hdr + 24) != log->sb.stream_id || len > MAX_PAYLOAD || off + HDR + len > SEG)
      break; /* the end of the durable stream */
    uint32_t total = ALIGN_UP(HDR + len, PAR_BLOCK);
    rc = ensure_buf(log, total);
    if (!rc) rc = file_read(f, log->buf, total, seg_offset(seg) + off);
    if (rc) break;
    uint32_t crc = dec32(log->buf + 12);
    enc32(log->buf + 12, 0);
    if (crc32c(0, log->buf, HDR + len) != crc) break; /* torn last record */
    log->seq++;
    log->bytes += total;
    if (type == REC_LINK) {
      if (len != 4) { rc = par_error(PAR_ECORRUPT, "malformed link in the redo log"); break; }
      seg = dec32(log->buf + HDR);
      rc = segalloc_mark(a, seg);
      if (!rc) rc = seg_list_push(&log->segs, seg);
      off = 0;
      continue;
    }
    rc = apply(c, type, log->buf + HDR, len);
    off += total;
  }
  free(hdr);
  log->off = off;
  int later = 0;
  if (!rc && log->seq == 1)
    rc = par_error(PAR_ECORRUPT, "the redo log named by the superblock (segment %u) holds no record", log->sb.stream_head);
  if (!rc) rc = later_record(log, seg, off, &later);
  if (!rc && later)
    rc = par_error(PAR_ECORRUPT, "redo log record %llu (segment %u, offset %u) is damaged and later records follow it",
                   (unsigned long long)log->seq, seg, off);
  if (rc) catalog_free(c);
  log->stale = 1;
  log->cat = c;
  return rc;
}

void redolog_close(redolog *log) {
  seg_list_free(&log->segs);
  free(log->buf);
  memset(log, 0, sizeof *log);
}
