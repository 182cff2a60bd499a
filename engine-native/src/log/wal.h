/* The write-ahead log of one region.
 *
 * Writers append records (one per put, delete or batch) to an in-memory tail
 * buffer; a background thread writes sealed buffers with one block-aligned
 * (direct) write and an fdatasync each — every 256 KiB, every
 * durability_interval_ms, or as soon as a sync writer asks (group commit).
 * A push (wal_push) writes the buffer without the fdatasync, which then
 * follows within durability_interval_ms.
 *
 * Invariants that make recovery a prefix of the log:
 *  - flushed bytes are never rewritten: a partly filled buffer is padded to
 *    the next 4 KiB block when sealed, and appending resumes after the pad;
 *  - sealed buffers are written one at a time, in order, so a record is
 *    durable only if every earlier record is (an fdatasync after a push
 *    covers the pushed buffers too);
 *  - a record carries its LSN and a checksum seeded with the region id and
 *    the segment's generation, and the reader accepts only the exact next
 *    LSN, so stale bytes from an earlier use of a segment, another region,
 *    or from before a crash, are never replayed;
 *  - a segment is listed in the region's description (a synced redo
 *    record) before the first write into it, by the writer thread: an
 *    appender only takes a free segment, so no writer waits on a redo
 *    fdatasync when the log moves to a new segment. A crash before the
 *    listing leaves the segment free; nothing durable was in it. */
#ifndef PAR_LOG_WAL_H
#define PAR_LOG_WAL_H

#include <pthread.h>
#include <stdint.h>

#include "io/file.h"
#include "meta/catalog.h"
#include "util/coding.h"

#define WAL_CHUNK (256u * 1024)
#define WAL_HDR 20u

/* WAL_PUT_LARGE's value is the vptr of a value in the large log.
 * Two control ops never reach L0:
 *  WAL_GAP  value: u64 count. The LSNs it covers were taken by writes that
 *           skipped the log (PAR_NO_WAL); it keeps the chain of record LSNs
 *           unbroken, so replay still accepts only the exact next LSN.
 *  WAL_TXN  value: u64, the last LSN of the record. Marks the record as one
 *           region's part of a cross-region batch: replay applies it only if
 *           the catalog lists its LSN range as committed (api/txn.c).
 * WAL_DELETE_RANGE (format 4): key is the range's first key, value its end
 * (exclusive), both 1..PAR_MAX_KEY_SIZE bytes, begin <= end.
 * Every other op takes one LSN; WAL_TXN takes none. */
enum { WAL_PUT = 1, WAL_DELETE = 2, WAL_PUT_LARGE = 3, WAL_GAP = 4, WAL_TXN = 5, WAL_DELETE_RANGE = 6 };

typedef struct wal_op {
  uint8_t type;
  uint16_t key_len;
  uint32_t value_len;
  const void *key;
  const void *value;
} wal_op;

static inline size_t wal_record_size(size_t payload) { return WAL_HDR + payload; }
/* An op: type u8 | key_len varint | value_len varint | key | value. */
static inline size_t wal_op_size(size_t klen, size_t vlen) {
  return 1 + varint_size(klen) + varint_size(vlen) + klen + vlen;
}

/* Takes a free segment for the log (in memory only). */
typedef int (*wal_take_segment_fn)(void *ctx, uint32_t *seg);
/* Durably records seg as the log's next segment, whose first record carries
 * first_lsn (called by the writer thread before the first write into it;
 * on failure seg is given back). */
typedef int (*wal_list_segment_fn)(void *ctx, uint32_t seg, uint64_t first_lsn);
/* Called by the writer thread before each write of WAL records, so that the
 * data they point to (large-log records) is written first. */
typedef int (*wal_before_write_fn)(void *ctx);
/* Called by the writer thread soon after a wal_kick: work a writer hands
 * off instead of doing it on its own thread (the region writes its large
 * log's sealed buffers there). */
typedef void (*wal_kick_fn)(void *ctx);

typedef struct wal {
  pthread_mutex_t mu;
  pthread_cond_t cv;   /* state changes: a write finished, a buffer freed */
  pthread_cond_t work; /* wakes the writer thread                         */
  pthread_t thread;
  par_file *file;
  wal_take_segment_fn take_segment;
  wal_list_segment_fn list_segment;
  wal_before_write_fn before_write;
  wal_kick_fn on_kick;
  void *ctx;
  uint32_t region_id, gen, interval_ms;
  uint32_t seed; /* checksum seed: region id and generation */
  uint8_t *buf[2];
  uint32_t cap[2];
  int cur;              /* buffer being filled                          */
  uint32_t seg;         /* segment of buf[cur]; 0 until allocated       */
  uint64_t seg_first_lsn; /* the LSN seg's first record starts with     */
  /* Segments are numbered as they are taken; listed_no is the newest one
   * whose listing is durable (they are listed in order). */
  uint64_t seg_no, listed_no;
  uint32_t base, fill;  /* buf[cur] holds [base, base + fill) of seg    */
  uint64_t fill_lsn;    /* last LSN in buf[cur]                          */
  uint64_t first_unflushed_ns;
  /* the sealed buffer waiting for or under its write */
  int pending;
  int pending_buf;
  uint32_t pending_seg, pending_off, pending_len;
  uint64_t pending_lsn;
  uint64_t pending_first_lsn, pending_no; /* pending_seg's first LSN and number: listed first when pending_off is 0 */
  int pending_sync; /* sync the file after writing it; else a push (wal_push) */
  int sync_wanted, push_wanted, stop;
  int kicked; /* on_kick is due */
  /* appended_lsn: the newest LSN taken, logged or skipped (wal_skip);
   * durable_lsn: every LSN up to it is in a durable record or was skipped
   * (and the large-log records of skipped writes are durable too);
   * written_lsn (>= durable_lsn): the same, written to the file but maybe
   * not synced yet (wal_push), since first_unsynced_ns;
   * record_next: the LSN the next record starts with, one past the last
   * LSN any record covers (records cover the LSNs skipped before them). */
  uint64_t appended_lsn, written_lsn, durable_lsn, record_next;
  uint64_t first_unsynced_ns;
  int failed; /* the first write error; the log accepts nothing after it */
  uint64_t bytes, syncs;
  /* Write through the page cache, not with direct I/O: a log cursor reads
   * the records back soon after (repl/log.c sets it, atomically; it stays). */
  int cached;
} wal;

int wal_start(wal *w, par_file *f, uint32_t region_id, uint32_t gen, uint32_t interval_ms,
              uint64_t last_lsn, wal_take_segment_fn take, wal_list_segment_fn list, wal_before_write_fn before,
              wal_kick_fn on_kick, void *ctx);
/* Writes everything appended, then stops the thread. */
int wal_stop(wal *w);
/* Has the writer thread call on_kick (which must be set) soon, once however
 * many kicks come first; never waits for it. */
void wal_kick(wal *w);

/* Appends one record holding n ops with LSNs lsn .. lsn + n - 1. The caller
 * serializes appends and assigns LSNs in order; LSNs skipped since the last
 * record (wal_skip) are recorded in it as a WAL_GAP op. */
int wal_append(wal *w, uint64_t lsn, const wal_op *ops, uint32_t n);
/* wal_append for one region's part of a cross-region batch: the record
 * starts with a WAL_TXN op. */
int wal_append_part(wal *w, uint64_t lsn, const wal_op *ops, uint32_t n);
/* Notes that LSNs up to last were taken by writes that are not logged
 * (same serialization as wal_append). wal_sync(last) then waits only for
 * the records before them and for the large-log records they point to. */
void wal_skip(wal *w, uint64_t last);
/* Waits until every record up to lsn is durable. */
int wal_sync(wal *w, uint64_t lsn);
/* Waits until every record up to lsn (at most the newest appended) is
 * written to the file, synced or not, and says up to where that is
 * (*written): readers of the file see it, a crash
 * of the process does not lose it, a power cut may. The writer syncs it
 * within the durability interval, as it syncs asynchronous writes, or at
 * once for wal_sync. A replication primary that acknowledges a write once
 * its backups hold it ships it from there (par_repl_cursor_ship_written). */
int wal_push(wal *w, uint64_t lsn, uint64_t *written);
/* The segments taken and not listed in the description yet (their records
 * are not durable yet; wal_sync lists them). */
uint32_t wal_unlisted(wal *w);

/* Recovery: calls fn for every op with LSN > covered, in LSN order, stopping
 * at the first record that is missing, torn or out of sequence. *last_lsn is
 * the last LSN read (covered when none). A WAL_GAP op (LSNs skipped by
 * writes without the log, PAR_NO_WAL) is passed to fn with the first LSN it
 * skips when it reaches past covered; a WAL_TXN op is passed to fn (with the
 * LSN of the op after it) before the ops of its record. */
typedef int (*wal_replay_fn)(void *arg, uint64_t lsn, const wal_op *op);
int wal_replay(par_file *f, const region_desc *d, wal_replay_fn fn, void *arg, uint64_t *last_lsn);
/* After a replay that ended at last_lsn: PAR_ECORRUPT when a later segment
 * starts with its first record. Buffers are written and synced one at a
 * time, in order, so then every record before it had been durable: the
 * ones that stopped replay were damaged since, which a torn tail (the only
 * way a crash ends the log) cannot explain. */
int wal_check_end(par_file *f, const region_desc *d, uint64_t last_lsn);

/* For readers of the live log (replication, src/repl): the checksum seed of
 * a segment, and the parse of the record at off of the segment at b: 1 when
 * it is whole and carries LSN expect (then *size and *count are set). */
uint32_t wal_seed(uint32_t region_id, uint32_t gen);
int wal_parse(const uint8_t *b, uint32_t off, uint32_t seed, uint64_t expect, uint32_t *size,
              uint32_t *count);
/* For a copy of the log (api/checkpoint.c): b holds segment ws of region
 * region_id, read whole; zeroes it from the first record that covers an
 * LSN above last (or that does not parse) to its end, so that a replay of
 * the copy ends at last. */
void wal_cut(uint8_t *b, uint32_t region_id, const wal_seg *ws, uint64_t last);
/* The newest LSN known durable. */
uint64_t wal_durable_lsn(wal *w);
/* A log that restarts after a gap (a backup whose installed levels cover
 * LSNs it never logged; replay expects LSNs to follow on within a segment):
 * wal_restart writes and syncs everything appended and makes the next
 * append start a new segment; wal_skip_to then takes last_lsn as the newest
 * LSN logged and durable, the next record starting after it with no WAL_GAP
 * op (the caller appends nothing in between). Unlike wal_skip, the LSNs
 * skipped are no writes' at all: they are covered by installed levels. */
int wal_restart(wal *w);
void wal_skip_to(wal *w, uint64_t last_lsn);

#endif
