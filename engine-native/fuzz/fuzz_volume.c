/* libFuzzer target: opens damaged copies of a small real volume and, when
 * the open succeeds, reads everything in it (gets and a scan of every
 * region). Nothing may crash or trip the sanitizers; errors are fine.
 *
 * The seed volume is built on the first run (a few hundred keys of all
 * three size classes, flushed and partly rewritten, so it has levels, a
 * large log and a WAL tail). Volumes are tens of MiB of mostly zeros, so
 * an input is not an image but a patch of it: 5-byte records (u32 position
 * among the volume's non-zero bytes, u8 xor mask), which keeps mutations
 * on the bytes that mean something. An empty input opens the volume as is. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <parallax/parallax.h>

#define BLOCK 4096u
#define NKEYS 600u

static char g_path[4096];
static uint64_t g_size;
static uint64_t *g_blocks; /* offsets of the seed's non-zero blocks */
static uint8_t *g_data;    /* their contents */
static size_t g_nblocks;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what) {
  fprintf(stderr, "fuzz_volume: %s: %s\n", what, par_last_error());
  abort();
}

static void build_seed(void) {
  par_options o;
  par_options_init(&o);
  o.l0_size = 64u << 10;
  par_volume *v;
  par_region *r;
  if (par_open(g_path, &o, &v) || par_region_open(v, "seed", 1, &r)) die("seed open");
  static uint8_t val[2000];
  char key[16];
  for (uint32_t round = 0; round < 2; round++) {
    for (uint32_t i = round; i < NKEYS; i += 1 + round * 4) {
      uint32_t len = i % 3 == 0 ? 10 : i % 3 == 1 ? 400 : 2000;
      memset(val, (int)(i + round), len);
      if (par_put(r, key, (size_t)snprintf(key, sizeof key, "k%05u", i), val, len, 0)) die("seed put");
    }
    if (!round && par_flush(r)) die("seed flush");
  }
  if (par_region_close(r) || par_close(v)) die("seed close");
}

/* Remembers the seed's non-zero blocks, to restore it after every run. */
static void snapshot_seed(void) {
  int fd = open(g_path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st)) die("seed stat");
  g_size = (uint64_t)st.st_size;
  static uint8_t b[BLOCK];
  for (uint64_t off = 0; off < g_size; off += BLOCK) {
    if (pread(fd, b, BLOCK, (off_t)off) != (ssize_t)BLOCK) die("seed read");
    size_t i = 0;
    while (i < BLOCK && !b[i]) i++;
    if (i == BLOCK) continue;
    g_blocks = realloc(g_blocks, (g_nblocks + 1) * sizeof *g_blocks);
    g_data = realloc(g_data, (g_nblocks + 1) * BLOCK);
    if (!g_blocks || !g_data) die("seed memory");
    g_blocks[g_nblocks] = off;
    memcpy(g_data + g_nblocks++ * BLOCK, b, BLOCK);
  }
  close(fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *base = getenv("PAR_FUZZ_DIR");
  snprintf(g_path, sizeof g_path, "%s/fuzz_volume.%d.px", base && *base ? base : "/tmp", (int)getpid());
  unlink(g_path);
  build_seed();
  snapshot_seed();
  return 0;
}

static void restore(int fd) {
  if (ftruncate(fd, 0) || ftruncate(fd, (off_t)g_size)) die("restore");
  for (size_t i = 0; i < g_nblocks; i++)
    if (pwrite(fd, g_data + i * BLOCK, BLOCK, (off_t)g_blocks[i]) != (ssize_t)BLOCK) die("restore write");
}

static void read_region(const char *name, void *arg) {
  par_region *r;
  if (par_region_open(arg, name, 0, &r)) return;
  static uint8_t buf[4096];
  char key[16];
  size_t len;
  for (uint32_t i = 0; i < NKEYS; i++)
    (void)par_get(r, NULL, key, (size_t)snprintf(key, sizeof key, "k%05u", i), buf, sizeof buf, &len);
  par_scanner *s;
  if (!par_scanner_open(r, NULL, &s)) {
    int rc = par_scanner_seek(s, NULL, 0, PAR_SEEK_FIRST);
    while (!rc && par_scanner_valid(s)) {
      const void *k, *v;
      size_t kl, vl;
      if (par_scanner_key(s, &k, &kl) || par_scanner_value(s, &v, &vl)) break;
      rc = par_scanner_next(s);
    }
    par_scanner_close(s);
  }
  par_region_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = open(g_path, O_RDWR);
  if (fd < 0) die("open work file");
  restore(fd);
  uint64_t bytes = (uint64_t)g_nblocks * BLOCK;
  for (size_t i = 0; i + 4 < size; i += 5) {
    uint32_t pos;
    memcpy(&pos, data + i, 4);
    uint64_t at = pos % bytes;
    uint64_t off = g_blocks[at / BLOCK] + at % BLOCK;
    uint8_t b = (uint8_t)(g_data[at] ^ (data[i + 4] ? data[i + 4] : 1));
    if (pwrite(fd, &b, 1, (off_t)off) != 1) die("patch");
  }
  close(fd);
  par_options o;
  par_options_init(&o);
  o.create_if_missing = 0;
  o.l0_size = 64u << 10;
  par_volume *v;
  if (par_open(g_path, &o, &v) == PAR_OK) {
    par_region_list(v, read_region, v);
    par_close(v);
  }
  return 0;
}
