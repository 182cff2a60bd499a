/*
 * par_syncbench — latency of PAR_SYNC puts, by value size.
 *
 *   par_syncbench VOLUME N VALUE_BYTES
 *
 * Opens (creating) VOLUME with default options and does N puts of VALUE_BYTES
 * each with PAR_SYNC, one thread, timing each; prints the mean, p50, p99 and
 * p99.9 in microseconds. Uses only the public API, so the same source builds
 * against any version of the engine for a before/after comparison.
 */
#include <parallax/parallax.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc != 4 || atoi(argv[2]) <= 0) {
    fprintf(stderr, "usage: par_syncbench VOLUME N VALUE_BYTES\n");
    return 2;
  }
  int n = atoi(argv[2]);
  size_t vlen = (size_t)strtoul(argv[3], NULL, 10);
  par_options o;
  par_options_init(&o);
  par_volume *v;
  par_region *r;
  if (par_open(argv[1], &o, &v) || par_region_open(v, "sync", 1, &r)) {
    fprintf(stderr, "par_syncbench: %s\n", par_last_error());
    return 1;
  }
  char *val = malloc(vlen ? vlen : 1);
  double *lat = malloc((size_t)n * sizeof *lat);
  if (!val || !lat) return 1;
  memset(val, 'x', vlen);
  char key[32];
  for (int i = 0; i < n; i++) {
    int kl = snprintf(key, sizeof key, "key%010d", i);
    double t0 = now_us();
    if (par_put(r, key, (size_t)kl, val, vlen, PAR_SYNC)) {
      fprintf(stderr, "par_syncbench: put: %s\n", par_last_error());
      return 1;
    }
    lat[i] = now_us() - t0;
  }
  double sum = 0;
  for (int i = 0; i < n; i++) sum += lat[i];
  qsort(lat, (size_t)n, sizeof *lat, by_value);
  printf("%d sync puts of %zu bytes: mean %.0f us, p50 %.0f, p99 %.0f, p99.9 %.0f\n", n, vlen,
         sum / n, lat[n / 2], lat[(size_t)n * 99 / 100], lat[(size_t)n * 999 / 1000]);
  free(val);
  free(lat);
  return par_region_close(r) || par_close(v);
}
