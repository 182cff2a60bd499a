/*
 * par_rdbench — what range deletes cost and save (one thread, page-cache
 * mode: the volume is a file whose pages stay cached).
 *
 * Loads N keys ("rd" + 12 digits, in key order, 100-byte values), compacts
 * them into the last level, then:
 *  1. deletes a block of B keys with B par_delete calls and another block
 *     of B keys with one par_delete_range, and reports the wall time and
 *     WAL bytes of each, and the time of the par_flush that follows each;
 *  2. measures random gets (CPU ns per get, over all keys) and a full
 *     forward and reverse scan (CPU ns per entry) with no range tombstone,
 *     with R range tombstones of W keys each in L0, and with the same
 *     tombstones flushed into L1 above the data (before the merges that
 *     would drop them).
 *
 * Usage: par_rdbench [--keys N] [--block B] [--tombstones R] [--width W] [--dir DIR]
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "parallax/parallax.h"

static struct {
  uint64_t keys, block, tombstones, width;
  const char *dir;
} cfg = {2000000, 100000, 100, 10, "/tmp"};

static par_region *region;

static void die(const char *what, int rc) {
  fprintf(stderr, "par_rdbench: %s: %s (%s)\n", what, par_strerror(rc), par_last_error());
  exit(1);
}

static size_t make_key(uint64_t i, char *buf) { return (size_t)snprintf(buf, 32, "rd%012" PRIu64, i); }

static double clock_s(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t wal_bytes(void) {
  par_stats st;
  int rc = par_region_stats(region, &st);
  if (rc) die("stats", rc);
  return st.wal_bytes_appended;
}

/* Deletes keys [from, from + n) one by one or as one range; prints the cost. */
static void delete_block(uint64_t from, uint64_t n, int as_range) {
  char a[32], b[32];
  uint64_t wal0 = wal_bytes();
  double t0 = clock_s(CLOCK_MONOTONIC);
  int rc = PAR_OK;
  if (as_range) {
    size_t al = make_key(from, a), bl = make_key(from + n, b);
    rc = par_delete_range(region, a, al, b, bl, 0);
  } else {
    for (uint64_t i = from; i < from + n && !rc; i++) rc = par_delete(region, a, make_key(i, a), 0);
  }
  if (!rc) rc = par_sync(region);
  if (rc) die("delete", rc);
  double t1 = clock_s(CLOCK_MONOTONIC);
  uint64_t wal = wal_bytes() - wal0;
  if ((rc = par_flush(region))) die("flush", rc);
  double t2 = clock_s(CLOCK_MONOTONIC);
  printf("%-22s %8" PRIu64 " keys: %10.3f ms, %10" PRIu64 " WAL bytes; the flush after it %8.1f ms\n",
         as_range ? "1 par_delete_range" : "par_delete each", n, (t1 - t0) * 1e3, wal, (t2 - t1) * 1e3);
}

/* CPU ns per get over 200 000 random keys (best of 3). */
static double gets(void) {
  char k[32];
  uint8_t buf[256];
  double best = 1e30;
  for (int round = 0; round < 3; round++) {
    uint64_t x = 88172645463325252ull + (uint64_t)round;
    double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < 200000; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      size_t vl;
      int rc = par_get(region, NULL, k, make_key(x % cfg.keys, k), buf, sizeof buf, &vl);
      if (rc && rc != PAR_NOT_FOUND) die("get", rc);
    }
    double t = clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
    if (t < best) best = t;
  }
  return best * 1e9 / 200000;
}

/* CPU ns per entry of a full scan reading keys and values (best of 3). */
static double scan(int reverse, uint64_t *entries) {
  double best = 1e30;
  for (int round = 0; round < 3; round++) {
    par_scanner *s;
    int rc = par_scanner_open(region, NULL, &s);
    double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    if (!rc) rc = par_scanner_seek(s, NULL, 0, reverse ? PAR_SEEK_LAST : PAR_SEEK_FIRST);
    uint64_t n = 0;
    while (!rc && par_scanner_valid(s)) {
      const void *k, *v;
      size_t kl, vl;
      rc = par_scanner_key(s, &k, &kl);
      if (!rc) rc = par_scanner_value(s, &v, &vl);
      n++;
      if (!rc) rc = reverse ? par_scanner_prev(s) : par_scanner_next(s);
    }
    double t = clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
    par_scanner_close(s);
    if (rc) die("scan", rc);
    *entries = n;
    if (t / (double)n < best) best = t / (double)n;
  }
  return best * 1e9;
}

static void report(const char *when) {
  uint64_t n;
  double f = scan(0, &n), r = scan(1, &n);
  printf("%-40s get %7.1f ns, scan %6.1f ns/entry forward, %6.1f reverse (%" PRIu64 " entries)\n", when,
         gets(), f, r, n);
}

int main(int argc, char **argv) {
  static const struct option opts[] = {{"keys", required_argument, 0, 'n'},  {"block", required_argument, 0, 'b'},
                                       {"tombstones", required_argument, 0, 'r'}, {"width", required_argument, 0, 'w'},
                                       {"dir", required_argument, 0, 'd'},   {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'n': cfg.keys = strtoull(optarg, NULL, 10); break;
    case 'b': cfg.block = strtoull(optarg, NULL, 10); break;
    case 'r': cfg.tombstones = strtoull(optarg, NULL, 10); break;
    case 'w': cfg.width = strtoull(optarg, NULL, 10); break;
    case 'd': cfg.dir = optarg; break;
    default:
      fprintf(stderr, "usage: par_rdbench [--keys N] [--block B] [--tombstones R] [--width W] [--dir DIR]\n");
      return 2;
    }
  }
  if (cfg.keys < 4 * cfg.block || !cfg.tombstones || cfg.tombstones * cfg.width * 4 > cfg.keys) {
    fprintf(stderr, "par_rdbench: need keys >= 4 x block and keys >= 4 x tombstones x width\n");
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/par_rdbench.%d.px", cfg.dir, (int)getpid());
  par_options o;
  par_options_init(&o);
  o.l0_size = 4u << 20;
  par_volume *vol;
  int rc = par_open(path, &o, &vol);
  if (!rc) rc = par_region_open(vol, "rd", 1, &region);
  if (rc) die("open", rc);
  char k[32];
  uint8_t v[100];
  for (uint64_t i = 0; i < cfg.keys; i++) {
    memset(v, (int)(i & 0xff), sizeof v);
    if ((rc = par_put(region, k, make_key(i, k), v, sizeof v, 0))) die("put", rc);
  }
  if ((rc = par_compact(region))) die("compact", rc);
  par_stats st;
  par_region_stats(region, &st);
  printf("loaded %" PRIu64 " keys of 100 B, compacted into %u level(s)\n", cfg.keys, st.levels);
  delete_block(0, cfg.block, 0);
  delete_block(2 * cfg.block, cfg.block, 1);
  if ((rc = par_compact(region))) die("compact", rc);
  report("no range tombstone:");
  /* R tombstones of W keys, spread evenly over the keys past the blocks. */
  uint64_t from = 4 * cfg.block, step = (cfg.keys - from) / cfg.tombstones;
  for (uint64_t t = 0; t < cfg.tombstones; t++) {
    char a[32], b[32];
    size_t al = make_key(from + t * step, a), bl = make_key(from + t * step + cfg.width, b);
    if ((rc = par_delete_range(region, a, al, b, bl, 0))) die("delete_range", rc);
  }
  char when[64];
  snprintf(when, sizeof when, "%" PRIu64 " range tombstones in L0:", cfg.tombstones);
  report(when);
  if ((rc = par_flush(region))) die("flush", rc);
  par_region_stats(region, &st);
  snprintf(when, sizeof when, "%" PRIu64 " in L1 above L%u:", cfg.tombstones, st.levels);
  report(when);
  if ((rc = par_region_close(region)) || (rc = par_close(vol))) die("close", rc);
  unlink(path);
  return 0;
}
