#include "log/wal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc/segalloc.h"
#include "log/vlog.h"
#include "util/clock.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/status.h"

#define SEG ((uint32_t)PAR_SEGMENT_SIZE)

/* Record: crc u32 | len u32 | lsn u64 | count u32 | count x op (see
 * wal_op_size); len counts the ops' bytes. crc covers everything after
 * itself and is seeded with the region id and the generation. */

static uint32_t crc_seed(uint32_t region_id, uint32_t gen) {
  uint8_t b[8];
  enc32(b, region_id);
  enc32(b + 4, gen);
  return crc32c(0, b, 8);
}

static void deadline_in(struct timespec *ts, uint64_t ns) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  ns += (uint64_t)ts->tv_nsec;
  ts->tv_sec += (time_t)(ns / 1000000000ull);
  ts->tv_nsec = (long)(ns % 1000000000ull);
}

/* Seals buf[cur] into the pending slot (which must be free); sync: the
 * writer syncs the file after writing it (else it is only written: a push). */
static void seal(wal *w, int sync) {
  uint32_t len = ALIGN_UP(w->fill, PAR_BLOCK);
  memset(w->buf[w->cur] + w->fill, 0, len - w->fill);
  w->pending = 1;
  w->pending_buf = w->cur;
  w->pending_seg = w->seg;
  w->pending_off = w->base;
  w->pending_first_lsn = w->seg_first_lsn;
  w->pending_no = w->seg_no;
  w->pending_len = len;
  w->pending_lsn = w->fill_lsn;
  w->pending_sync = sync;
  w->cur ^= 1;
  w->base += len;
  w->fill = 0;
  if (w->base >= SEG) w->seg = 0;
  pthread_cond_signal(&w->work);
}

static void *writer_main(void *arg) {
  wal *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    assert(w->durable_lsn <= w->written_lsn && w->written_lsn <= w->appended_lsn);
    if (w->pending && w->failed) {
      /* After a failed write or sync nothing more is written: a later
       * buffer reaching the disk would make durable_lsn jump over records
       * that never did (and after a failed fdatasync the kernel may have
       * dropped them), acknowledging sync writes that recovery cannot see. */
      w->pending = 0;
      pthread_cond_broadcast(&w->cv);
      continue;
    }
    if (w->kicked) {
      w->kicked = 0;
      pthread_mutex_unlock(&w->mu);
      w->on_kick(w->ctx);
      pthread_mutex_lock(&w->mu);
      continue;
    }
    if (w->pending) {
      int b = w->pending_buf;
      uint32_t seg = w->pending_seg, off = w->pending_off, len = w->pending_len;
      uint64_t lsn = w->pending_lsn, first_lsn = w->pending_first_lsn, no = w->pending_no;
      int sync = w->pending_sync;
      assert(off != 0 || no == w->listed_no + 1);
      pthread_mutex_unlock(&w->mu);
      int rc = off == 0 ? w->list_segment(w->ctx, seg, first_lsn) : PAR_OK;
      if (!rc && off == 0) {
        pthread_mutex_lock(&w->mu);
        w->listed_no = no;
        pthread_mutex_unlock(&w->mu);
      }
      if (!rc && w->before_write) rc = w->before_write(w->ctx);
      if (!rc)
        rc = __atomic_load_n(&w->cached, __ATOMIC_RELAXED)
                 ? file_write_cached(w->file, w->buf[b], len, seg_offset(seg) + off)
                 : file_write(w->file, w->buf[b], len, seg_offset(seg) + off);
      if (!rc && sync) rc = file_sync(w->file);
      pthread_mutex_lock(&w->mu);
      w->pending = 0;
      if (rc && !w->failed) w->failed = rc;
      if (!rc) {
        /* Buffers are written in order: a sync makes every one before durable too. */
        if (lsn > w->written_lsn) w->written_lsn = lsn;
        if (sync) {
          w->durable_lsn = w->written_lsn;
          w->first_unsynced_ns = 0;
          w->syncs++;
        } else if (!w->first_unsynced_ns) {
          w->first_unsynced_ns = clock_mono_ns();
        }
      }
      /* A buffer grown for one huge record goes back to the chunk size. */
      if (w->cap[b] > WAL_CHUNK) {
        free(w->buf[b]);
        w->buf[b] = file_buf_alloc(WAL_CHUNK);
        w->cap[b] = w->buf[b] ? WAL_CHUNK : 0;
      }
      pthread_cond_broadcast(&w->cv);
      continue;
    }
    if (!w->fill && !w->failed && (w->sync_wanted || w->push_wanted || w->stop) && w->appended_lsn > w->written_lsn) {
      /* Only skipped LSNs are not durable yet: no record to write, but the
       * large-log records those writes appended must reach the disk before
       * anyone is told they are (a flush commits trees that point at them). */
      uint64_t upto = w->appended_lsn;
      pthread_mutex_unlock(&w->mu);
      int rc = w->before_write ? w->before_write(w->ctx) : PAR_OK;
      pthread_mutex_lock(&w->mu);
      if (rc && !w->failed) w->failed = rc;
      if (!rc) { /* no record: durable if everything before was */
        int synced = w->durable_lsn == w->written_lsn;
        if (upto > w->written_lsn) w->written_lsn = upto;
        if (synced && upto > w->durable_lsn) w->durable_lsn = upto;
      }
      pthread_cond_broadcast(&w->cv);
      continue;
    }
    uint64_t interval = (uint64_t)w->interval_ms * 1000000ull;
    uint64_t due = w->first_unflushed_ns + interval;
    /* Pushed buffers are synced as async writes are: within the interval,
     * or at once for a sync writer. */
    uint64_t sync_due = w->first_unsynced_ns + interval;
    int unsynced = w->written_lsn > w->durable_lsn;
    uint64_t now = clock_mono_ns();
    if (w->fill && !w->failed && (w->sync_wanted || w->stop || now >= due || (unsynced && now >= sync_due))) {
      w->sync_wanted = w->push_wanted = 0;
      seal(w, 1);
      continue;
    }
    if (w->fill && !w->failed && w->push_wanted) {
      w->push_wanted = 0;
      seal(w, 0);
      continue;
    }
    if (!w->fill && !w->failed && unsynced && (w->sync_wanted || w->stop || now >= sync_due)) {
      uint64_t upto = w->written_lsn;
      pthread_mutex_unlock(&w->mu);
      int rc = file_sync(w->file);
      pthread_mutex_lock(&w->mu);
      if (rc && !w->failed) w->failed = rc;
      if (!rc) {
        if (upto > w->durable_lsn) w->durable_lsn = upto;
        if (w->durable_lsn == w->written_lsn) w->first_unsynced_ns = 0;
        w->syncs++;
      }
      pthread_cond_broadcast(&w->cv);
      continue;
    }
    if (w->stop) break;
    w->sync_wanted = w->push_wanted = 0;
    struct timespec ts;
    /* One reading of the clock: a second one could be past due, and due - now
     * would wrap to a wait of centuries, leaving async writes unsynced. */
    uint64_t wait = interval;
    if (w->fill && !w->failed) wait = due - now;
    if (unsynced && !w->failed && sync_due > now && sync_due - now < wait) wait = sync_due - now;
    deadline_in(&ts, wait);
    pthread_cond_timedwait(&w->work, &w->mu, &ts);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

int wal_start(wal *w, par_file *f, uint32_t region_id, uint32_t gen, uint32_t interval_ms,
              uint64_t last_lsn, wal_take_segment_fn take, wal_list_segment_fn list, wal_before_write_fn before,
              wal_kick_fn on_kick, void *ctx) {
  memset(w, 0, sizeof *w);
  w->file = f;
  w->region_id = region_id;
  w->gen = gen;
  w->seed = crc_seed(region_id, gen);
  w->interval_ms = interval_ms ? interval_ms : 1;
  w->take_segment = take;
  w->list_segment = list;
  w->before_write = before;
  w->on_kick = on_kick;
  w->ctx = ctx;
  w->appended_lsn = w->written_lsn = w->durable_lsn = last_lsn;
  w->record_next = last_lsn + 1;
  for (int i = 0; i < 2; i++) {
    w->buf[i] = file_buf_alloc(WAL_CHUNK);
    w->cap[i] = WAL_CHUNK;
    if (!w->buf[i]) {
      free(w->buf[0]);
      return par_error(PAR_ENOMEM, "WAL buffers");
    }
  }
  pthread_mutex_init(&w->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&w->cv, NULL);
  pthread_cond_init(&w->work, &ca);
  pthread_condattr_destroy(&ca);
  if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
    free(w->buf[0]);
    free(w->buf[1]);
    return par_error(PAR_ENOMEM, "cannot start the WAL thread");
  }
  /* Named for top -H and /proc/PID/task; by the creator, so it holds from the start. */
  pthread_setname_np(w->thread, "par-wal");
  return PAR_OK;
}

void wal_kick(wal *w) {
  assert(w->on_kick);
  pthread_mutex_lock(&w->mu);
  if (!w->kicked) {
    w->kicked = 1;
    pthread_cond_signal(&w->work);
  }
  pthread_mutex_unlock(&w->mu);
}

int wal_stop(wal *w) {
  pthread_mutex_lock(&w->mu);
  w->stop = 1;
  pthread_cond_signal(&w->work);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  int rc = w->failed;
  free(w->buf[0]);
  free(w->buf[1]);
  pthread_cond_destroy(&w->cv);
  pthread_cond_destroy(&w->work);
  pthread_mutex_destroy(&w->mu);
  return rc;
}

/* Waits (mu held) until the pending slot is free. */
static int wait_pending(wal *w) {
  while (w->pending && !w->failed) pthread_cond_wait(&w->cv, &w->mu);
  return w->failed ? par_error(PAR_EFAILED, "the write-ahead log failed earlier (%s)", par_strerror(w->failed)) : PAR_OK;
}

/* One record: a WAL_GAP op for the LSNs skipped since the last record (if
 * any), a WAL_TXN op when txn is set, then ops, which take lsn .. lsn + n - 1.
 * The record's header carries the LSN it starts from, record_next. */
static int append_record(wal *w, uint64_t lsn, const wal_op *ops, uint32_t n, int txn) {
  assert(n > 0 && lsn >= w->record_next);
  uint64_t gap = lsn - w->record_next, start = w->record_next;
  uint8_t gap_v[8], txn_v[8];
  enc64(gap_v, gap);
  enc64(txn_v, lsn + n - 1);
  wal_op ctl[2];
  uint32_t nctl = 0;
  if (gap) ctl[nctl++] = (wal_op){WAL_GAP, 0, 8, gap_v, gap_v};
  if (txn) ctl[nctl++] = (wal_op){WAL_TXN, 0, 8, txn_v, txn_v};
  size_t payload = 0;
  for (uint32_t i = 0; i < nctl; i++) payload += wal_op_size(0, 8);
  for (uint32_t i = 0; i < n; i++) payload += wal_op_size(ops[i].key_len, ops[i].value_len);
  size_t size = wal_record_size(payload);
  if (size > SEG) return par_error(PAR_ETOOBIG, "log record of %zu bytes exceeds a segment", size);
  pthread_mutex_lock(&w->mu);
  int rc = w->failed ? wait_pending(w) : PAR_OK;
  /* Make room: the record must fit both the buffer and the segment. A seal
   * pads to the next block, so every step re-checks both. */
  while (!rc) {
    if (!w->seg) {
      uint32_t seg;
      pthread_mutex_unlock(&w->mu);
      rc = w->take_segment(w->ctx, &seg);
      pthread_mutex_lock(&w->mu);
      if (!rc) {
        w->seg = seg;
        w->seg_first_lsn = start;
        w->seg_no++;
        w->base = 0;
      }
    } else if (w->base + w->fill + size > SEG || w->fill + size > w->cap[w->cur]) {
      if (w->fill) {
        rc = wait_pending(w);
        if (!rc) seal(w, 1);
      } else if (w->base + size > SEG) {
        w->seg = 0; /* rotate: the rest of this segment stays unused */
      } else {
        uint32_t cap = ALIGN_UP((uint32_t)size, PAR_BLOCK); /* one record larger than a chunk */
        uint8_t *b = file_buf_alloc(cap);
        if (!b) rc = par_error(PAR_ENOMEM, "WAL buffer of %u bytes", cap);
        else {
          free(w->buf[w->cur]);
          w->buf[w->cur] = b;
          w->cap[w->cur] = cap;
        }
      }
    } else {
      break;
    }
  }
  if (rc) {
    pthread_mutex_unlock(&w->mu);
    return rc;
  }
  uint8_t *r = w->buf[w->cur] + w->fill;
  enc32(r + 4, (uint32_t)payload);
  enc64(r + 8, start);
  enc32(r + 16, nctl + n);
  uint8_t *p = r + WAL_HDR;
  for (uint32_t i = 0; i < nctl + n; i++) {
    const wal_op *op = i < nctl ? &ctl[i] : &ops[i - nctl];
    *p++ = op->type;
    p = put_varint(p, op->key_len);
    p = put_varint(p, op->value_len);
    memcpy(p, op->key, op->key_len);
    p += op->key_len;
    if (op->value_len) memcpy(p, op->value, op->value_len);
    p += op->value_len;
  }
  enc32(r, crc32c(w->seed, r + 4, size - 4));
  if (!w->fill) w->first_unflushed_ns = clock_mono_ns();
  w->fill += (uint32_t)size;
  w->bytes += size;
  w->fill_lsn = lsn + n - 1;
  w->appended_lsn = w->fill_lsn;
  w->record_next = lsn + n;
  if (w->fill == w->cap[w->cur] && !w->pending) seal(w, 1);
  pthread_mutex_unlock(&w->mu);
  return PAR_OK;
}

int wal_append(wal *w, uint64_t lsn, const wal_op *ops, uint32_t n) {
  return append_record(w, lsn, ops, n, 0);
}

int wal_append_part(wal *w, uint64_t lsn, const wal_op *ops, uint32_t n) {
  return append_record(w, lsn, ops, n, 1);
}

void wal_skip(wal *w, uint64_t last) {
  pthread_mutex_lock(&w->mu);
  assert(last > w->appended_lsn);
  w->appended_lsn = last;
  /* A buffer sealed from now on also vouches for these LSNs: the WAL thread
   * writes the large logs before it. */
  if (w->fill) w->fill_lsn = last;
  pthread_mutex_unlock(&w->mu);
}

int wal_sync(wal *w, uint64_t lsn) {
  pthread_mutex_lock(&w->mu);
  while (w->durable_lsn < lsn && !w->failed) {
    w->sync_wanted = 1;
    pthread_cond_signal(&w->work);
    pthread_cond_wait(&w->cv, &w->mu);
  }
  int rc = w->durable_lsn >= lsn ? PAR_OK
                                 : par_error(PAR_EFAILED, "write-ahead log write failed (%s)", par_strerror(w->failed));
  pthread_mutex_unlock(&w->mu);
  return rc;
}

/* Parses the record at off; 1 when it is the expected next one. */
static int parse(const uint8_t *b, uint32_t off, uint32_t seed, uint64_t expect, uint32_t *size,
                 uint32_t *count) {
  if (off + WAL_HDR > SEG) return 0;
  const uint8_t *r = b + off;
  uint32_t len = dec32(r + 4);
  if (len > SEG - off - WAL_HDR || dec64(r + 8) != expect) return 0;
  if (crc32c(seed, r + 4, WAL_HDR - 4 + len) != dec32(r)) return 0;
  *size = WAL_HDR + len;
  *count = dec32(r + 16);
  return *count > 0;
}

int wal_replay(par_file *f, const region_desc *d, wal_replay_fn fn, void *arg, uint64_t *last_lsn) {
  *last_lsn = d->covered_lsn;
  uint32_t first = 0;
  while (first + 1 < d->nwal && d->wal[first + 1].first_lsn <= d->covered_lsn + 1) first++;
  if (first >= d->nwal) return PAR_OK;
  uint8_t *b = file_buf_alloc(SEG);
  if (!b) return par_error(PAR_ENOMEM, "WAL replay buffer");
  uint64_t expect = d->wal[first].first_lsn;
  int rc = PAR_OK;
  for (uint32_t i = first; i < d->nwal && !rc; i++) {
    const wal_seg *ws = &d->wal[i];
    if (ws->first_lsn != expect) break; /* a gap: the log ends before it */
    uint32_t seed = crc_seed(d->id, ws->gen);
    rc = file_read(f, b, SEG, seg_offset(ws->seg));
    if (rc) break;
    uint32_t off = 0, size, count;
    for (;;) {
      if (!parse(b, off, seed, expect, &size, &count)) {
        uint32_t next = ALIGN_UP(off, PAR_BLOCK); /* skip a seal's padding */
        if (next == off || !parse(b, next, seed, expect, &size, &count)) break;
        off = next;
      }
      const uint8_t *p = b + off + WAL_HDR, *end = b + off + size;
      uint64_t lsn = expect; /* of the next op that takes one */
      for (uint32_t k = 0; k < count && !rc; k++) {
        wal_op op;
        uint32_t kl = 0, vl = 0;
        const uint8_t *q = p < end ? p + 1 : NULL;
        if (q) q = get_varint32(q, end, &kl);
        if (q) q = get_varint32(q, end, &vl);
        int ctl = q && (p[0] == WAL_GAP || p[0] == WAL_TXN);
        if (!q || kl > PAR_MAX_KEY_SIZE || (size_t)(end - q) < (size_t)kl + vl || p[0] < WAL_PUT ||
            p[0] > WAL_DELETE_RANGE || (p[0] == WAL_PUT_LARGE && vl != VPTR_SIZE) || (ctl && (kl || vl != 8)) ||
            (p[0] == WAL_DELETE_RANGE && (!kl || !vl || vl > PAR_MAX_KEY_SIZE || key_cmp(q, kl, q + kl, vl) > 0)) ||
            (p[0] == WAL_GAP && (k || !dec64(q))) || (p[0] == WAL_TXN && dec64(q) < lsn)) {
          rc = par_error(PAR_ECORRUPT, "WAL record %llu is malformed", (unsigned long long)expect);
          break;
        }
        op.type = p[0];
        op.key_len = (uint16_t)kl;
        op.value_len = vl;
        op.key = q;
        op.value = q + kl;
        if (op.type == WAL_GAP) {
          uint64_t n = dec64(q);
          if (lsn + n - 1 > d->covered_lsn) rc = fn(arg, lsn, &op);
          lsn += n;
        } else if (op.type == WAL_TXN) rc = dec64(q) > d->covered_lsn ? fn(arg, lsn, &op) : PAR_OK;
        else if (lsn++ > d->covered_lsn) rc = fn(arg, lsn - 1, &op);
        p = q + kl + vl;
      }
      if (rc) break;
      expect = lsn;
      off += size;
    }
  }
  free(b);
  if (expect - 1 > *last_lsn) *last_lsn = expect - 1;
  return rc;
}

int wal_check_end(par_file *f, const region_desc *d, uint64_t last_lsn) {
  uint32_t i = 0;
  while (i < d->nwal && d->wal[i].first_lsn <= last_lsn + 1) i++;
  if (i == d->nwal) return PAR_OK;
  uint8_t *b = file_buf_alloc(SEG);
  if (!b) return par_error(PAR_ENOMEM, "WAL check buffer");
  uint32_t size, count;
  int rc = file_read(f, b, SEG, seg_offset(d->wal[i].seg));
  if (!rc && parse(b, 0, crc_seed(d->id, d->wal[i].gen), d->wal[i].first_lsn, &size, &count))
    rc = par_error(PAR_ECORRUPT, "the write-ahead log of region %u is damaged: LSNs %llu..%llu cannot be read",
                   d->id, (unsigned long long)(last_lsn + 1), (unsigned long long)(d->wal[i].first_lsn - 1));
  free(b);
  return rc;
}

uint32_t wal_seed(uint32_t region_id, uint32_t gen) { return crc_seed(region_id, gen); }

int wal_parse(const uint8_t *b, uint32_t off, uint32_t seed, uint64_t expect, uint32_t *size,
              uint32_t *count) {
  return parse(b, off, seed, expect, size, count);
}

/* The LSN after the record at r (size bytes, count ops, first LSN lsn):
 * a WAL_GAP op covers its count, WAL_TXN none, every other op one. 0 when
 * an op does not parse. */
static uint64_t record_next_lsn(const uint8_t *r, uint32_t size, uint32_t count, uint64_t lsn) {
  const uint8_t *p = r + WAL_HDR, *end = r + size;
  for (uint32_t k = 0; k < count; k++) {
    uint32_t kl = 0, vl = 0;
    const uint8_t *q = p < end ? p + 1 : NULL;
    if (q) q = get_varint32(q, end, &kl);
    if (q) q = get_varint32(q, end, &vl);
    if (!q || (size_t)(end - q) < (size_t)kl + vl || (p[0] == WAL_GAP && vl != 8)) return 0;
    if (p[0] == WAL_GAP) lsn += dec64(q);
    else if (p[0] != WAL_TXN) lsn++;
    p = q + kl + vl;
  }
  return lsn;
}

void wal_cut(uint8_t *b, uint32_t region_id, const wal_seg *ws, uint64_t last) {
  uint32_t seed = crc_seed(region_id, ws->gen), off = 0, size, count;
  uint64_t expect = ws->first_lsn;
  for (;;) {
    uint32_t at = off;
    if (!parse(b, at, seed, expect, &size, &count)) {
      at = ALIGN_UP(off, PAR_BLOCK); /* a seal's padding */
      if (at == off || !parse(b, at, seed, expect, &size, &count)) break;
    }
    uint64_t next = record_next_lsn(b + at, size, count, expect);
    if (!next || next - 1 > last) break;
    expect = next;
    off = at + size;
  }
  memset(b + off, 0, SEG - off);
}

uint32_t wal_unlisted(wal *w) {
  pthread_mutex_lock(&w->mu);
  uint32_t n = (uint32_t)(w->seg_no - w->listed_no); /* a segment is taken for a record about to be appended */
  pthread_mutex_unlock(&w->mu);
  return n;
}

int wal_push(wal *w, uint64_t lsn, uint64_t *written) {
  pthread_mutex_lock(&w->mu);
  if (lsn > w->appended_lsn) lsn = w->appended_lsn;
  while (w->written_lsn < lsn && !w->failed) {
    w->push_wanted = 1;
    pthread_cond_signal(&w->work);
    pthread_cond_wait(&w->cv, &w->mu);
  }
  int rc = w->written_lsn >= lsn ? PAR_OK
                                 : par_error(PAR_EFAILED, "write-ahead log write failed (%s)", par_strerror(w->failed));
  *written = w->written_lsn;
  pthread_mutex_unlock(&w->mu);
  return rc;
}

uint64_t wal_durable_lsn(wal *w) {
  pthread_mutex_lock(&w->mu);
  uint64_t lsn = w->durable_lsn;
  pthread_mutex_unlock(&w->mu);
  return lsn;
}

int wal_restart(wal *w) {
  pthread_mutex_lock(&w->mu);
  int rc = wait_pending(w);
  if (!rc && w->fill) {
    seal(w, 1);
    rc = wait_pending(w);
  }
  if (!rc) w->seg = 0;
  pthread_mutex_unlock(&w->mu);
  return rc;
}

void wal_skip_to(wal *w, uint64_t last_lsn) {
  pthread_mutex_lock(&w->mu);
  if (last_lsn > w->appended_lsn) w->appended_lsn = w->written_lsn = w->durable_lsn = last_lsn;
  if (last_lsn + 1 > w->record_next) w->record_next = last_lsn + 1; /* no WAL_GAP: the new segment starts there */
  pthread_mutex_unlock(&w->mu);
}
