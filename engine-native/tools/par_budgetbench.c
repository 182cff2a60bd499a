/*
 * par_budgetbench — memory of many regions with and without one memory
 * budget (par_options.memory_budget_mib), and the write throughput.
 *
 *   par_budgetbench DIR REGIONS PAIRS VALUE_BYTES BUDGET_MIB
 *
 * Opens REGIONS regions in DIR/budget.vol (l0_size 8 MiB, so without a
 * budget each may hold up to 16 MiB of L0) with memory_budget_mib =
 * BUDGET_MIB (0: none) and writes PAIRS pairs of VALUE_BYTES, spread round
 * robin over the regions by two threads. Prints the wall time, the pairs
 * per second, the peak of the engine's L0 count (par_volume_stats
 * memory_peak) and the process's peak RSS (getrusage ru_maxrss: L0s, the
 * fixed per-region buffers, and the mapped pages of the volume the process
 * touched). Page-cache mode unless run in a cgroup. The file is removed.
 */
#include <parallax/parallax.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define THREADS 2

typedef struct job {
  par_region **regions;
  long regions_n, from, to;
  size_t vlen;
} job;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what) {
  fprintf(stderr, "par_budgetbench: %s: %s\n", what, par_last_error());
  exit(1);
}

static void *writer(void *arg) {
  const job *j = arg;
  char key[32];
  char *val = malloc(j->vlen ? j->vlen : 1);
  if (!val) die("malloc");
  for (long i = j->from; i < j->to; i++) {
    int kl = snprintf(key, sizeof key, "key%012ld", i);
    memset(val, (int)(i * 131), j->vlen);
    if (par_put(j->regions[i % j->regions_n], key, (size_t)kl, val, j->vlen, 0)) die("put");
  }
  free(val);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 6 || atol(argv[2]) <= 0 || atol(argv[3]) <= 0) {
    fprintf(stderr, "usage: par_budgetbench DIR REGIONS PAIRS VALUE_BYTES BUDGET_MIB\n");
    return 2;
  }
  long nreg = atol(argv[2]), pairs = atol(argv[3]);
  size_t vlen = (size_t)strtoul(argv[4], NULL, 10);
  char path[4096];
  snprintf(path, sizeof path, "%s/budget.vol", argv[1]);
  unlink(path);
  par_options o;
  par_options_init(&o);
  o.l0_size = 8u << 20;
  o.memory_budget_mib = (uint32_t)strtoul(argv[5], NULL, 10);
  par_volume *v;
  if (par_open(path, &o, &v)) die("open");
  par_region **r = calloc((size_t)nreg, sizeof *r);
  if (!r) die("calloc");
  for (long i = 0; i < nreg; i++) {
    char name[32];
    snprintf(name, sizeof name, "r%04ld", i);
    if (par_region_open(v, name, 1, &r[i])) die("region open");
  }
  pthread_t th[THREADS];
  job jobs[THREADS];
  double t = now_s();
  for (int k = 0; k < THREADS; k++) {
    jobs[k] = (job){r, nreg, pairs * k / THREADS, pairs * (k + 1) / THREADS, vlen};
    if (pthread_create(&th[k], NULL, writer, &jobs[k])) die("thread");
  }
  for (int k = 0; k < THREADS; k++) pthread_join(th[k], NULL);
  t = now_s() - t;
  par_volume_stats vs;
  if (par_volume_stats_get(v, &vs)) die("stats");
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("regions %ld, budget %u MiB: %ld pairs of %zu bytes in %.2f s (%.0f pairs/s); L0 peak %.1f MiB; "
         "peak RSS %.1f MiB\n",
         nreg, o.memory_budget_mib, pairs, vlen, t, pairs / t, vs.memory_peak / 1048576.0, ru.ru_maxrss / 1024.0);
  for (long i = 0; i < nreg; i++)
    if (par_region_close(r[i])) die("region close");
  if (par_close(v)) die("close");
  free(r);
  unlink(path);
  return 0;
}
