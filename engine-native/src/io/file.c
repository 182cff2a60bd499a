#include "io/file.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fault.h"
#include "io/mapguard.h"
#include "io/powerloss.h"
#include "util/status.h"

/* The largest volume this version supports (its segment lists must fit a
 * redo-log record). */
#define PAR_MAX_VOLUME_BYTES (512ull << 30)

/* Maps [0, len) of the file as the new current map, registered with the
 * SIGBUS guard. Reads through the map are point lookups (a node, a value).
 * With the default advice a fault on a cold page reads the device's whole
 * readahead window around it (read_ahead_kb, 8 MiB on some disks), which
 * a memory limit evicts before use: gets then read megabytes each. With
 * MADV_RANDOM a fault reads only the page it needs. Sequential readers do
 * their own reads (direct I/O) or ask for readahead (file_prefetch). */
static int map_file(par_file *f, uint64_t len) {
  void *m = mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_NORESERVE, f->fd, 0);
  if (m == MAP_FAILED) return par_error_errno(PAR_EIO, errno, "cannot map %llu bytes of the volume", (unsigned long long)len);
  int rc = madvise(m, len, MADV_RANDOM) ? par_error_errno(PAR_EIO, errno, "madvise of the volume map") : PAR_OK;
  if (!rc) rc = mapguard_register(m, len);
  if (rc) {
    munmap(m, len);
    return rc;
  }
  if (f->map) {
    assert(f->nold < sizeof f->old / sizeof f->old[0]); /* each map at least doubles */
    f->old[f->nold].base = f->map;
    f->old[f->nold++].len = f->mapped;
  }
  f->mapped = len;
  __atomic_store_n(&f->map, (const uint8_t *)m, __ATOMIC_RELEASE);
  return PAR_OK;
}

static void unmap(const uint8_t *base, uint64_t len) {
  mapguard_unregister(base);
  munmap((void *)base, len);
}

int file_open(par_file *f, const char *path, int create, int direct, uint64_t limit) {
  memset(f, 0, sizeof *f);
  f->fd = f->dfd = -1;
  int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0);
  f->fd = open(path, flags, 0644);
  if (f->fd < 0)
    return par_error_errno(errno == ENOENT ? PAR_ENOENT : PAR_EIO, errno, "cannot open %s", path);
  if (flock(f->fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    close(f->fd);
    return par_error_errno(PAR_EBUSY, e, "volume %s is in use by another handle", path);
  }
  struct stat st;
  if (fstat(f->fd, &st) != 0) goto fail_errno;
  if (S_ISBLK(st.st_mode)) {
    f->is_blockdev = 1;
    if (ioctl(f->fd, BLKGETSIZE64, &f->size) != 0) goto fail_errno;
  } else if (S_ISREG(st.st_mode)) {
    f->size = (uint64_t)st.st_size;
  } else {
    close(f->fd);
    return par_error(PAR_EINVAL, "%s is neither a regular file nor a block device", path);
  }
  f->limit = limit && limit < PAR_MAX_VOLUME_BYTES ? limit : PAR_MAX_VOLUME_BYTES;
  if (f->is_blockdev && f->size < f->limit) f->limit = f->size;
  f->dfd = f->fd;
  if (direct) {
    int dfd = open(path, O_RDWR | O_CLOEXEC | O_DIRECT);
    if (dfd >= 0) f->dfd = dfd; /* else: the file system has no direct I/O (tmpfs) */
  }
  /* Reads through the descriptor's page cache (file_read_cached: leaves of
   * gets) are point reads, like the map's: without this advice each cold
   * one would also read the kernel's initial readahead window (4x the
   * request). Sequential readers read with direct I/O or ask (file_prefetch). */
  (void)posix_fadvise(f->fd, 0, 0, POSIX_FADV_RANDOM);
  uint64_t len = f->size > PAR_MAP_MIN ? f->size : PAR_MAP_MIN;
  int rc = map_file(f, len < f->limit ? len : f->limit);
  if (rc) {
    file_close(f);
    return rc;
  }
  return PAR_OK;
fail_errno:;
  int e = errno;
  file_close(f);
  return par_error_errno(PAR_EIO, e, "cannot open volume %s", path);
}

void file_close(par_file *f) {
  if (f->map) unmap(f->map, f->mapped);
  for (uint32_t i = 0; i < f->nold; i++) unmap(f->old[i].base, f->old[i].len);
  f->nold = 0;
  if (f->dfd >= 0 && f->dfd != f->fd) close(f->dfd);
  if (f->fd >= 0) close(f->fd); /* releases the flock */
  f->map = NULL;
  f->fd = f->dfd = -1;
}

/* The system calls, behind the test-only fault hook (io/fault.h) and
 * power-loss journal (io/powerloss.h). */
static ssize_t do_pread(int fd, void *p, size_t len, uint64_t off) {
  int e = fault_check(FAULT_PREAD, off, &len);
  if (e) {
    errno = e;
    return -1;
  }
  return len ? pread(fd, p, len, (off_t)off) : 0;
}

static ssize_t do_pwrite(int fd, const void *p, size_t len, uint64_t off) {
  int e = fault_check(FAULT_PWRITE, off, &len);
  if (e) {
    errno = e;
    return -1;
  }
  if (!len) return 0;
  return powerloss_armed() ? powerloss_pwrite(fd, p, len, off) : pwrite(fd, p, len, (off_t)off);
}

static int do_fdatasync(int fd) {
  size_t len = 0;
  int e = fault_check(FAULT_FSYNC, 0, &len);
  if (e) {
    errno = e;
    return -1;
  }
  return powerloss_armed() ? powerloss_fdatasync(fd) : fdatasync(fd);
}

static int do_fallocate(int fd, uint64_t off, uint64_t len) {
  size_t n = (size_t)len;
  int e = fault_check(FAULT_FALLOCATE, off, &n);
  return e ? e : posix_fallocate(fd, (off_t)off, (off_t)len);
}

static int aligned(const void *p, size_t len, uint64_t off) {
  return ((uintptr_t)p % PAR_BLOCK) == 0 && len % PAR_BLOCK == 0 && off % PAR_BLOCK == 0;
}

static int read_fd(int fd, void *buf, size_t len, uint64_t off) {
  uint8_t *p = buf;
  while (len > 0) {
    ssize_t n = do_pread(fd, p, len, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return par_error_errno(par_status_from_errno(errno), errno, "read of volume at %llu", (unsigned long long)off);
    if (n == 0) return par_error(PAR_ECORRUPT, "volume ends at %llu, before the data it references", (unsigned long long)off);
    p += n;
    len -= (size_t)n;
    off += (uint64_t)n;
  }
  return PAR_OK;
}

int file_read(par_file *f, void *buf, size_t len, uint64_t off) {
  return read_fd((f->dfd != f->fd && aligned(buf, len, off)) ? f->dfd : f->fd, buf, len, off);
}

int file_read_cached(const par_file *f, void *buf, size_t len, uint64_t off) {
  return read_fd(f->fd, buf, len, off);
}

static int write_fd(int fd, const void *buf, size_t len, uint64_t off) {
  const uint8_t *p = buf;
  while (len > 0) {
    ssize_t n = do_pwrite(fd, p, len, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return par_error_errno(par_status_from_errno(errno), errno, "write to volume at %llu", (unsigned long long)off);
    if (n == 0) return par_error(PAR_ENOSPC, "write to volume at %llu made no progress", (unsigned long long)off);
    p += n;
    len -= (size_t)n;
    off += (uint64_t)n;
  }
  return PAR_OK;
}

int file_write(par_file *f, const void *buf, size_t len, uint64_t off) {
  return write_fd((f->dfd != f->fd && aligned(buf, len, off)) ? f->dfd : f->fd, buf, len, off);
}

int file_write_cached(par_file *f, const void *buf, size_t len, uint64_t off) { return write_fd(f->fd, buf, len, off); }

static _Thread_local uint64_t syncs_on_this_thread;

uint64_t file_syncs_on_this_thread(void) { return syncs_on_this_thread; }

int file_sync(par_file *f) {
  syncs_on_this_thread++;
  while (do_fdatasync(f->fd) != 0) {
    if (errno == EINTR) continue;
    return par_error_errno(par_status_from_errno(errno), errno, "fdatasync of volume");
  }
  return PAR_OK;
}

int file_grow(par_file *f, uint64_t new_size) {
  if (new_size <= f->size) return PAR_OK;
  if (new_size > f->limit || f->is_blockdev)
    return par_error(PAR_ENOSPC, "volume would grow to %llu bytes, over its limit of %llu",
                     (unsigned long long)new_size, (unsigned long long)f->limit);
  int e = do_fallocate(f->fd, f->size, new_size - f->size);
  if (e == EOPNOTSUPP || e == EINVAL) e = ftruncate(f->fd, (off_t)new_size) ? errno : 0;
  if (e) {
    /* Keep the file at a whole-segment length: a partial growth may remain. */
    (void)!ftruncate(f->fd, (off_t)f->size);
    return par_error_errno(par_status_from_errno(e), e, "cannot grow volume to %llu bytes",
                           (unsigned long long)new_size);
  }
  if (new_size > f->mapped) {
    /* The map grows before the size is published: a reader that loads the
     * size then the map finds the new offsets mapped. */
    uint64_t len = new_size > 2 * f->mapped ? new_size : 2 * f->mapped;
    int rc = map_file(f, len < f->limit ? len : f->limit);
    if (rc) {
      (void)!ftruncate(f->fd, (off_t)f->size);
      return rc;
    }
  }
  __atomic_store_n(&f->size, new_size, __ATOMIC_RELEASE); /* readers check node offsets against it */
  return PAR_OK;
}

int file_reserve(par_file *f, uint64_t off, uint64_t len) {
  assert(off + len <= f->size);
  if (f->is_blockdev) return PAR_OK; /* its blocks are always there */
  int e = do_fallocate(f->fd, off, len);
  /* A file system that cannot reserve grows by ftruncate (file_grow): nothing to reserve. */
  if (e == EOPNOTSUPP || e == EINVAL || e == ENODEV) return PAR_OK;
  if (e)
    return par_error_errno(par_status_from_errno(e), e, "cannot reserve %llu bytes of the volume at %llu",
                           (unsigned long long)len, (unsigned long long)off);
  return PAR_OK;
}

int file_release(par_file *f, uint64_t off, uint64_t len) {
  assert(off + len <= f->size);
  if (f->is_blockdev) return EOPNOTSUPP;
  return fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) ? errno : 0;
}

void file_start_writeback(const par_file *f, uint64_t off, uint64_t len) {
  (void)sync_file_range(f->fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
}

void file_prefetch(const par_file *f, uint64_t off, uint64_t len) {
  fault_prefetch_seen(off, len);
  (void)posix_fadvise(f->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}

static _Thread_local uint64_t forgets_on_this_thread;

uint64_t file_forgets_on_this_thread(void) { return forgets_on_this_thread; }

void file_forget(const par_file *f, uint64_t off, uint64_t len) {
  forgets_on_this_thread++;
  (void)posix_fadvise(f->fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
}

void *file_buf_alloc(size_t len) {
  void *p = NULL;
  size_t n = (len + PAR_BLOCK - 1) / PAR_BLOCK * PAR_BLOCK;
  if (posix_memalign(&p, PAR_BLOCK, n) != 0) return NULL;
  memset(p, 0, n);
  return p;
}
