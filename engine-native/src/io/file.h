/* The volume file: positional I/O, direct I/O when the file system allows
 * it, growth by fallocate, and one read-only memory map of the whole volume
 * range through which device levels are read. */
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
  const uint8_t *map; /* PROT_READ map of [0, limit)                      */
} par_file;

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
int file_sync(par_file *f);
/* Grows the file to at least new_size (reserving the blocks). */
int file_grow(par_file *f, uint64_t new_size);

/* Asks the kernel to read [off, off + len) into the page cache without
 * waiting (the map is MADV_RANDOM: a reader that knows it will go through a
 * range in order asks for it ahead). Advisory: errors are ignored. */
void file_prefetch(const par_file *f, uint64_t off, uint64_t len);

/* An aligned buffer for direct I/O, zero-filled. */
void *file_buf_alloc(size_t len);

#endif
