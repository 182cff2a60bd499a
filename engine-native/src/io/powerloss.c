#include "io/powerloss.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/file.h"

/* Journal records, appended in the order the writes happened:
 *   WRITE: header, then len old bytes, then len new bytes;
 *   SYNC:  header with through = the first seq an fdatasync did not cover.
 * A record cut short by the kill is ignored: its write happened before it
 * was journaled (so it simply counts as persisted, one of a power cut's
 * possible outcomes), and a SYNC is journaled before fdatasync returns to
 * the engine, so nothing acknowledged depends on a lost one. */
enum { REC_WRITE = 1, REC_SYNC = 2 };
#define REC_MAGIC 0x504c4f47u /* "PLOG" */

typedef struct rec_header {
  uint32_t magic, type;
  uint64_t seq;     /* WRITE: its number; SYNC: unused */
  uint64_t off;     /* WRITE: file offset; SYNC: first seq not covered */
  uint64_t len;     /* WRITE: bytes written; SYNC: 0 */
} rec_header;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int armed;
static int jfd = -1;
static uint64_t next_seq;
static dev_t vol_dev;
static ino_t vol_ino;

int powerloss_arm(const char *journal_path) {
  pthread_mutex_lock(&mu);
  int fd = open(journal_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  int err = fd < 0 ? errno : 0;
  if (!err) {
    jfd = fd;
    next_seq = 0;
    vol_ino = 0;
    atomic_store(&armed, 1);
  }
  pthread_mutex_unlock(&mu);
  return err;
}

int powerloss_armed(void) { return atomic_load_explicit(&armed, memory_order_relaxed); }

static int write_all(int fd, const void *p, size_t len) {
  const uint8_t *b = p;
  while (len > 0) {
    ssize_t n = write(fd, b, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    b += n;
    len -= (size_t)n;
  }
  return 0;
}

/* The journal describes one file: a write to another one is a test bug. */
static void check_same_file(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) abort();
  if (vol_ino == 0) {
    vol_dev = st.st_dev;
    vol_ino = st.st_ino;
  }
  if (st.st_dev != vol_dev || st.st_ino != vol_ino) abort();
}

ssize_t powerloss_pwrite(int fd, const void *buf, size_t len, uint64_t off) {
  /* The old bytes, read through the same descriptor: an O_DIRECT one needs
   * an aligned buffer, and the engine's direct writes are block-aligned. */
  size_t cap = (len + PAR_BLOCK - 1) / PAR_BLOCK * PAR_BLOCK;
  uint8_t *old = NULL;
  if (posix_memalign((void **)&old, PAR_BLOCK, cap ? cap : PAR_BLOCK) != 0) {
    errno = ENOMEM;
    return -1;
  }
  pthread_mutex_lock(&mu);
  check_same_file(fd);
  ssize_t have = pread(fd, old, len, (off_t)off);
  if (have < 0) have = 0; /* past the end of the file: nothing to restore but zeros */
  memset(old + have, 0, len - (size_t)have);
  ssize_t n = pwrite(fd, buf, len, (off_t)off);
  int saved = errno;
  if (n > 0) {
    rec_header h = {REC_MAGIC, REC_WRITE, next_seq++, off, (uint64_t)n};
    if (write_all(jfd, &h, sizeof h) || write_all(jfd, old, (size_t)n) ||
        write_all(jfd, buf, (size_t)n))
      abort(); /* a journal that misses a write would make the test lie */
  }
  pthread_mutex_unlock(&mu);
  free(old);
  errno = saved;
  return n;
}

int powerloss_fdatasync(int fd) {
  pthread_mutex_lock(&mu);
  uint64_t through = next_seq; /* writes journaled so far have completed */
  pthread_mutex_unlock(&mu);
  int rc = fdatasync(fd);
  if (rc != 0) return rc;
  int saved = errno;
  pthread_mutex_lock(&mu);
  if (next_seq == through) {
    /* Everything journaled is durable: start the journal afresh. */
    if (ftruncate(jfd, 0) != 0) abort();
  } else {
    rec_header h = {REC_MAGIC, REC_SYNC, 0, through, 0};
    if (write_all(jfd, &h, sizeof h)) abort();
  }
  pthread_mutex_unlock(&mu);
  errno = saved;
  return 0;
}

/* ---- the power cut ------------------------------------------------------------ */

typedef struct touch {
  uint64_t sector;
  uint64_t seq;
  const rec_header *rec; /* followed by its old and new bytes */
} touch;

static int by_sector_then_seq(const void *a, const void *b) {
  const touch *x = a, *y = b;
  if (x->sector != y->sector) return x->sector < y->sector ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static uint64_t next_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Reads the whole journal; *n is its length. */
static uint8_t *read_journal(const char *path, size_t *n) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  uint8_t *b = NULL;
  if (fstat(fd, &st) == 0 && (b = malloc((size_t)st.st_size + 1)) != NULL) {
    ssize_t got = pread(fd, b, (size_t)st.st_size, 0);
    *n = got < 0 ? 0 : (size_t)got;
  }
  close(fd);
  return b;
}

int powerloss_crash(const char *volume_path, const char *journal_path, uint64_t seed,
                    powerloss_stats *stats) {
  memset(stats, 0, sizeof *stats);
  size_t n = 0;
  uint8_t *j = read_journal(journal_path, &n);
  if (!j) return errno ? errno : ENOMEM;

  /* Pass 1: the last completed fdatasync, and the writes after it. */
  uint64_t durable_through = 0;
  size_t count = 0, cap = 0;
  touch *t = NULL;
  int err = 0;
  for (size_t pos = 0; pos + sizeof(rec_header) <= n && !err;) {
    const rec_header *h = (const rec_header *)(j + pos);
    if (h->magic != REC_MAGIC) {
      err = EINVAL;
      break;
    }
    size_t size = sizeof *h + (h->type == REC_WRITE ? 2 * h->len : 0);
    if (pos + size > n) break; /* cut short by the kill */
    if (h->type == REC_SYNC && h->off > durable_through) durable_through = h->off;
    pos += size;
  }
  for (size_t pos = 0; pos + sizeof(rec_header) <= n && !err;) {
    const rec_header *h = (const rec_header *)(j + pos);
    size_t size = sizeof *h + (h->type == REC_WRITE ? 2 * h->len : 0);
    if (pos + size > n) break;
    pos += size;
    if (h->type != REC_WRITE || h->seq < durable_through) continue;
    stats->unsynced_writes++;
    for (uint64_t s = h->off / POWERLOSS_SECTOR; s * POWERLOSS_SECTOR < h->off + h->len; s++) {
      if (count == cap) {
        cap = cap ? 2 * cap : 1024;
        touch *bigger = realloc(t, cap * sizeof *t);
        if (!bigger) {
          err = ENOMEM;
          break;
        }
        t = bigger;
      }
      t[count++] = (touch){s, h->seq, h};
    }
  }

  /* Pass 2: per sector, keep writes 1..k of its k unsynced ones, k random,
   * by undoing the later ones newest first from the file's current bytes. */
  int fd = err ? -1 : open(volume_path, O_RDWR | O_CLOEXEC);
  if (!err && fd < 0) err = errno;
  if (!err && count) qsort(t, count, sizeof *t, by_sector_then_seq);
  uint8_t sector[POWERLOSS_SECTOR];
  for (size_t i = 0; i < count && !err;) {
    size_t end = i;
    while (end < count && t[end].sector == t[i].sector) end++;
    size_t versions = end - i + 1; /* the durable one and one after each write */
    size_t keep = (size_t)(next_rand(&seed) % versions);
    stats->sectors++;
    stats->sectors_durable += keep == 0;
    stats->sectors_newest += keep == versions - 1;
    uint64_t base = t[i].sector * POWERLOSS_SECTOR;
    memset(sector, 0, sizeof sector);
    if (pread(fd, sector, sizeof sector, (off_t)base) < 0) err = errno;
    for (size_t k = end; k-- > i + keep && !err;) {
      const rec_header *h = t[k].rec;
      const uint8_t *old = (const uint8_t *)(h + 1);
      uint64_t lo = h->off > base ? h->off : base;
      uint64_t hi = h->off + h->len < base + POWERLOSS_SECTOR ? h->off + h->len
                                                              : base + POWERLOSS_SECTOR;
      memcpy(sector + (lo - base), old + (lo - h->off), hi - lo);
    }
    if (!err && pwrite(fd, sector, sizeof sector, (off_t)base) != (ssize_t)sizeof sector)
      err = errno ? errno : EIO;
    i = end;
  }
  if (fd >= 0 && fsync(fd) != 0 && !err) err = errno;
  if (fd >= 0) close(fd);
  free(t);
  free(j);
  return err;
}
