/* The residency record: which pages of the volume were in the page cache
 * when it closed, for the next open's warm-up (api/warm.c) to read first.
 *
 * Why: without a record the warm-up reads the trees in key order up to its
 * budget. Where they are larger than the budget (MD at 5 M records under
 * 1 GiB, SD at 20 M) that warms the first part of the key space, while the
 * gets of a scrambled workload want the hot leaves all over it, and the hot
 * values, which that warm-up never reads. What the page cache holds at a
 * clean close is what the kernel's LRU kept of the last session's reads:
 * the best guess of what the next one reads (InnoDB's buffer-pool dump, in
 * kind).
 *
 * Where: a file beside the volume, <path>.warm, written by par_close (a
 * temporary file renamed over it) and removed by the par_open that reads
 * it, so that an open after a crash finds none. None for a block device
 * (there is no directory of its own to write it in). A record is advice: a
 * missing, damaged or foreign one (another volume, or another state of this
 * one: the superblock's epoch and stream and the file's identity and size
 * must all match) is ignored, and a wrong one costs reads, never a result.
 *
 * Format, little-endian: the header below, then nruns runs {u32 first page,
 * u32 pages} in increasing order, then the crc32c of everything before it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/internal.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/status.h"

static const char MAGIC[8] = {'P', 'A', 'R', 'W', 'A', 'R', 'M', '1'};
enum {
  VERSION = 1,
  /* magic, version, page size, epoch, stream, dev, ino, size, nruns */
  HEADER = 8 + 4 + 4 + 8 + 8 + 8 + 8 + 8 + 8,
  RUN = 8,
};
/* Pages asked of mincore at a time: its vector stays small. */
#define CHUNK_PAGES (16u << 10)
#define PAGE RESIDENT_PAGE
#define SEG_PAGES RESIDENT_SEG_PAGES
_Static_assert(SEG_PAGES % 64 == 0, "a segment's pages fill whole words of the bitmap");

/* What a record must match: this state of this volume file. */
typedef struct identity {
  uint64_t epoch, stream, dev, ino, size;
} identity;

static int identity_of(const par_volume *v, identity *id) {
  struct stat st;
  if (fstat(v->file.fd, &st)) return -1;
  *id = (identity){v->log.sb.epoch, v->log.sb.stream_id, (uint64_t)st.st_dev, (uint64_t)st.st_ino,
                   (uint64_t)st.st_size};
  return 0;
}

int resident_init(par_volume *v, const char *path) {
  if (v->file.is_blockdev || sysconf(_SC_PAGESIZE) != PAGE) return PAR_OK;
  size_t n = strlen(path);
  v->resident_path = malloc(n + sizeof ".warm");
  if (!v->resident_path) return par_error(PAR_ENOMEM, "residency record path");
  memcpy(v->resident_path, path, n);
  memcpy(v->resident_path + n, ".warm", sizeof ".warm");
  return PAR_OK;
}

/* Run list of buf into a bitmap over the volume's pages; -1 if the runs
 * are not increasing, disjoint and inside the volume. */
static int set_runs(par_volume *v, const uint8_t *runs, uint64_t nruns, uint64_t npages) {
  uint64_t *bits = calloc((npages + 63) / 64 + 1, sizeof *bits);
  if (!bits) return -1;
  uint64_t next = 0;
  for (uint64_t i = 0; i < nruns; i++) {
    uint64_t first = dec32(runs + i * RUN), count = dec32(runs + i * RUN + 4);
    if (first < next || !count || first + count > npages) {
      free(bits);
      return -1;
    }
    for (uint64_t p = first; p < first + count; p++) bits[p / 64] |= 1ull << (p % 64);
    next = first + count;
  }
  v->resident_bits = bits;
  v->resident_pages = npages;
  return 0;
}

/* The record's bytes, if it describes this volume as it is now. */
static void parse(par_volume *v, const uint8_t *b, size_t len) {
  identity id;
  if (len < HEADER + 4 || memcmp(b, MAGIC, 8) || dec32(b + 8) != VERSION || dec32(b + 12) != PAGE ||
      identity_of(v, &id))
    return;
  if (dec64(b + 16) != id.epoch || dec64(b + 24) != id.stream || dec64(b + 32) != id.dev ||
      dec64(b + 40) != id.ino || dec64(b + 48) != id.size)
    return;
  uint64_t nruns = dec64(b + 56), npages = id.size / PAGE;
  if (nruns > npages || len != HEADER + nruns * RUN + 4) return;
  if (crc32c(0, b, len - 4) != dec32(b + len - 4)) return;
  (void)set_runs(v, b + HEADER, nruns, npages);
}

void resident_load(par_volume *v) {
  if (!v->resident_path) return;
  int fd = open(v->resident_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  /* Runs are disjoint and apart: at most one per two pages of the volume. */
  uint64_t most = HEADER + 4 + (v->file.size / PAGE / 2 + 1) * RUN;
  if (!fstat(fd, &st) && st.st_size > 0 && (uint64_t)st.st_size <= most) {
    uint8_t *b = malloc((size_t)st.st_size);
    if (b && pread(fd, b, (size_t)st.st_size, 0) == st.st_size) parse(v, b, (size_t)st.st_size);
    free(b);
  }
  close(fd);
  /* Read once: the next clean close writes the next one. */
  (void)unlink(v->resident_path);
}

const uint64_t *resident_seg_bits(const par_volume *v, uint32_t seg) {
  uint64_t first = seg_offset(seg) / PAGE;
  if (!v->resident_bits || first + SEG_PAGES > v->resident_pages) return NULL;
  return v->resident_bits + first / 64;
}

/* Appends a run to a growing buffer. */
typedef struct runbuf {
  uint8_t *b;
  size_t len, cap;
  uint64_t n;
} runbuf;

static int push_run(runbuf *rb, uint64_t first, uint64_t count) {
  if (rb->len + RUN > rb->cap) {
    size_t cap = rb->cap ? rb->cap * 2 : 4096;
    uint8_t *b = realloc(rb->b, cap);
    if (!b) return -1;
    rb->b = b;
    rb->cap = cap;
  }
  enc32(rb->b + rb->len, (uint32_t)first);
  enc32(rb->b + rb->len + 4, (uint32_t)count);
  rb->len += RUN;
  rb->n++;
  return 0;
}

/* The runs of resident pages of [0, npages) of the map, after the header. */
static int collect(const par_volume *v, uint64_t npages, runbuf *rb) {
  unsigned char *vec = malloc(CHUNK_PAGES);
  if (!vec) return -1;
  uint64_t start = UINT64_MAX;
  int rc = 0;
  for (uint64_t p = 0; !rc && p < npages; p += CHUNK_PAGES) {
    uint64_t n = npages - p < CHUNK_PAGES ? npages - p : CHUNK_PAGES;
    if (mincore((void *)(file_map(&v->file) + p * PAGE), n * PAGE, vec)) {
      rc = -1;
      break;
    }
    for (uint64_t i = 0; !rc && i < n; i++) {
      if ((vec[i] & 1) && start == UINT64_MAX) start = p + i;
      else if (!(vec[i] & 1) && start != UINT64_MAX) {
        rc = push_run(rb, start, p + i - start);
        start = UINT64_MAX;
      }
    }
  }
  if (!rc && start != UINT64_MAX) rc = push_run(rb, start, npages - start);
  free(vec);
  return rc;
}

void resident_save(par_volume *v) {
  if (!v->resident_path) return;
  identity id;
  if (identity_of(v, &id)) return;
  uint64_t npages = (id.size < v->file.mapped ? id.size : v->file.mapped) / PAGE;
  if (npages > UINT32_MAX) return; /* runs name pages in 32 bits */
  runbuf rb = {malloc(HEADER + 4096), HEADER, HEADER + 4096, 0}; /* the header's room first */
  if (!rb.b || collect(v, npages, &rb) || !rb.n) goto out;
  memcpy(rb.b, MAGIC, 8);
  enc32(rb.b + 8, VERSION);
  enc32(rb.b + 12, PAGE);
  enc64(rb.b + 16, id.epoch);
  enc64(rb.b + 24, id.stream);
  enc64(rb.b + 32, id.dev);
  enc64(rb.b + 40, id.ino);
  enc64(rb.b + 48, id.size);
  enc64(rb.b + 56, rb.n);
  uint32_t crc = crc32c(0, rb.b, rb.len);
  uint8_t tail[4];
  enc32(tail, crc);
  size_t n = strlen(v->resident_path);
  char *tmp = malloc(n + sizeof ".tmp");
  if (!tmp) goto out;
  memcpy(tmp, v->resident_path, n);
  memcpy(tmp + n, ".tmp", sizeof ".tmp");
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int ok = fd >= 0 && write(fd, rb.b, rb.len) == (ssize_t)rb.len && write(fd, tail, 4) == 4;
  if (fd >= 0) close(fd);
  /* Not synced: a record lost to a power failure is no record, a torn one fails its checksum. */
  if (!ok || rename(tmp, v->resident_path)) (void)unlink(tmp);
  free(tmp);
out:
  free(rb.b);
}

void resident_free(par_volume *v) {
  free(v->resident_bits);
  free(v->resident_path);
  v->resident_bits = NULL;
  v->resident_path = NULL;
}
