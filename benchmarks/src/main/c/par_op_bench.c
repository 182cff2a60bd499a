/*
 * par_op_bench: the C-level cost of one par_get / par_put / par_exists, the baseline for the
 * JMH benchmarks (io.parallaxkv.bench): the same workload, without a JVM. For each value size:
 * a fresh volume with the default options, N pairs of 20-byte keys ("user:%015d") preloaded,
 * then single-thread gets (into a caller buffer) and overwrites of keys picked uniformly at
 * random with the same xorshift32 sequence, and par_exists of one absent key. Each operation:
 * WARMUP seconds of warm-up, then ITERS timed runs of SECS seconds; prints the mean ns/op and the
 * range over the runs. Build and run: benchmarks/native-baseline.sh.
 *
 * usage: par_op_bench DIR [N] [SECS] [ITERS] [WARMUP] [SIZES...]
 */
#define _POSIX_C_SOURCE 200809L
#include <parallax/parallax.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEY_SIZE 20

static uint32_t x = 0x9E3779B9u;
static uint32_t n_keys;
static char *keys;
static char absent[KEY_SIZE + 1];
static char *value;
static char *out;
static size_t out_cap;
static par_region *reg;
static volatile int sink;

static inline uint32_t next_index(void) {
  uint32_t v = x;
  v ^= v << 13;
  v ^= v >> 17;
  v ^= v << 5;
  x = v;
  return (uint32_t)(((uint64_t)v * n_keys) >> 32);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what, int rc) {
  fprintf(stderr, "par_op_bench: %s: %s (%s)\n", what, par_strerror(rc), par_last_error());
  exit(1);
}

enum op { OP_GET, OP_PUT, OP_EXISTS };
static size_t vsize;

static void run_batch(enum op op, int count) {
  size_t vl;
  int rc = 0;
  for (int i = 0; i < count; i++) {
    switch (op) {
      case OP_GET:
        rc = par_get(reg, NULL, keys + (size_t)next_index() * KEY_SIZE, KEY_SIZE, out, out_cap, &vl);
        if (rc != PAR_OK) die("par_get", rc);
        break;
      case OP_PUT:
        rc = par_put(reg, keys + (size_t)next_index() * KEY_SIZE, KEY_SIZE, value, vsize, 0);
        if (rc != PAR_OK) die("par_put", rc);
        break;
      case OP_EXISTS:
        rc = par_exists(reg, NULL, absent, KEY_SIZE);
        if (rc != PAR_NOT_FOUND) die("par_exists", rc);
        break;
    }
  }
  sink += rc;
}

/* ns/op over one run of at least secs seconds. */
static double timed(enum op op, double secs) {
  long ops = 0;
  double t0 = now(), t;
  do {
    run_batch(op, 1000);
    ops += 1000;
    t = now();
  } while (t - t0 < secs);
  return (t - t0) * 1e9 / (double)ops;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: par_op_bench DIR [N] [SECS] [ITERS] [WARMUP] [SIZES...]\n");
    return 2;
  }
  const char *dir = argv[1];
  n_keys = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 100000;
  double secs = argc > 3 ? atof(argv[3]) : 3.0;
  int iters = argc > 4 ? atoi(argv[4]) : 3;
  double warm = argc > 5 ? atof(argv[5]) : 4.0;
  size_t default_sizes[] = {16, 100, 1024, 4096};
  int nsizes = argc > 6 ? argc - 6 : 4;

  keys = malloc((size_t)n_keys * KEY_SIZE + 1);
  for (uint32_t i = 0; i < n_keys; i++) {
    char k[KEY_SIZE + 1];
    snprintf(k, sizeof k, "user:%015u", i);
    memcpy(keys + (size_t)i * KEY_SIZE, k, KEY_SIZE);
  }
  snprintf(absent, sizeof absent, "zzzz:%015u", 7u);

  printf("%-8s %-7s %10s %10s %10s\n", "op", "value", "ns/op", "min", "max");
  for (int s = 0; s < nsizes; s++) {
    vsize = argc > 6 ? (size_t)strtoul(argv[6 + s], NULL, 10) : default_sizes[s];
    value = malloc(vsize ? vsize : 1);
    srand(42);
    for (size_t i = 0; i < vsize; i++) value[i] = (char)rand();
    out_cap = vsize > 4096 ? vsize : 4096;
    out = malloc(out_cap);

    char path[4096];
    snprintf(path, sizeof path, "%s/op_bench_%zu.vol", dir, vsize);
    unlink(path);
    par_volume *vol;
    int rc = par_open(path, NULL, &vol);
    if (rc != PAR_OK) die("par_open", rc);
    rc = par_region_open(vol, "bench", 1, &reg);
    if (rc != PAR_OK) die("par_region_open", rc);
    for (uint32_t i = 0; i < n_keys; i++) {
      rc = par_put(reg, keys + (size_t)i * KEY_SIZE, KEY_SIZE, value, vsize, 0);
      if (rc != PAR_OK) die("par_put", rc);
    }

    const enum op ops[] = {OP_GET, OP_EXISTS, OP_PUT};
    const char *names[] = {"get", "exists", "put"};
    for (int o = 0; o < 3; o++) {
      timed(ops[o], warm);
      double sum = 0, lo = 1e18, hi = 0;
      for (int it = 0; it < iters; it++) {
        double ns = timed(ops[o], secs);
        sum += ns;
        if (ns < lo) lo = ns;
        if (ns > hi) hi = ns;
      }
      printf("%-8s %-7zu %10.1f %10.1f %10.1f\n", names[o], vsize, sum / iters, lo, hi);
      fflush(stdout);
    }
    par_region_close(reg);
    rc = par_close(vol);
    if (rc != PAR_OK) die("par_close", rc);
    unlink(path);
    free(value);
    free(out);
  }
  return sink == 12345 ? 1 : 0;
}
