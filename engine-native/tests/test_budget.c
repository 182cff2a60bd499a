/*
 * test_budget.c — one memory budget for all the regions of a volume
 * (par_options.memory_budget_mib).
 *
 * 64 regions are written by 4 threads. With a 16 MiB budget the engine's own
 * count of L0 memory (par_volume_stats.memory_peak) stays under the budget
 * plus one write's allocation per thread (an arena chunk, at most 1 MiB);
 * without a budget the same load peaks far above it (so the bound is not
 * trivially met). Every write succeeds and every pair is read back, before
 * and after a reopen.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <pthread.h>

#define NREG 64
#define NTHREADS 4
#define PER_REGION 3000
#define BUDGET_MIB 16u

typedef struct job {
  par_region **r;
  int first; /* regions first, first + NTHREADS, ... */
} job;

static size_t make_key(char *k, int region, int i) {
  return (size_t)snprintf(k, 32, "r%02d-%06d", region, i);
}

static size_t make_value(uint8_t *v, int region, int i) {
  size_t n = 100 + (size_t)(i * 7 + region) % 300;
  tu_fill_pattern(v, n, (uint64_t)region << 32 | (uint64_t)i);
  return n;
}

static void *writer(void *p) {
  job *j = p;
  uint8_t val[512];
  char key[32];
  for (int i = 0; i < PER_REGION; i++)
    for (int reg = j->first; reg < NREG; reg += NTHREADS) {
      size_t kl = make_key(key, reg, i), vl = make_value(val, reg, i);
      int rc = par_put(j->r[reg], key, kl, val, vl, 0);
      TU_CHECK(rc == PAR_OK, "put %s: %s", key, par_last_error());
    }
  return NULL;
}

static void open_regions(par_volume *v, par_region **r, int create) {
  for (int i = 0; i < NREG; i++) {
    char name[24];
    snprintf(name, sizeof name, "region%02d", i);
    assert_ok(par_region_open(v, name, create, &r[i]));
  }
}

static void verify(par_region **r) {
  uint8_t want[512], got[512];
  char key[32];
  for (int reg = 0; reg < NREG; reg++)
    for (int i = 0; i < PER_REGION; i++) {
      size_t kl = make_key(key, reg, i), vl = make_value(want, reg, i), len;
      assert_ok(par_get(r[reg], NULL, key, kl, got, sizeof got, &len));
      assert_int_equal(len, vl);
      assert_memory_equal(got, want, vl);
    }
}

/* Loads the regions; returns the peak of the L0 memory count. */
static uint64_t load(uint32_t budget_mib, int check_reopen) {
  char *dir = tu_make_dir("budget");
  char *path = tu_path(dir, "v");
  par_options o = tu_options(4u << 20, 8);
  o.memory_budget_mib = budget_mib;
  par_volume *v;
  par_region *r[NREG];
  assert_ok(par_open(path, &o, &v));
  open_regions(v, r, 1);
  pthread_t th[NTHREADS];
  job jobs[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) {
    jobs[t] = (job){r, t};
    assert_int_equal(pthread_create(&th[t], NULL, writer, &jobs[t]), 0);
  }
  for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
  assert_int_equal(tu_failures(), 0);
  par_volume_stats vs;
  assert_ok(par_volume_stats_get(v, &vs));
  fprintf(stderr, "budget %u MiB: L0 memory now %.1f MiB, peak %.1f MiB\n", budget_mib, vs.memory_used / 1048576.0,
          vs.memory_peak / 1048576.0);
  assert_int_equal(vs.memory_budget, (uint64_t)budget_mib << 20);
  assert_true(vs.memory_used <= vs.memory_peak);
  verify(r);
  for (int i = 0; i < NREG; i++) assert_ok(par_region_close(r[i]));
  assert_ok(par_volume_stats_get(v, &vs));
  assert_int_equal(vs.memory_used, 0); /* every L0 was discharged */
  assert_ok(par_close(v));
  if (check_reopen) {
    assert_ok(par_open(path, &o, &v));
    open_regions(v, r, 0);
    verify(r);
    for (int i = 0; i < NREG; i++) assert_ok(par_region_close(r[i]));
    assert_ok(par_close(v));
  }
  tu_rm_rf(dir);
  free(dir);
  free(path);
  return vs.memory_peak;
}

static void test_budget_caps_many_regions(void **state) {
  (void)state;
  uint64_t budget = (uint64_t)BUDGET_MIB << 20;
  uint64_t slack = NTHREADS * ((1u << 20) + (64u << 10)); /* one arena chunk and a node per thread */
  uint64_t capped = load(BUDGET_MIB, 1);
  assert_true(capped <= budget + slack);
  uint64_t free_running = load(0, 0);
  assert_true(free_running > 3 * budget);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_budget_caps_many_regions)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
