/*
 * par_bench — load (and optionally read back) N key-value pairs with T
 * threads through the public C API, and report what it cost:
 *
 *   ops/s, I/O amplification = device bytes (read + written, /proc/self/io)
 *   over application bytes (keys + values put), CPU time per op and cycles
 *   per op (process CPU time x nominal clock), and the process's anonymous
 *   memory (RssAnon) as the dataset grows. "load+flush" adds the final
 *   L0 flush, which the load owes but does not wait for.
 *
 * Keys are 24 bytes ("user" + 20 digits of a hash of the sequence number,
 * so inserts arrive in random order, as in YCSB's hashed inserts). Values
 * are 9, 104 or 1004 bytes, picked per pair by the size mix (the Parallax
 * paper's S, M, L, SD, MD, LD), or all of --value-size bytes.
 *
 * Usage: par_bench [--keys N] [--threads T] [--mix S|M|L|SD|MD|LD]
 *                  [--placement hybrid|in-place|in-log] [--updates N]
 *                  [--dir DIR] [--l0-size BYTES] [--growth F]
 *                  [--report-every N] [--verify] [--scans R] [--ordered]
 *                  [--multi-get B] [--estimates R] [--in-l0] [--keep]
 *                  [--value-size BYTES] [--short-scans R]
 *
 * --updates N overwrites N random keys after the load (each with a new
 * value of a size drawn from the mix, so a key may change class) and then
 * reports the space amplification: volume bytes in use over the live
 * keys + values.
 *
 * --scans R scans the whole region R times forward (PAR_SEEK_FIRST, next)
 * and R times in reverse (PAR_SEEK_LAST, prev), one thread, reading every
 * key and value, and reports the best round of each in CPU ns per entry
 * (the thread's CPU time: steadier than wall time on a shared machine; with
 * the data in the page cache after the load, that is what it measures).
 * --short-scans R: R rounds of 100 000 scans of 50 entries each from a
 * random loaded key (YCSB's Run E, short of its inserts), one thread,
 * reading every key and value, and the best round in CPU ns per scan. With
 * --updates, the updates' L0 takes part in every scan's merge.
 * --ordered loads keys in key order (sequence numbers instead of their
 * hashes), so the large log holds values in key order too.
 *
 * --multi-get B looks up 200 000 random loaded keys, one thread, with
 * par_get one at a time and with par_multi_get B at a time (a snapshot per
 * batch, values copied out as par_get does), and reports CPU ns per key of
 * each (best of 3 rounds).
 *
 * --in-l0 skips the load's final flush: with an L0 larger than the load
 * (--l0-size), --multi-get, --scans and --estimates then read L0.
 *
 * --estimates R estimates R random key ranges with par_estimate_range
 * (1000 calls each, timed in the thread's CPU time) and counts each by a
 * scan, and reports the CPU time per call and the mean and worst error on
 * the ranges holding 1% of the keys or more.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "parallax/parallax.h"

typedef struct mix {
  const char *name;
  int small, medium, large; /* percent */
} mix;

static const mix MIXES[] = {
    {"S", 100, 0, 0},  {"M", 0, 100, 0},  {"L", 0, 0, 100},
    {"SD", 60, 20, 20}, {"MD", 20, 60, 20}, {"LD", 20, 20, 60},
};
static const uint32_t VALUE_SIZE[3] = {9, 104, 1004};
enum { MAX_VALUE_SIZE = 1 << 20 };

typedef struct config {
  uint64_t keys;
  int threads;
  const mix *mix;
  const char *dir;
  uint64_t l0_size;
  uint32_t growth;
  uint64_t report_every;
  int verify, keep, in_l0;
  int scans, short_scans, ordered;
  int multi_get;
  int estimates;
  uint32_t placement;
  uint64_t updates;
  uint32_t value_size; /* 0: drawn from the mix */
} config;

static config cfg = {.keys = 1000000, .threads = 2, .mix = &MIXES[0], .dir = NULL,
                     .l0_size = 64ull << 20, .growth = 8, .report_every = 0};

static par_region *region;
/* The live size of every key, for space amplification after updates. */
static uint32_t *live_size;
static atomic_uint_fast64_t done_ops, app_bytes;

static uint64_t mix64(uint64_t x) { /* splitmix64 finalizer */
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static int make_key(uint64_t i, char *buf) {
  uint64_t id = cfg.ordered ? i : mix64(i) % 10000000000000000000ull;
  return snprintf(buf, 32, "user%020" PRIu64, id);
}

/* The value size of pair i (or of update i when its sequence number is
 * past cfg.keys), drawn from the mix by a hash of it. */
static uint32_t value_size(uint64_t i) {
  if (cfg.value_size) return cfg.value_size;
  uint64_t p = mix64(i ^ 0x5bd1e995) % 100;
  int c = p < (uint64_t)cfg.mix->small ? 0 : p < (uint64_t)(cfg.mix->small + cfg.mix->medium) ? 1 : 2;
  return VALUE_SIZE[c];
}

static void fill_value(uint64_t i, uint8_t *v, uint32_t len) {
  uint64_t x = mix64(i + 1);
  for (uint32_t k = 0; k < len; k++) {
    v[k] = (uint8_t)('a' + (x % 26));
    x = x * 6364136223846793005ull + 1442695040888963407ull;
  }
}

static void die(const char *what, int rc) {
  fprintf(stderr, "par_bench: %s: %s (%s)\n", what, par_strerror(rc), par_last_error());
  exit(1);
}

/* A buffer for the largest value this run writes (free it). */
static uint8_t *value_buffer(void) {
  uint8_t *b = malloc(cfg.value_size > 1024 ? cfg.value_size : 1024);
  if (!b) die("memory", PAR_ENOMEM);
  return b;
}

typedef struct io_counters {
  uint64_t read_bytes, write_bytes;
} io_counters;

static io_counters read_io(void) {
  io_counters c = {0, 0};
  FILE *f = fopen("/proc/self/io", "r");
  if (!f) return c;
  char line[128];
  while (fgets(line, sizeof line, f)) {
    unsigned long long v;
    if (sscanf(line, "read_bytes: %llu", &v) == 1) c.read_bytes = v;
    if (sscanf(line, "write_bytes: %llu", &v) == 1) c.write_bytes = v;
  }
  fclose(f);
  return c;
}

static uint64_t rss_anon_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[128];
  unsigned long long v = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "RssAnon: %llu", &v) == 1) break;
  fclose(f);
  return v;
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_mhz(void) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  double mhz = 0;
  if (!f) return 0;
  char line[256];
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "cpu MHz : %lf", &mhz) == 1) break;
  fclose(f);
  return mhz;
}

static void *load_thread(void *arg) {
  int t = (int)(intptr_t)arg;
  char key[32];
  uint8_t *value = value_buffer();
  for (uint64_t i = (uint64_t)t; i < cfg.keys; i += (uint64_t)cfg.threads) {
    int kl = make_key(i, key);
    uint32_t vl = value_size(i);
    fill_value(i, value, vl);
    int rc = par_put(region, key, (size_t)kl, value, vl, 0);
    if (rc) die("put", rc);
    live_size[i] = (uint32_t)kl + vl;
    atomic_fetch_add(&app_bytes, (uint64_t)kl + vl);
    atomic_fetch_add(&done_ops, 1);
  }
  free(value);
  return NULL;
}

static void *update_thread(void *arg) {
  int t = (int)(intptr_t)arg;
  char key[32];
  uint8_t *value = value_buffer();
  for (uint64_t u = (uint64_t)t; u < cfg.updates; u += (uint64_t)cfg.threads) {
    uint64_t i = mix64(u + 0x9e3779b9) % cfg.keys, seq = cfg.keys + u;
    int kl = make_key(i, key);
    uint32_t vl = value_size(seq);
    fill_value(seq, value, vl);
    int rc = par_put(region, key, (size_t)kl, value, vl, 0);
    if (rc) die("update", rc);
    live_size[i] = (uint32_t)kl + vl; /* threads update disjoint u, possibly one key: close enough */
    atomic_fetch_add(&app_bytes, (uint64_t)kl + vl);
    atomic_fetch_add(&done_ops, 1);
  }
  free(value);
  return NULL;
}

static void *verify_thread(void *arg) {
  int t = (int)(intptr_t)arg;
  char key[32];
  uint8_t *value = value_buffer(), *expect = value_buffer();
  for (uint64_t i = (uint64_t)t; i < cfg.keys; i += (uint64_t)cfg.threads) {
    int kl = make_key(i, key);
    size_t len;
    int rc = par_get(region, NULL, key, (size_t)kl, value, value_size(i), &len);
    uint32_t vl = value_size(i);
    fill_value(i, expect, vl);
    if (rc != PAR_OK || len != vl || memcmp(value, expect, vl) != 0) {
      /* Two sequence numbers may hash to one key: the later write wins. */
      if (rc == PAR_OK) continue;
      fprintf(stderr, "par_bench: verify: key %s: %s\n", key, par_strerror(rc));
      exit(1);
    }
    atomic_fetch_add(&done_ops, 1);
  }
  free(value);
  free(expect);
  return NULL;
}

static double thread_cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* One pass over the whole region, forward or reverse, reading every key
 * and value; returns the entries seen and adds their bytes to *bytes. */
static uint64_t full_scan(int reverse, uint64_t *bytes) {
  par_scanner *s;
  int rc = par_scanner_open(region, NULL, &s);
  if (!rc) rc = par_scanner_seek(s, NULL, 0, reverse ? PAR_SEEK_LAST : PAR_SEEK_FIRST);
  uint64_t n = 0;
  while (!rc && par_scanner_valid(s)) {
    const void *k, *v;
    size_t kl, vl;
    rc = par_scanner_key(s, &k, &kl);
    if (!rc) rc = par_scanner_value(s, &v, &vl);
    if (rc) break;
    *bytes += kl + vl + ((const uint8_t *)k)[kl - 1] + (vl ? ((const uint8_t *)v)[vl - 1] : 0);
    n++;
    rc = reverse ? par_scanner_prev(s) : par_scanner_next(s);
  }
  if (rc) die(reverse ? "reverse scan" : "scan", rc);
  par_scanner_close(s);
  return n;
}

/* cfg.scans rounds of each direction; the best round of each is printed. */
static void run_scans(void) {
  double best[2] = {0, 0};
  uint64_t n[2] = {0, 0}, sink = 0;
  for (int round = 0; round < cfg.scans; round++)
    for (int reverse = 0; reverse < 2; reverse++) {
      double t0 = thread_cpu_seconds();
      n[reverse] = full_scan(reverse, &sink);
      double t = thread_cpu_seconds() - t0;
      if (round == 0 || t < best[reverse]) best[reverse] = t;
    }
  if (n[0] != n[1]) {
    fprintf(stderr, "par_bench: forward scan saw %" PRIu64 " entries, reverse %" PRIu64 "\n", n[0], n[1]);
    exit(1);
  }
  printf("scan: %" PRIu64 " entries, best of %d: forward %.1f CPU ns/entry, reverse %.1f (reverse/forward "
         "%.2f) [%" PRIu64 "]\n",
         n[0], cfg.scans, best[0] * 1e9 / (double)n[0], best[1] * 1e9 / (double)n[1], best[1] / best[0],
         sink % 10);
}

/* n scans of len entries from random loaded keys; returns the thread's CPU
 * seconds. */
static double short_scans(uint64_t n, int len, uint64_t seed, uint64_t *sink) {
  char key[32];
  double t0 = thread_cpu_seconds();
  for (uint64_t i = 0; i < n; i++) {
    int kl = make_key(mix64(seed + i) % cfg.keys, key);
    par_scanner *s;
    int rc = par_scanner_open(region, NULL, &s);
    if (!rc) rc = par_scanner_set_readahead(s, (uint32_t)len);
    if (!rc) rc = par_scanner_seek(s, key, (size_t)kl, PAR_SEEK_GE);
    for (int k = 0; !rc && k < len && par_scanner_valid(s); k++) {
      const void *kp, *vp;
      size_t klen, vlen;
      rc = par_scanner_key(s, &kp, &klen);
      if (!rc) rc = par_scanner_value(s, &vp, &vlen);
      if (!rc) *sink += ((const uint8_t *)kp)[klen - 1] + (vlen ? ((const uint8_t *)vp)[vlen - 1] : 0);
      if (!rc) rc = par_scanner_next(s);
    }
    if (rc) die("short scan", rc);
    par_scanner_close(s);
  }
  return thread_cpu_seconds() - t0;
}

static void run_short_scans(void) {
  const uint64_t n = 100000;
  const int len = 50;
  double best = 0;
  uint64_t sink = 0;
  for (int round = 0; round < cfg.short_scans; round++) {
    double t = short_scans(n, len, (uint64_t)round << 40, &sink);
    if (round == 0 || t < best) best = t;
  }
  printf("short scans: %" PRIu64 " scans of %d entries from random keys, best of %d: %.0f CPU ns/scan [%" PRIu64
         "]\n", n, len, cfg.short_scans, best * 1e9 / (double)n, sink % 10);
}

/* Lookups of n random loaded keys, one at a time (batch 0) or batch at a
 * time with par_multi_get; returns the thread's CPU seconds. */
static double lookups(uint64_t n, int batch, uint64_t seed) {
  enum { MAX_BATCH = 4096 };
  static char keys[MAX_BATCH][32];
  static const void *kp[MAX_BATCH], *vals[MAX_BATCH];
  static size_t kl[MAX_BATCH], vl[MAX_BATCH];
  static int st[MAX_BATCH];
  static uint8_t buf[1024];
  uint64_t found = 0;
  double t0 = thread_cpu_seconds();
  for (uint64_t done = 0; done < n;) {
    int b = batch ? batch : 1;
    for (int i = 0; i < b; i++) {
      kl[i] = (size_t)make_key(mix64(seed + done + (uint64_t)i) % cfg.keys, keys[i]);
      kp[i] = keys[i];
    }
    if (!batch) {
      size_t len;
      int rc = par_get(region, NULL, keys[0], kl[0], buf, sizeof buf, &len);
      if (rc < 0) die("get", rc);
      found += rc == PAR_OK;
    } else {
      par_snapshot *snap;
      int rc = par_snapshot_create(region, &snap);
      if (!rc) rc = par_multi_get(snap, (size_t)b, kp, kl, vals, vl, st);
      if (rc) die("multi-get", rc);
      for (int i = 0; i < b; i++) {
        if (st[i] < 0) die("multi-get key", st[i]);
        if (st[i] == PAR_OK) memcpy(buf, vals[i], vl[i] < sizeof buf ? vl[i] : sizeof buf);
        found += st[i] == PAR_OK;
      }
      par_snapshot_release(snap);
    }
    done += (uint64_t)b;
  }
  double t = thread_cpu_seconds() - t0;
  if (found < n / 2) {
    fprintf(stderr, "par_bench: only %" PRIu64 " of %" PRIu64 " lookups found their key\n", found, n);
    exit(1);
  }
  return t;
}

static void run_multi_get(void) {
  const uint64_t n = 200000;
  double best[2] = {0, 0};
  for (int round = 0; round < 3; round++)
    for (int multi = 0; multi < 2; multi++) {
      double t = lookups(n, multi ? cfg.multi_get : 0, (uint64_t)round << 32);
      if (round == 0 || t < best[multi]) best[multi] = t;
    }
  printf("lookups: %" PRIu64 " random keys, best of 3: par_get %.1f CPU ns/key, par_multi_get of %d %.1f CPU "
         "ns/key (%.2fx)\n",
         n, best[0] * 1e9 / (double)n, cfg.multi_get, best[1] * 1e9 / (double)n, best[0] / best[1]);
}

/* Keys in [a, b) by a scan (keys only: values are not read). */
static uint64_t count_range(const char *a, const char *b, size_t len) {
  par_scanner *s;
  int rc = par_scanner_open(region, NULL, &s);
  if (!rc) rc = par_scanner_seek(s, a, len, PAR_SEEK_GE);
  uint64_t n = 0;
  while (!rc && par_scanner_valid(s)) {
    const void *k;
    size_t kl;
    rc = par_scanner_key(s, &k, &kl);
    if (rc || memcmp(k, b, kl < len ? kl : len) >= 0) break; /* keys are all len bytes */
    n++;
    rc = par_scanner_next(s);
  }
  if (rc) die("scan", rc);
  par_scanner_close(s);
  return n;
}

static void run_estimates(void) {
  enum { CALLS = 1000 };
  double cpu = 0, err_sum = 0, worst = 0;
  int counted = 0;
  for (int i = 0; i < cfg.estimates; i++) {
    char a[32], b[32];
    uint64_t x = mix64(0xe57 + 2 * (uint64_t)i) % 10000000000000000000ull;
    uint64_t y = mix64(0xe58 + 2 * (uint64_t)i) % 10000000000000000000ull;
    int len = snprintf(a, sizeof a, "user%020" PRIu64, x < y ? x : y);
    snprintf(b, sizeof b, "user%020" PRIu64, x < y ? y : x);
    par_range_estimate e;
    double t0 = thread_cpu_seconds();
    for (int k = 0; k < CALLS; k++) {
      int rc = par_estimate_range(region, a, (size_t)len, b, (size_t)len, &e);
      if (rc) die("estimate", rc);
    }
    cpu += thread_cpu_seconds() - t0;
    uint64_t exact = count_range(a, b, (size_t)len);
    if (exact < cfg.keys / 100) continue;
    double err = ((double)e.entries - (double)exact) / (double)exact;
    if (err < 0) err = -err;
    err_sum += err;
    if (err > worst) worst = err;
    counted++;
  }
  printf("estimates: %d ranges, %.2f CPU us per par_estimate_range; %d ranges of 1%% of the keys or more: "
         "mean error %.2f%%, worst %.2f%%\n",
         cfg.estimates, cpu * 1e6 / ((double)cfg.estimates * CALLS), counted,
         counted ? 100 * err_sum / counted : 0.0, 100 * worst);
}

/* Runs fn on cfg.threads threads for ops operations, printing progress. */
static void run_phase(const char *name, void *(*fn)(void *), uint64_t total) {
  io_counters io0 = read_io();
  double t0 = now(), c0 = cpu_seconds();
  atomic_store(&done_ops, 0);
  atomic_store(&app_bytes, 0);
  pthread_t th[64];
  for (int t = 0; t < cfg.threads; t++) pthread_create(&th[t], NULL, fn, (void *)(intptr_t)t);
  uint64_t next_report = cfg.report_every;
  for (;;) {
    uint64_t d = atomic_load(&done_ops);
    if (next_report && d >= next_report) {
      printf("  %-6s %12" PRIu64 " ops  %10.0f ops/s  RssAnon %7.1f MiB\n", name, d, d / (now() - t0),
             rss_anon_kb() / 1024.0);
      fflush(stdout);
      next_report += cfg.report_every;
      continue;
    }
    if (d >= total) break;
    usleep(20000);
  }
  for (int t = 0; t < cfg.threads; t++) pthread_join(th[t], NULL);
  double secs = now() - t0, cpu = cpu_seconds() - c0;
  io_counters io1 = read_io();
  uint64_t ops = atomic_load(&done_ops), bytes = atomic_load(&app_bytes);
  uint64_t dev = (io1.read_bytes - io0.read_bytes) + (io1.write_bytes - io0.write_bytes);
  double mhz = cpu_mhz();
  printf("%s: %" PRIu64 " ops in %.2f s = %.0f ops/s; CPU %.2f s = %.2f us/op", name, ops, secs, ops / secs,
         cpu, cpu * 1e6 / (double)ops);
  if (mhz > 0) printf(" (~%.0f cycles/op at %.0f MHz)", cpu * mhz * 1e6 / (double)ops, mhz);
  printf("\n");
  if (bytes)
    printf("%s: device read %.1f MiB + written %.1f MiB over %.1f MiB of keys+values: I/O amplification %.2f\n",
           name, (io1.read_bytes - io0.read_bytes) / 1048576.0, (io1.write_bytes - io0.write_bytes) / 1048576.0,
           bytes / 1048576.0, (double)dev / (double)bytes);
  printf("%s: RssAnon %.1f MiB\n", name, rss_anon_kb() / 1024.0);
}

static void usage(void) {
  fprintf(stderr,
          "usage: par_bench [--keys N] [--threads T] [--mix S|M|L|SD|MD|LD] [--dir DIR]\n"
          "                 [--placement hybrid|in-place|in-log] [--updates N]\n"
          "                 [--l0-size BYTES] [--growth F] [--report-every N] [--verify] [--scans R]\n"
          "                 [--ordered] [--multi-get B] [--estimates R] [--in-l0] [--keep]\n"
          "                 [--value-size BYTES] [--short-scans R]\n");
  exit(2);
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"keys", required_argument, 0, 'n'},    {"threads", required_argument, 0, 't'},
      {"mix", required_argument, 0, 'm'},     {"dir", required_argument, 0, 'd'},
      {"l0-size", required_argument, 0, 'l'}, {"growth", required_argument, 0, 'g'},
      {"report-every", required_argument, 0, 'r'}, {"verify", no_argument, 0, 'v'},
      {"keep", no_argument, 0, 'k'},          {"help", no_argument, 0, 'h'},
      {"placement", required_argument, 0, 'p'}, {"updates", required_argument, 0, 'u'},
      {"scans", required_argument, 0, 's'},   {"ordered", no_argument, 0, 'o'},
      {"multi-get", required_argument, 0, 'M'}, {"estimates", required_argument, 0, 'E'},
      {"in-l0", no_argument, 0, 'z'},         {"value-size", required_argument, 0, 'V'},
      {"short-scans", required_argument, 0, 'S'},
      {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'n': cfg.keys = strtoull(optarg, NULL, 10); break;
    case 't': cfg.threads = atoi(optarg); break;
    case 'm':
      cfg.mix = NULL;
      for (size_t i = 0; i < sizeof MIXES / sizeof *MIXES; i++)
        if (strcasecmp(optarg, MIXES[i].name) == 0) cfg.mix = &MIXES[i];
      if (!cfg.mix) usage();
      break;
    case 'd': cfg.dir = optarg; break;
    case 'l': cfg.l0_size = strtoull(optarg, NULL, 10); break;
    case 'g': cfg.growth = (uint32_t)atoi(optarg); break;
    case 'r': cfg.report_every = strtoull(optarg, NULL, 10); break;
    case 'v': cfg.verify = 1; break;
    case 'k': cfg.keep = 1; break;
    case 'p':
      if (!strcasecmp(optarg, "hybrid")) cfg.placement = PAR_PLACEMENT_HYBRID;
      else if (!strcasecmp(optarg, "in-place")) cfg.placement = PAR_PLACEMENT_IN_PLACE;
      else if (!strcasecmp(optarg, "in-log")) cfg.placement = PAR_PLACEMENT_IN_LOG;
      else usage();
      break;
    case 'u': cfg.updates = strtoull(optarg, NULL, 10); break;
    case 's': cfg.scans = atoi(optarg); break;
    case 'S': cfg.short_scans = atoi(optarg); break;
    case 'o': cfg.ordered = 1; break;
    case 'M': cfg.multi_get = atoi(optarg); break;
    case 'E': cfg.estimates = atoi(optarg); break;
    case 'z': cfg.in_l0 = 1; break;
    case 'V': cfg.value_size = (uint32_t)strtoul(optarg, NULL, 10); break;
    default: usage();
    }
  }
  if (!cfg.keys || cfg.threads < 1 || cfg.threads > 64 || cfg.multi_get < 0 || cfg.multi_get > 4096 ||
      cfg.estimates < 0 || cfg.value_size > MAX_VALUE_SIZE)
    usage();
  if (!cfg.report_every) cfg.report_every = cfg.keys >= 10 ? cfg.keys / 10 : 1;

  char dir[4096], path[4200];
  if (cfg.dir) snprintf(dir, sizeof dir, "%s", cfg.dir);
  else snprintf(dir, sizeof dir, "par_bench.data");
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    perror(dir);
    return 1;
  }
  snprintf(path, sizeof path, "%s/bench.vol", dir);
  unlink(path);

  par_options o;
  par_options_init(&o);
  o.l0_size = cfg.l0_size;
  o.growth_factor = cfg.growth;
  o.placement = cfg.placement;
  live_size = calloc(cfg.keys, sizeof *live_size);
  if (!live_size) die("memory", PAR_ENOMEM);
  par_volume *vol;
  int rc = par_open(path, &o, &vol);
  if (rc) die("open", rc);
  rc = par_region_open(vol, "bench", 1, &region);
  if (rc) die("region", rc);
  static const char *placements[] = {"hybrid", "in-place", "in-log"};
  char sizes[32];
  if (cfg.value_size) snprintf(sizes, sizeof sizes, "values %u B", cfg.value_size);
  else snprintf(sizes, sizeof sizes, "mix %s", cfg.mix->name);
  printf("par_bench: %" PRIu64 " pairs, %s, placement %s, %d threads, L0 %" PRIu64
         " MiB, growth %u, volume %s\n",
         cfg.keys, sizes, placements[cfg.placement], cfg.threads, cfg.l0_size >> 20, cfg.growth, path);
  io_counters io0 = read_io();
  double t0 = now();
  run_phase("load", load_thread, cfg.keys);
  rc = par_sync(region);
  if (rc) die("sync", rc);
  /* What the load still owes: writing its last L0 into the levels. */
  rc = cfg.in_l0 ? PAR_OK : par_flush(region);
  if (rc) die("flush", rc);
  io_counters io1 = read_io();
  uint64_t loaded = atomic_load(&app_bytes);
  printf("load+flush: %.2f s; device read %.1f MiB + written %.1f MiB: I/O amplification %.2f\n", now() - t0,
         (io1.read_bytes - io0.read_bytes) / 1048576.0, (io1.write_bytes - io0.write_bytes) / 1048576.0,
         (double)(io1.read_bytes - io0.read_bytes + io1.write_bytes - io0.write_bytes) / (double)loaded);

  if (cfg.updates) {
    run_phase("update", update_thread, cfg.updates);
    rc = par_flush(region);
    if (rc) die("flush", rc);
    uint64_t live = 0;
    for (uint64_t i = 0; i < cfg.keys; i++) live += live_size[i];
    par_volume_stats vs;
    par_volume_stats_get(vol, &vs);
    double held = (double)vs.volume_bytes - (double)vs.segments_released * PAR_SEGMENT_SIZE;
    printf("space: %.1f MiB in use for %.1f MiB of live keys+values: space amplification %.2f; "
           "the file holds %.1f MiB (%.2f), %" PRIu64 " free segments released\n",
           vs.segments_used * (double)PAR_SEGMENT_SIZE / 1048576.0, live / 1048576.0,
           vs.segments_used * (double)PAR_SEGMENT_SIZE / (double)live, held / 1048576.0, held / (double)live,
           vs.segments_released);
  }
  par_stats st;
  par_region_stats(region, &st);
  printf("levels (live MiB/entries/segments):");
  for (uint32_t i = 1; i <= st.levels; i++)
    printf(" L%u=%.1f/%" PRIu64 "/%" PRIu64, i, st.level[i].live_bytes / 1048576.0, st.level[i].entries,
           st.level[i].segments);
  printf("; compactions %" PRIu64 ", write stalls %" PRIu64 ", WAL %.1f MiB appended, %" PRIu64 " segments held; "
         "medium logs %" PRIu64 " segments\n", st.compactions, st.write_stalls, st.wal_bytes_appended / 1048576.0,
         st.wal_segments, st.medium_log_segments);
  printf("classes: %" PRIu64 " small, %" PRIu64 " medium, %" PRIu64 " large puts; large log %.1f MiB appended, "
         "%" PRIu64 " segments; GC %" PRIu64 " runs, %.1f MiB relocated, %" PRIu64 " segments freed\n",
         st.small_puts, st.medium_puts, st.large_puts, st.large_log_bytes_appended / 1048576.0,
         st.large_log_segments, st.gc_runs, st.gc_bytes_relocated / 1048576.0, st.gc_segments_freed);
  printf("leaf bytes written by class (small/medium/large, MiB):");
  for (uint32_t i = 1; i <= st.levels; i++)
    printf(" L%u=%.1f/%.1f/%.1f", i, st.level_small_bytes[i] / 1048576.0, st.level_medium_bytes[i] / 1048576.0,
           st.level_large_bytes[i] / 1048576.0);
  printf("; medium log %.1f MiB written\n", st.medium_log_bytes_written / 1048576.0);
  /* Leaf fill: how much of the nodes merges wrote is entries (slots
   * included); the rest is node headers, the gaps left in full leaves and
   * the index nodes above them. */
  printf("entries in the nodes merges wrote:");
  for (uint32_t i = 1; i <= st.levels; i++) {
    uint64_t w = st.level[i].compaction_bytes_written;
    uint64_t e = st.level_small_bytes[i] + st.level_medium_bytes[i] + st.level_large_bytes[i];
    printf(" L%u=%.1f%% of %.1f MiB", i, w ? 100.0 * (double)e / (double)w : 0.0, w / 1048576.0);
  }
  printf("\n");
  if (cfg.verify && !cfg.updates) run_phase("verify", verify_thread, cfg.keys);
  if (cfg.scans > 0) run_scans();
  if (cfg.short_scans > 0) run_short_scans();
  if (cfg.multi_get) run_multi_get();
  if (cfg.estimates) run_estimates();

  rc = par_region_close(region);
  if (!rc) rc = par_close(vol);
  if (rc) die("close", rc);
  if (!cfg.keep) {
    unlink(path);
    rmdir(dir);
  }
  free(live_size);
  return 0;
}
