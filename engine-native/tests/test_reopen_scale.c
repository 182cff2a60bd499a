/*
 * test_reopen_scale.c — durability at scale (label "slow").
 * Phase 1: load N pairs (24-byte keys in random order, 9..16-byte values)
 * with a small L0 and growth factor 4 so that at least three device levels
 * exist; close, reopen, and check every pair with par_get and the count and
 * order of a full scan.
 * Phase 2: a forked child overwrites a third of the keys and adds new ones,
 * calling par_sync after every chunk and reporting each synced chunk to the
 * parent through a pipe; the parent SIGKILLs it mid-chunk, reopens, and
 * checks that every synced write is there, that the writes after the last
 * sync that survived form a prefix, and that untouched pairs are intact.
 *
 * Environment: PAR_SCALE_KEYS (N, default 5000000), PAR_SCALE_L0 (bytes of
 * L0; default scales with N, at most 4 MiB), PAR_SEED.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KEY_LEN 24
#define CHUNK 50000

static size_t key_of(uint64_t i, char *out) {
  /* "user" + 20 digits of a 64-bit bijection of i: unique, random order. */
  snprintf(out, KEY_LEN + 1, "user%020llu", (unsigned long long)tu_mix64(i));
  return KEY_LEN;
}

static size_t value_of(uint64_t i, int gen, uint8_t *out) {
  uint64_t tag = i * 4 + (uint64_t)gen;
  size_t len = 9 + tu_mix64(tag) % 8;
  tu_fill_pattern(out, len, tag);
  return len;
}

/* Which generation key i holds (0 or 1), -1 when absent, -2 when the value
 * is neither generation's. */
static int value_gen(uint64_t i, const uint8_t *v, size_t len) {
  uint8_t want[16];
  for (int gen = 0; gen < 2; gen++) {
    size_t n = value_of(i, gen, want);
    if (n == len && memcmp(want, v, n) == 0) return gen;
  }
  return -2;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int get_gen(par_region *r, uint64_t i) {
  char key[KEY_LEN + 1];
  uint8_t buf[64];
  size_t len = 0;
  key_of(i, key);
  int rc = par_get(r, NULL, key, KEY_LEN, buf, sizeof buf, &len);
  if (rc == PAR_NOT_FOUND) return -1;
  if (rc != PAR_OK) fail_msg("get key %llu: %s (%s)", (unsigned long long)i, par_strerror(rc),
                             par_last_error());
  if (len > sizeof buf) return -2;
  return value_gen(i, buf, len);
}

/* Full scan: count, and keys strictly increasing. */
static uint64_t scan_count(par_region *r) {
  par_scanner *s = NULL;
  assert_ok(par_scanner_open(r, NULL, &s));
  assert_ok(par_scanner_seek(s, NULL, 0, PAR_SEEK_FIRST));
  char prev[KEY_LEN];
  uint64_t n = 0;
  while (par_scanner_valid(s)) {
    const void *k;
    size_t kl;
    assert_ok(par_scanner_key(s, &k, &kl));
    if (kl != KEY_LEN) fail_msg("scan: key of %zu bytes", kl);
    if (n > 0 && memcmp(prev, k, KEY_LEN) >= 0)
      fail_msg("scan: keys out of order at entry %llu", (unsigned long long)n);
    memcpy(prev, k, KEY_LEN);
    n++;
    assert_ok(par_scanner_next(s));
  }
  par_scanner_close(s);
  return n;
}

/* Phase 2 op j: key index and whether it is a new key. */
static uint64_t phase2_key(uint64_t j, uint64_t n) {
  return j % 3 == 2 ? n + j / 3 : (j / 3) * 2 + j % 3;
}

static void child_phase2(const char *path, const par_options *o, uint64_t n, uint64_t m,
                         int report_fd) {
  par_volume *vol = NULL;
  par_region *r = NULL;
  int rc = par_open(path, o, &vol);
  if (rc == PAR_OK) rc = par_region_open(vol, "scale", 0, &r);
  if (rc != PAR_OK) {
    fprintf(stderr, "child: open: %s (%s)\n", par_strerror(rc), par_last_error());
    _exit(3);
  }
  char key[KEY_LEN + 1];
  uint8_t val[16];
  for (uint64_t j = 0; j < m; j++) {
    uint64_t i = phase2_key(j, n);
    key_of(i, key);
    size_t vl = value_of(i, 1, val);
    rc = par_put(r, key, KEY_LEN, val, vl, 0);
    if (rc != PAR_OK) {
      fprintf(stderr, "child: put: %s (%s)\n", par_strerror(rc), par_last_error());
      _exit(3);
    }
    if ((j + 1) % CHUNK == 0) {
      rc = par_sync(r);
      if (rc != PAR_OK) _exit(4);
      uint64_t done = j + 1;
      if (write(report_fd, &done, sizeof done) != sizeof done) _exit(5);
    }
  }
  rc = par_sync(r);
  uint64_t done = m;
  if (rc != PAR_OK || write(report_fd, &done, sizeof done) != sizeof done) _exit(6);
  for (;;) pause(); /* wait for the kill */
}

static void test_reopen_at_scale(void **state) {
  (void)state;
  uint64_t seed = tu_seed("reopen_scale");
  uint64_t rng = seed;
  uint64_t n = tu_env_u64("PAR_SCALE_KEYS", 5000000);
  uint64_t l0 = n * 40 / 48;
  if (l0 > (4u << 20)) l0 = 4u << 20;
  if (l0 < (256u << 10)) l0 = 256u << 10;
  l0 = tu_env_u64("PAR_SCALE_L0", l0);
  char *dir = tu_make_dir("reopen_scale");
  char *path = tu_path(dir, "scale.px");
  par_options o = tu_options(l0, 4);
  par_volume *vol = NULL;
  par_region *r = NULL;
  char key[KEY_LEN + 1];
  uint8_t val[16];
  fprintf(stderr, "scale: N=%llu, l0_size=%llu\n", (unsigned long long)n,
          (unsigned long long)l0);

  /* Phase 1: load. */
  double t0 = now_s();
  assert_ok(par_open(path, &o, &vol));
  assert_ok(par_region_open(vol, "scale", 1, &r));
  for (uint64_t i = 0; i < n; i++) {
    key_of(i, key);
    size_t vl = value_of(i, 0, val);
    int rc = par_put(r, key, KEY_LEN, val, vl, 0);
    if (rc != PAR_OK) fail_msg("load put %llu: %s (%s)", (unsigned long long)i, par_strerror(rc),
                               par_last_error());
  }
  par_stats st;
  assert_ok(par_region_stats(r, &st));
  double t1 = now_s();
  fprintf(stderr, "loaded %llu pairs in %.1f s (%.0f/s): levels %u, %llu compactions, %llu stalls\n",
          (unsigned long long)n, t1 - t0, (double)n / (t1 - t0), st.levels,
          (unsigned long long)st.compactions, (unsigned long long)st.write_stalls);
  assert_ok(par_region_close(r));
  assert_ok(par_close(vol));
  double t2 = now_s();
  fprintf(stderr, "close: %.1f s\n", t2 - t1);

  o.create_if_missing = 0;
  assert_ok(par_open(path, &o, &vol));
  assert_ok(par_region_open(vol, "scale", 0, &r));
  double t3 = now_s();
  assert_ok(par_region_stats(r, &st));
  fprintf(stderr, "reopen: %.1f s; levels %u:", t3 - t2, st.levels);
  for (uint32_t l = 1; l <= st.levels && l <= PAR_MAX_LEVELS; l++)
    fprintf(stderr, " L%u=%llu", l, (unsigned long long)st.level[l].entries);
  fprintf(stderr, "\n");
  if (st.levels < 3) fail_msg("only %u device levels after loading %llu pairs", st.levels,
                              (unsigned long long)n);
  for (uint64_t i = 0; i < n; i++) {
    int g = get_gen(r, i);
    if (g != 0) fail_msg("after reopen: key %llu has generation %d", (unsigned long long)i, g);
  }
  uint64_t cnt = scan_count(r);
  if (cnt != n) fail_msg("after reopen: scan counted %llu pairs, expected %llu",
                         (unsigned long long)cnt, (unsigned long long)n);
  double t4 = now_s();
  fprintf(stderr, "verified %llu gets + scan in %.1f s\n", (unsigned long long)n, t4 - t3);
  assert_ok(par_region_close(r));
  assert_ok(par_close(vol));

  /* Phase 2: overwrite and extend in a child, kill it mid-chunk. */
  uint64_t m = n / 2;
  uint64_t chunks = m / CHUNK;
  uint64_t kill_after = chunks > 2 ? chunks / 3 + tu_rand_range(&rng, chunks / 3 + 1) : 1;
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  pid_t pid = tu_fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(pfd[0]);
    child_phase2(path, &o, n, m, pfd[1]);
  }
  close(pfd[1]);
  uint64_t synced = 0, report = 0, reports = 0;
  while (reports < kill_after && read(pfd[0], &report, sizeof report) == sizeof report) {
    synced = report;
    reports++;
  }
  if (reports < kill_after && synced < m) {
    int status = 0;
    waitpid(pid, &status, 0);
    fail_msg("phase 2 child ended early (status 0x%x) after %llu synced writes", status,
             (unsigned long long)synced);
  }
  struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)tu_rand_range(&rng, 100) * 1000000L};
  nanosleep(&ts, NULL);
  assert_int_equal(kill(pid, SIGKILL), 0);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  /* A report may have arrived while we slept. */
  while (read(pfd[0], &report, sizeof report) == sizeof report) synced = report;
  close(pfd[0]);
  double t5 = now_s();

  assert_ok(par_open(path, &o, &vol));
  assert_ok(par_region_open(vol, "scale", 0, &r));
  double t6 = now_s();
  fprintf(stderr, "phase 2: killed after %llu synced writes of %llu; recovery took %.1f s\n",
          (unsigned long long)synced, (unsigned long long)m, t6 - t5);

  /* Writes j < synced: applied. Then a prefix of the rest. */
  uint64_t applied = 0;
  int gap = 0;
  for (uint64_t j = 0; j < m; j++) {
    uint64_t i = phase2_key(j, n);
    int g = get_gen(r, i);
    int is_new = i >= n;
    if (g == 1) {
      if (gap) fail_msg("phase 2 write %llu recovered after a lost write %llu: not a prefix",
                        (unsigned long long)j, (unsigned long long)applied);
      applied = j + 1;
    } else if (g == (is_new ? -1 : 0)) {
      if (j < synced)
        fail_msg("synced phase 2 write %llu (key %llu) lost: generation %d (%llu synced)",
                 (unsigned long long)j, (unsigned long long)i, g, (unsigned long long)synced);
      gap = 1;
    } else {
      fail_msg("phase 2 key %llu holds generation %d", (unsigned long long)i, g);
    }
  }
  /* Keys phase 2 never touched still hold generation 0. */
  uint64_t touched_old = (m / 3) * 2 + (m % 3 > 0) + (m % 3 > 1);
  for (uint64_t i = touched_old; i < n; i++) {
    int g = get_gen(r, i);
    if (g != 0) fail_msg("untouched key %llu has generation %d", (unsigned long long)i, g);
  }
  uint64_t new_keys = 0;
  for (uint64_t j = 0; j < applied; j++) new_keys += j % 3 == 2;
  cnt = scan_count(r);
  if (cnt != n + new_keys)
    fail_msg("after recovery: scan counted %llu, expected %llu", (unsigned long long)cnt,
             (unsigned long long)(n + new_keys));
  fprintf(stderr, "phase 2: %llu writes recovered (%llu synced), verified in %.1f s\n",
          (unsigned long long)applied, (unsigned long long)synced, now_s() - t6);
  assert_ok(par_region_close(r));
  assert_ok(par_close(vol));
  tu_rm_rf(dir);
  free(dir);
  free(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reopen_at_scale),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
