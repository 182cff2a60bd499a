/* The large (value) log of a region (Parallax §3.2): values of large pairs
 * are appended here once, and leaves keep a pointer to them. A region has
 * two heads — user writes append to the hot one, garbage collection
 * re-appends live values to the cold one (DiffKV §4.2) — over one list of
 * segments in the region's description.
 *
 * Record: crc32c u32 | len u32 | lsn u64 | key_len varint | value_len
 * varint | key | value; len counts the bytes after the 16-byte header and
 * the checksum, over everything after itself, is seeded with the region id
 * and the segment's incarnation, so records of an earlier use of a segment
 * never validate.
 *
 * Appends go to a 256 KiB tail buffer. When it fills, the append seals it
 * (a spare buffer takes over the tail), and the sealed buffer is written
 * with direct I/O outside the region's write_mu (vlog_write_sealed: by the
 * WAL thread for user writes, by GC after its relocations), while writers
 * go on appending; one that fills the tail before the sealed buffer is
 * written writes it itself. The
 * WAL writes both before it writes pointer records (vlog_flush), and syncs
 * them. A partial last block stays in the buffer and is written again, as
 * it was, with the records after it: records follow each other without
 * padding. So the sealed buffer is always written before the buffer after
 * it (wmu orders the writes). */
#ifndef PAR_LOG_VLOG_H
#define PAR_LOG_VLOG_H

#include <pthread.h>
#include <stdint.h>

#include "io/file.h"

#define VLOG_HDR 16u
#define VPTR_SIZE 16u
/* The incarnation in pointers to transient medium-log records, which are
 * reached only through the trees that own their segments. */
#define MEDIUM_INC 0xffffffffu

/* Where a value lives: segment, offset, the segment's incarnation, and the
 * record's size (so compaction can account garbage without reading it). */
typedef struct vptr {
  uint32_t seg, off, inc, size;
} vptr;

void vptr_encode(uint8_t *p, vptr v);
vptr vptr_decode(const uint8_t *p);
static inline int vptr_equal(vptr a, vptr b) {
  return a.seg == b.seg && a.off == b.off && a.inc == b.inc && a.size == b.size;
}

/* A segment the log took (or a run of n for one value too large for a
 * segment) and its new incarnation. */
typedef struct vlog_taken {
  uint32_t seg, inc, n;
} vlog_taken;

/* Takes n free consecutive segments and a new incarnation for them, in
 * memory only. */
typedef int (*vlog_take_fn)(void *ctx, uint32_t n, uint32_t *seg, uint32_t *inc);
/* Durably records (one synced redo record) the segments taken, in order,
 * and closes the heads left: a left head is the pointer to its unwritten
 * tail ({seg, used bytes, inc, unused bytes}), which counts as garbage. */
typedef int (*vlog_list_fn)(void *ctx, const vlog_taken *taken, uint32_t ntaken, const vptr *left, uint32_t nleft);
/* Gives back n segments taken and never listed (nothing points into them). */
typedef void (*vlog_give_back_fn)(void *ctx, uint32_t seg, uint32_t n);

typedef struct vlog {
  pthread_mutex_t mu;
  pthread_mutex_t wmu; /* held while writing to the file, taken before mu */
  par_file *file;
  uint32_t region_id;
  vlog_take_fn take;
  vlog_list_fn list;
  vlog_give_back_fn give_back;
  void *ctx;
  uint32_t seg, inc;   /* current segment; seg == 0 until one is needed */
  uint64_t head_lsn;   /* the newest LSN appended to it */
  uint64_t head_unlogged; /* ... by a write without the log (0: none) */
  uint32_t base, fill; /* buf holds [base, base + fill) of seg */
  uint32_t flushed;    /* ... the file or the sealed buffer [base, base + flushed)
                          (a partial block) */
  /* The sealed buffer (NULL: none), to be written to sealed_len bytes at
   * sealed_base of sealed_seg; its records ([sealed_base, + sealed_fill))
   * are read from it until then. has_sealed: sealed != NULL, read without mu. */
  uint8_t *sealed;
  uint32_t sealed_seg, sealed_inc, sealed_base, sealed_fill, sealed_len, sealed_cap;
  int has_sealed;
  uint8_t *spare; /* a VLOG_CHUNK buffer for the next seal, or NULL */
  /* Heads taken since the last vlog_list_pending, and heads left and not
   * closed yet, in order, with the newest LSN each left head holds and the
   * newest of a write without the log; listing is under way while
   * `listing` is set. */
  vlog_taken *taken;
  vptr *left;
  uint64_t *left_lsn, *left_unlogged;
  uint32_t ntaken, nleft, pending_cap;
  uint32_t listing; /* heads under vlog_list_pending's listing */
  uint32_t seed;
  uint8_t *buf;
  uint32_t cap;
  int failed;
  uint64_t bytes;      /* record bytes appended */
  /* Write through the page cache, not with direct I/O: a log cursor reads
   * the values back soon after (repl/log.c sets it, atomically; it stays). */
  int cached;
  uint64_t written;    /* buffer bytes written to the file, not synced yet by a listing */
} vlog;

static inline size_t vlog_record_size(size_t klen, size_t vlen);

/* A head segment is only taken by the append that needs it; the WAL's
 * writer thread lists it (vlog_list_pending, before it syncs the values and
 * writes the WAL block pointing at them), so no writer waits on a redo
 * fdatasync when the log moves to a new segment. A crash before the listing
 * leaves the segment free: nothing durable points into it.
 *
 * A head stays open in the description after the log left it until the WAL
 * records of all its values are durable, and a flush covers the values of
 * writes without the log (PAR_NO_WAL): a crash can lose the WAL records of
 * values already written, and writes without the log that no flush covered
 * (their records are orphans, which nothing will ever point at), and the
 * next open counts the orphans of the segments still open as garbage
 * (gc_count_crash_garbage). A closed segment holds none. */
int vlog_init(vlog *l, par_file *f, uint32_t region_id, vlog_take_fn take, vlog_list_fn list,
              vlog_give_back_fn give_back, void *ctx);
void vlog_destroy(vlog *l);
/* Makes segment seg (incarnation inc), listed already, the head again,
 * appends going on at end (< a segment): a head parked at a clean close,
 * whose records [0, end) are all durable (catalog.h, VLOG_PARKED_HOT). Call
 * before the first append. PAR_EIO when its last block cannot be read. */
int vlog_resume(vlog *l, uint32_t seg, uint32_t inc, uint32_t end);
/* unlogged: the write has no WAL record (PAR_NO_WAL); only a flush makes it
 * durable. */
int vlog_append(vlog *l, uint64_t lsn, int unlogged, const void *key, uint16_t key_len, const void *value,
                uint32_t value_len, vptr *out);
/* Writes the sealed buffer and what the tail buffer holds (no sync). */
int vlog_flush(vlog *l);
/* Writes the sealed buffer, if there is one (no sync), without write_mu. A
 * failed write fails the log (later appends and flushes report it); the
 * sealed records stay readable. */
int vlog_write_sealed(vlog *l);
/* Whether a sealed buffer waits for its write (read without mu). */
static inline int vlog_has_sealed(vlog *l) { return __atomic_load_n(&l->has_sealed, __ATOMIC_ACQUIRE); }
/* Lists the heads taken since the last call and closes the heads left whose
 * values' WAL records are all durable (their LSNs up to durable_lsn) and
 * whose values written without the log a flush covers (up to covered_lsn);
 * the others wait for a later call. One caller at a time: the WAL writer
 * thread, and the region's close once the WAL stopped and L0 was flushed
 * (both UINT64_MAX). */
int vlog_list_pending(vlog *l, uint64_t durable_lsn, uint64_t covered_lsn);
/* The heads taken and not listed yet (being listed included). */
uint32_t vlog_unlisted(vlog *l);
/* The segments (incarnations, into held[0..1]) the log still has bytes of
 * in memory: its head, and the segment of a sealed buffer not written yet;
 * returns how many. Once a log let a segment go it never writes there
 * again, so a segment found not held is in the file whole. */
uint32_t vlog_held(vlog *l, uint32_t held[2]);
/* Bytes of the tail buffer written to the file so far (a run of a huge
 * value is synced by its listing): a caller that must make records durable
 * syncs the file when this changed since its last sync. */
uint64_t vlog_written(vlog *l);
/* Writes a record too large for a segment into a run of segments of its
 * own, at once, and only then lists the run (one synced redo record, which
 * makes the record durable too: the volume is one file). A listed run
 * therefore always holds its own record whole: listed first, a kill before
 * the write would leave the run holding what its segments held before, often
 * a dead run's record, whose header looks whole and covered by the levels, so
 * the next open would never count the run as garbage. When the write or the
 * listing fails the run is given back; *out names the run only once it is
 * listed. */
int vlog_append_huge(vlog *l, uint64_t lsn, const void *key, uint16_t key_len, const void *value,
                     uint32_t value_len, vptr *out);
/* Writes a record too large for a segment, checksum seeded with seed, into
 * the run of segments from seg (vlog_append_huge's write, and a send-index
 * backup's copy of a primary's run). No sync. */
int vlog_write_huge(par_file *f, uint32_t seed, uint32_t seg, uint64_t lsn, const void *key, uint16_t key_len,
                    const void *value, uint32_t value_len);
/* Copies the value at p out of the tail buffer into a malloc'd *copy when
 * it is still there; returns 1 if it was, 0 if it is on disk. */
int vlog_read_buffered(vlog *l, vptr p, uint8_t **copy, uint32_t *value_len);

/* Readahead for a reader that goes through log records in the order they
 * were written, in several segments at once: the merge at the medium merge
 * level reads each transient set's values in key order, which is the order
 * the set was written in, and sets interleave. Through the MADV_RANDOM map
 * each cold page would be one synchronous read; this keeps, per segment
 * (a small direct-mapped table; a collision only costs a redundant
 * request), the end of what was requested, and asks for the next window
 * once a read comes within half a window of it. */
#define VLOG_RA_WINDOW (1u << 20)
#define VLOG_RA_SLOTS 16u

typedef struct vlog_readahead {
  uint32_t seg[VLOG_RA_SLOTS]; /* 0: none (segment 0 holds the superblock) */
  uint32_t end[VLOG_RA_SLOTS]; /* offset in seg up to which reads were asked */
} vlog_readahead;

/* Call before reading the record at p through the map; zero-initialise ra. */
void vlog_readahead_note(vlog_readahead *ra, const par_file *f, vptr p);

/* A record in memory: PAR_OK and its parts, or PAR_ECORRUPT. */
typedef struct vlog_record {
  uint64_t lsn;
  const uint8_t *key, *value;
  uint16_t key_len;
  uint32_t value_len;
  uint32_t size; /* header included */
} vlog_record;

uint32_t vlog_seed(uint32_t region_id, uint32_t inc);
int vlog_parse(const uint8_t *rec, size_t avail, uint32_t seed, vlog_record *out);
/* In seg_image, a whole segment read from the file: the record at *off or,
 * past a flush's padding, at the next block; sets *off to it. PAR_OK, or
 * PAR_NOT_FOUND where the segment's records end. */
int vlog_next(const uint8_t *seg_image, uint32_t *off, uint32_t seed, vlog_record *out);
/* After vlog_next found no record at *off: the next record at a later
 * offset of seg_image (its records follow a damaged one without a gap, or
 * after a flush's padding), found by trying every offset. PAR_OK with *off
 * set to it, or PAR_NOT_FOUND: the segment's records end at *off. Records of
 * the segment's earlier incarnations do not match the seed. */
int vlog_resync(const uint8_t *seg_image, uint32_t *off, uint32_t seed, vlog_record *out);
/* Encodes a record at dst (lsn 0 for the medium log); returns its size. */
size_t vlog_encode(uint8_t *dst, uint32_t seed, uint64_t lsn, const void *key, uint16_t key_len,
                   const void *value, uint32_t value_len);
/* Reads the record at p through the memory map. */
int vlog_read_mapped(const par_file *f, uint32_t region_id, vptr p, vlog_record *out);
/* Reads the record at p with pread (through the page cache, not the map)
 * into a malloc'd *copy (to free), which *out points into. */
int vlog_read_copy(const par_file *f, uint32_t region_id, vptr p, uint8_t **copy, vlog_record *out);

#include "util/coding.h"
static inline size_t vlog_record_size(size_t klen, size_t vlen) {
  return VLOG_HDR + varint_size(klen) + varint_size(vlen) + klen + vlen;
}

#endif
