/*
 * par_latbench — latency of gets and puts while compactions run.
 *
 *   par_latbench VOLUME SECONDS [KEYS [PUTS_PER_SECOND [VALUE_BYTES]]]
 *
 * Opens (creating) VOLUME with a 4 MiB L0 (so that merges, and their redo
 * log commits, happen every second or so), loads KEYS keys (default 200000)
 * with VALUE_BYTES-byte values (default 100; over 1 KiB they go to the large
 * log, whose segments then fill often), then for SECONDS runs one thread putting random
 * keys (unsynced) at PUTS_PER_SECOND (default 50000: the machine is not
 * saturated, so a stall shows as one) and one thread getting random keys,
 * timing every call;
 * prints p50, p99, p99.9, p99.99 and the maximum of each in microseconds, and the
 * compactions that ran meanwhile. Uses only the public API, so the same
 * source builds against any version of the engine for a before/after
 * comparison.
 */
#include <parallax/parallax.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SAMPLES (1u << 24)
#define MAX_VALUE_BYTES 65536u

static size_t value_bytes = 100;

typedef struct worker {
  par_region *r;
  int writer;
  unsigned rate; /* puts per second (writer) */
  unsigned keys;
  uint64_t seed;
  double *lat;
  size_t n;
  int failed;
} worker;

static atomic_int stop;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static uint64_t next_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static int key_of(unsigned i, char *out) { return snprintf(out, 32, "user%012u", i); }

static void *run(void *arg) {
  worker *w = arg;
  char key[32];
  static char val[MAX_VALUE_BYTES];
  char *buf = malloc(value_bytes);
  if (!buf) return NULL;
  memset(val, 'v', value_bytes);
  double start = now_us();
  while (!atomic_load(&stop) && w->n < MAX_SAMPLES) {
    if (w->writer && w->n % 100 == 0) { /* keep to the rate */
      double due = start + (double)w->n * 1e6 / w->rate, wait = due - now_us();
      if (wait > 0) {
        struct timespec ts = {(time_t)(wait / 1e6), (long)((wait - (double)(time_t)(wait / 1e6) * 1e6) * 1e3)};
        nanosleep(&ts, NULL);
      }
    }
    int kl = key_of((unsigned)(next_rand(&w->seed) % w->keys), key);
    size_t len;
    double t0 = now_us();
    int rc = w->writer ? par_put(w->r, key, (size_t)kl, val, value_bytes, 0)
                       : par_get(w->r, NULL, key, (size_t)kl, buf, value_bytes, &len);
    w->lat[w->n++] = now_us() - t0;
    if (rc != PAR_OK) {
      fprintf(stderr, "par_latbench: %s: %s\n", w->writer ? "put" : "get", par_last_error());
      w->failed = 1;
      break;
    }
  }
  free(buf);
  return NULL;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *what, double *lat, size_t n) {
  if (!n) return;
  qsort(lat, n, sizeof *lat, by_value);
  printf("%zu %s: p50 %.1f us, p99 %.1f, p99.9 %.1f, p99.99 %.1f, max %.0f\n", n, what, lat[n / 2],
         lat[n * 99 / 100], lat[n * 999 / 1000], lat[n * 9999 / 10000], lat[n - 1]);
}

int main(int argc, char **argv) {
  if (argc < 3 || atoi(argv[2]) <= 0) {
    fprintf(stderr, "usage: par_latbench VOLUME SECONDS [KEYS [PUTS_PER_SECOND [VALUE_BYTES]]]\n");
    return 2;
  }
  int seconds = atoi(argv[2]);
  unsigned keys = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 200000u;
  unsigned rate = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 10) : 50000u;
  if (argc > 5) value_bytes = strtoul(argv[5], NULL, 10);
  if (!keys || !rate || !value_bytes || value_bytes > MAX_VALUE_BYTES) {
    fprintf(stderr, "par_latbench: KEYS and PUTS_PER_SECOND must be positive, VALUE_BYTES 1..%u\n", MAX_VALUE_BYTES);
    return 2;
  }
  par_options o;
  par_options_init(&o);
  o.l0_size = 4u << 20;
  par_volume *v;
  par_region *r;
  if (par_open(argv[1], &o, &v) || par_region_open(v, "lat", 1, &r)) {
    fprintf(stderr, "par_latbench: %s\n", par_last_error());
    return 1;
  }
  char key[32];
  char *val = calloc(1, value_bytes);
  if (!val) return 1;
  for (unsigned i = 0; i < keys; i++) {
    int kl = key_of(i, key);
    if (par_put(r, key, (size_t)kl, val, value_bytes, 0)) {
      fprintf(stderr, "par_latbench: load: %s\n", par_last_error());
      return 1;
    }
  }
  if (par_flush(r)) return 1;
  par_stats before, after;
  par_region_stats(r, &before);
  worker w[2] = {{r, 1, rate, keys, 0x9e3779b97f4a7c15ull, NULL, 0, 0},
                 {r, 0, 0, keys, 0xd1b54a32d192ed03ull, NULL, 0, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    w[i].lat = malloc(MAX_SAMPLES * sizeof *w[i].lat);
    if (!w[i].lat || pthread_create(&t[i], NULL, run, &w[i])) return 1;
  }
  struct timespec d = {seconds, 0};
  nanosleep(&d, NULL);
  atomic_store(&stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  par_region_stats(r, &after);
  report("puts", w[0].lat, w[0].n);
  report("gets", w[1].lat, w[1].n);
  printf("%llu compactions ran meanwhile\n", (unsigned long long)(after.compactions - before.compactions));
  int failed = w[0].failed || w[1].failed;
  free(w[0].lat);
  free(w[1].lat);
  free(val);
  return par_region_close(r) || par_close(v) || failed;
}
