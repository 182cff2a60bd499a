/* The volume file: positional I/O, direct I/O when the file system allows
 * it, growth by fallocate, and a read-only memory map of the volume through
 * which device levels are read.
 *
 * The map covers what the file holds, not the largest volume it may
 * become: at 512 GiB of address space per volume a process could open only
 * about 250. It starts at the file's length (at least PAR_MAP_MIN) and, when
 * the file grows past it, a new map of the whole file, at least twice as
 * large, replaces it. Readers hold pointers into the map they loaded, so
 * the maps it replaced stay until the file is closed (all of them together
 * are less than the current one, the pages are shared). Reads through any
 * map may fault (io/mapguard.h): they run inside a guard. */
#ifndef PAR_IO_FILE_H
#define PAR_IO_FILE_H

#include <stddef.h>
#include <stdint.h>

#define PAR_BLOCK 4096u /* direct I/O alignment: offsets, lengths, buffers */

typedef struct par_file {
  int fd;          /* buffered descriptor                                */
  int dfd;         /* O_DIRECT descriptor, or fd when direct I/O is off  */
  int is_blockdev; /* a block device cannot grow                         */
  uint64_t size;   /* current length in bytes                            */
  uint64_t limit;  /* largest length the volume may reach                */
  const uint8_t *map; /* PROT_READ map of [0, mapped): read with file_map  */
  uint64_t mapped;    /* length of map; only file_grow enlarges it         */
  uint32_t nold;      /* maps replaced by larger ones, unmapped at close    */
  struct {
    const uint8_t *base;
    uint64_t len;
  } old[48];
} par_file;

#define PAR_MAP_MIN (64ull << 20)

/* The current map: it covers every offset below a file size the caller
 * loaded (acquire) before, or learned from anything published after the
 * growth (a segment number from the allocator or the catalog). */
static inline const uint8_t *file_map(const par_file *f) {
  return __atomic_load_n(&f->map, __ATOMIC_ACQUIRE);
}

/* Opens (creating when create != 0) and locks path. limit 0 = no limit
 * beyond the engine's own maximum. */
int file_open(par_file *f, const char *path, int create, int direct, uint64_t limit);
void file_close(par_file *f);

/* Whole-buffer pread/pwrite; a short transfer is retried, then reported. */
int file_read(par_file *f, void *buf, size_t len, uint64_t off);
/* A read through the page cache (never direct I/O), whatever the alignment. */
int file_read_cached(const par_file *f, void *buf, size_t len, uint64_t off);
/* Uses the direct descriptor when buf, len and off are block aligned. */
int file_write(par_file *f, const void *buf, size_t len, uint64_t off);
/* A write through the page cache (never direct I/O): for bytes about to be
 * read back, which then come from memory. */
int file_write_cached(par_file *f, const void *buf, size_t len, uint64_t off);
int file_sync(par_file *f);
/* The file_sync calls made on the calling thread so far: tests check with
 * it that a path never waits on an fdatasync itself. */
uint64_t file_syncs_on_this_thread(void);
/* Grows the file to at least new_size (reserving the blocks), and the map
 * with it. Callers serialise growth (the segment allocator's lock). */
int file_grow(par_file *f, uint64_t new_size);

/* Reserves the blocks of [off, off + len), inside the file, again after
 * file_release gave them back: a full file system fails here (PAR_ENOSPC),
 * not in a later write. A block device, or a file system that cannot
 * reserve (file_grow falls back to ftruncate there), succeeds at once. */
int file_reserve(par_file *f, uint64_t off, uint64_t len);
/* Gives the blocks of [off, off + len), inside the file, back to the file
 * system (a hole: reads return zeros, the size stays). 0 or the errno
 * (EOPNOTSUPP: the file system or a block device cannot); advisory, so it
 * sets no error message. */
int file_release(par_file *f, uint64_t off, uint64_t len);

/* Starts writing [off, off + len) back from the page cache without waiting
 * (sync_file_range WRITE). A writer through the page cache calls it after
 * each large write, so that its dirty pages do not pile up for the next
 * fdatasync of the volume (the WAL's, every durability interval, among
 * them) to write. Advisory: errors are ignored (the fdatasync reports them). */
void file_start_writeback(const par_file *f, uint64_t off, uint64_t len);

/* Asks the kernel to read [off, off + len) into the page cache without
 * waiting (the map is MADV_RANDOM: a reader that knows it will go through a
 * range in order asks for it ahead). Advisory: errors are ignored. */
void file_prefetch(const par_file *f, uint64_t off, uint64_t len);

/* Drops the pages of [off, off + len) from the page cache (POSIX_FADV_DONTNEED;
 * pages still mapped or dirty stay). For a freed segment: nothing reads
 * its pages any more, yet they would stay cached as long as pages in use
 * (ahead of the pages a merge has just written, which the LRU takes first),
 * and under a memory limit push those out. Advisory: errors are ignored. */
void file_forget(const par_file *f, uint64_t off, uint64_t len);
/* file_forget calls the calling thread has made (tests: which thread pays
 * for a drop, about 0.1 ms per cached 2 MiB). */
uint64_t file_forgets_on_this_thread(void);

/* An aligned buffer for direct I/O, zero-filled. */
void *file_buf_alloc(size_t len);

#endif
