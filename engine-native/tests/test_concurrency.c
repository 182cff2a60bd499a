/*
 * test_concurrency.c — reads stay correct while writes and compactions run:
 *  - writers (disjoint key ranges) write per-key increasing versions, some of
 *    them deletes; every value encodes (writer, key, version) and a pattern
 *    so a torn or misplaced value is detected;
 *  - a snapshot taken at time T shows, per key, a version v with
 *    acked_before(T) <= v <= started_after(T), and it is stable: gets through
 *    it and a scanner over it, done at different times while writers go on
 *    (and compactions replace levels), return identical contents;
 *  - so does a reverse scanner over the same snapshot (last key to first);
 *  - a scanner without a snapshot behaves the same way (implicit snapshot),
 *    forward and reverse;
 *  - plain gets see a version within the same bounds and never go back in
 *    time for one reader;
 *  - at the end the region holds exactly each key's last version, also after
 *    close/reopen;
 *  - writers that find write_mu taken: at most one spins, and not for long
 *    (all of them asleep on the mutex soon after, the next spin's bound
 *    shortened), and each write lands once the holder lets go.
 * Environment: PAR_SEED, PAR_CONC_OPS (writes per writer, default 200000).
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "api/internal.h"

#define NW 3       /* writer threads */
#define NK 3000    /* keys per writer */
#define HDR 24

typedef struct shared {
  par_region *reg;
  uint64_t seed;
  long ops;
  _Atomic uint64_t acked[NW][NK];   /* newest version whose write returned */
  _Atomic uint64_t started[NW][NK]; /* newest version whose write began    */
  uint64_t final[NW][NK];           /* written by the writer, read after join */
  atomic_int writers_left;
  atomic_long snap_rounds, scan_rounds, gets;
} shared;

static int is_delete(uint64_t v) { return v % 7 == 0; }

static size_t key_of(int w, uint32_t k, char *out) {
  return (size_t)snprintf(out, 32, "w%d-%06u", w, k);
}

static uint64_t tag_of(int w, uint32_t k, uint64_t v) {
  return ((uint64_t)w << 56) ^ ((uint64_t)k << 32) ^ v;
}

static size_t value_of(int w, uint32_t k, uint64_t v, uint8_t *out) {
  uint64_t h = tu_mix64(tag_of(w, k, v));
  size_t len = HDR + (h % 50 == 0 ? 1000 + h % 2000 : h % 200);
  uint32_t w32 = (uint32_t)w, l32 = (uint32_t)len;
  memcpy(out, &w32, 4);
  memcpy(out + 4, &k, 4);
  memcpy(out + 8, &v, 8);
  memcpy(out + 16, &l32, 4);
  memset(out + 20, 0, 4);
  tu_fill_pattern(out + HDR, len - HDR, tag_of(w, k, v));
  return len;
}

/* The version a value of key (w, k) encodes; 0 when it is malformed. */
static uint64_t parse_value(int w, uint32_t k, const uint8_t *p, size_t len) {
  if (len < HDR) return 0;
  uint32_t w32, k32, l32;
  uint64_t v;
  memcpy(&w32, p, 4);
  memcpy(&k32, p + 4, 4);
  memcpy(&v, p + 8, 8);
  memcpy(&l32, p + 16, 4);
  if (w32 != (uint32_t)w || k32 != k || l32 != len || v == 0) return 0;
  if (!tu_check_pattern(p + HDR, len - HDR, tag_of(w, k, v))) return 0;
  return v;
}

/* Parses "w%d-%06u". */
static int parse_key(const void *key, size_t kl, int *w, uint32_t *k) {
  char s[32];
  if (kl < 4 || kl >= sizeof s) return -1;
  memcpy(s, key, kl);
  s[kl] = 0;
  unsigned kk;
  int ww, n = 0;
  if (sscanf(s, "w%d-%6u%n", &ww, &kk, &n) != 2 || (size_t)n != kl) return -1;
  if (ww < 0 || ww >= NW || kk >= NK) return -1;
  *w = ww;
  *k = kk;
  return 0;
}

/* Is observing version v (0 = absent) consistent with bounds [lo, hi]? */
static int consistent(uint64_t v, uint64_t lo, uint64_t hi) {
  if (v == 0) return lo == 0 || (hi / 7) * 7 >= lo; /* some delete in [lo, hi] */
  return v >= lo && v <= hi && !is_delete(v);
}

/* ---- threads -------------------------------------------------------------- */

typedef struct wctx {
  shared *sh;
  int w;
} wctx;

static void *writer(void *arg) {
  wctx *c = arg;
  shared *sh = c->sh;
  uint64_t rng = sh->seed * 31 + (uint64_t)c->w;
  uint64_t *ver = calloc(NK, sizeof *ver);
  uint8_t *val = malloc(4096);
  char key[32];
  for (long i = 0; i < sh->ops && tu_failures() == 0; i++) {
    uint32_t k = (uint32_t)tu_rand_range(&rng, NK);
    uint64_t v = ++ver[k];
    size_t kl = key_of(c->w, k, key);
    atomic_store(&sh->started[c->w][k], v);
    unsigned flags = tu_rand_range(&rng, 500) == 0 ? PAR_SYNC : 0;
    int rc;
    if (is_delete(v)) {
      rc = par_delete(sh->reg, key, kl, flags);
    } else {
      size_t vl = value_of(c->w, k, v, val);
      rc = par_put(sh->reg, key, kl, val, vl, flags);
    }
    TU_CHECK(rc == PAR_OK, "writer %d: %s", c->w, par_strerror(rc));
    atomic_store(&sh->acked[c->w][k], v);
    if (c->w == 0 && i % 10000 == 9999) {
      fprintf(stderr, "writer 0: %ld writes; %ld snapshot rounds, %ld scan rounds\n", i + 1,
              (long)atomic_load(&sh->snap_rounds), (long)atomic_load(&sh->scan_rounds));
    }
  }
  for (uint32_t k = 0; k < NK; k++) sh->final[c->w][k] = ver[k];
  free(ver);
  free(val);
  atomic_fetch_sub(&sh->writers_left, 1);
  return NULL;
}

/* Reads key (w, k) through snap; returns its version (0 absent), or
 * UINT64_MAX after reporting a malformed value or error. */
static uint64_t read_version(shared *sh, const par_snapshot *snap, int w, uint32_t k,
                             uint8_t *buf) {
  char key[32];
  size_t kl = key_of(w, k, key), len = 0;
  int rc = par_get(sh->reg, snap, key, kl, buf, 4096, &len);
  if (rc == PAR_NOT_FOUND) return 0;
  if (rc != PAR_OK) {
    TU_CHECK(0, "get %s: %s", key, par_strerror(rc));
    return UINT64_MAX;
  }
  uint64_t v = len <= 4096 ? parse_value(w, k, buf, len) : 0;
  TU_CHECK(v != 0, "get %s: malformed %zu-byte value", key, len);
  return v ? v : UINT64_MAX;
}

static void load_bounds(_Atomic uint64_t (*src)[NK], uint64_t (*dst)[NK]) {
  for (int w = 0; w < NW; w++)
    for (uint32_t k = 0; k < NK; k++) dst[w][k] = atomic_load(&src[w][k]);
}

/* Scans through snap (or an implicit snapshot when snap is NULL, opened
 * between the bounds) into out[][], forward or from the last key back;
 * returns 0 on success. */
static int scan_versions(shared *sh, const par_snapshot *snap, uint64_t (*out)[NK],
                         uint64_t (*lo)[NK], uint64_t (*hi)[NK], int reverse) {
  memset(out, 0, sizeof(uint64_t) * NW * NK);
  if (lo) load_bounds(sh->acked, lo);
  par_scanner *s = NULL;
  int rc = par_scanner_open(sh->reg, snap, &s);
  if (hi) load_bounds(sh->started, hi);
  TU_CHECK(rc == PAR_OK, "scanner_open: %s", par_strerror(rc));
  if (rc != PAR_OK) return -1;
  rc = par_scanner_seek(s, NULL, 0, reverse ? PAR_SEEK_LAST : PAR_SEEK_FIRST);
  TU_CHECK(rc == PAR_OK, "seek: %s", par_strerror(rc));
  size_t pkl = 0;
  char prev[32];
  int have_prev = 0;
  while (rc == PAR_OK && par_scanner_valid(s)) {
    const void *key, *val;
    size_t kl, vl;
    par_scanner_key(s, &key, &kl);
    par_scanner_value(s, &val, &vl);
    int w;
    uint32_t k;
    if (parse_key(key, kl, &w, &k) != 0) {
      TU_CHECK(0, "scan: foreign key %s", tu_key_str(key, kl));
      break;
    }
    if (have_prev)
      TU_CHECK(reverse ? tu_key_cmp(prev, pkl, key, kl) > 0 : tu_key_cmp(prev, pkl, key, kl) < 0,
               "%s scan out of order at %s", reverse ? "reverse" : "forward", tu_key_str(key, kl));
    memcpy(prev, key, kl);
    pkl = kl;
    have_prev = 1;
    uint64_t v = parse_value(w, k, val, vl);
    TU_CHECK(v != 0, "scan: malformed value for %s", tu_key_str(key, kl));
    out[w][k] = v;
    rc = reverse ? par_scanner_prev(s) : par_scanner_next(s);
  }
  TU_CHECK(rc == PAR_OK, "scanner_next/prev: %s", par_strerror(rc));
  par_scanner_close(s);
  return 0;
}

static void *snapshot_checker(void *arg) {
  shared *sh = arg;
  uint64_t(*lo)[NK] = malloc(sizeof(uint64_t) * NW * NK);
  uint64_t(*hi)[NK] = malloc(sizeof(uint64_t) * NW * NK);
  uint64_t(*got)[NK] = malloc(sizeof(uint64_t) * NW * NK);
  uint64_t(*scan)[NK] = malloc(sizeof(uint64_t) * NW * NK);
  uint8_t *buf = malloc(4096);
  while (atomic_load(&sh->writers_left) > 0 && tu_failures() == 0) {
    load_bounds(sh->acked, lo);
    par_snapshot *snap = NULL;
    int rc = par_snapshot_create(sh->reg, &snap);
    load_bounds(sh->started, hi);
    TU_CHECK(rc == PAR_OK, "snapshot_create: %s", par_strerror(rc));
    if (rc != PAR_OK) break;
    /* Pass 1: gets. */
    for (int w = 0; w < NW; w++)
      for (uint32_t k = 0; k < NK; k++) {
        uint64_t v = read_version(sh, snap, w, k, buf);
        got[w][k] = v;
        TU_CHECK(v == UINT64_MAX || consistent(v, lo[w][k], hi[w][k]),
                 "snapshot get w%d-%06u: version %llu outside [%llu, %llu]", w, k,
                 (unsigned long long)v, (unsigned long long)lo[w][k],
                 (unsigned long long)hi[w][k]);
      }
    /* Pass 2, later: scanners over the same snapshot, forward and reverse,
     * see the same. */
    for (int reverse = 0; reverse < 2; reverse++) {
      scan_versions(sh, snap, scan, NULL, NULL, reverse);
      for (int w = 0; w < NW; w++)
        for (uint32_t k = 0; k < NK; k++)
          TU_CHECK(scan[w][k] == got[w][k],
                   "snapshot unstable: w%d-%06u get saw %llu, later %s scan saw %llu", w, k,
                   (unsigned long long)got[w][k], reverse ? "reverse" : "forward",
                   (unsigned long long)scan[w][k]);
    }
    /* Pass 3, later still: gets again. */
    for (int w = 0; w < NW; w++)
      for (uint32_t k = 0; k < NK; k += 7) {
        uint64_t v = read_version(sh, snap, w, k, buf);
        TU_CHECK(v == got[w][k], "snapshot unstable: w%d-%06u %llu then %llu", w, k,
                 (unsigned long long)got[w][k], (unsigned long long)v);
      }
    par_snapshot_release(snap);
    atomic_fetch_add(&sh->snap_rounds, 1);
  }
  free(lo);
  free(hi);
  free(got);
  free(scan);
  free(buf);
  return NULL;
}

static void *scan_checker(void *arg) {
  shared *sh = arg;
  uint64_t(*lo)[NK] = malloc(sizeof(uint64_t) * NW * NK);
  uint64_t(*hi)[NK] = malloc(sizeof(uint64_t) * NW * NK);
  uint64_t(*scan)[NK] = malloc(sizeof(uint64_t) * NW * NK);
  for (int reverse = 0; atomic_load(&sh->writers_left) > 0 && tu_failures() == 0; reverse = !reverse) {
    if (scan_versions(sh, NULL, scan, lo, hi, reverse) != 0) break;
    for (int w = 0; w < NW; w++)
      for (uint32_t k = 0; k < NK; k++)
        TU_CHECK(consistent(scan[w][k], lo[w][k], hi[w][k]),
                 "implicit-snapshot scan w%d-%06u: version %llu outside [%llu, %llu]", w, k,
                 (unsigned long long)scan[w][k], (unsigned long long)lo[w][k],
                 (unsigned long long)hi[w][k]);
    atomic_fetch_add(&sh->scan_rounds, 1);
  }
  free(lo);
  free(hi);
  free(scan);
  return NULL;
}

static void *getter(void *arg) {
  shared *sh = arg;
  uint64_t rng = sh->seed ^ 0xabcdef;
  uint64_t(*last)[NK] = calloc(NW * NK, sizeof(uint64_t));
  uint8_t *buf = malloc(4096);
  while (atomic_load(&sh->writers_left) > 0 && tu_failures() == 0) {
    for (int i = 0; i < 1000; i++) {
      int w = (int)tu_rand_range(&rng, NW);
      uint32_t k = (uint32_t)tu_rand_range(&rng, NK);
      uint64_t lo = atomic_load(&sh->acked[w][k]);
      uint64_t v = read_version(sh, NULL, w, k, buf);
      uint64_t hi = atomic_load(&sh->started[w][k]);
      if (v == UINT64_MAX) continue;
      TU_CHECK(consistent(v, lo, hi), "get w%d-%06u: version %llu outside [%llu, %llu]", w, k,
               (unsigned long long)v, (unsigned long long)lo, (unsigned long long)hi);
      if (v != 0) {
        TU_CHECK(v >= last[w][k], "get w%d-%06u went back in time: %llu after %llu", w, k,
                 (unsigned long long)v, (unsigned long long)last[w][k]);
        last[w][k] = v;
      }
      /* exists agrees with get's bounds too */
      char key[32];
      size_t kl = key_of(w, k, key);
      lo = atomic_load(&sh->acked[w][k]);
      int rc = par_exists(sh->reg, NULL, key, kl);
      hi = atomic_load(&sh->started[w][k]);
      TU_CHECK(rc == PAR_OK || rc == PAR_NOT_FOUND, "exists: %s", par_strerror(rc));
      if (rc == PAR_NOT_FOUND)
        TU_CHECK(consistent(0, lo, hi), "exists w%d-%06u: absent, but [%llu, %llu] has no delete",
                 w, k, (unsigned long long)lo, (unsigned long long)hi);
      else if (lo == hi)
        TU_CHECK(!is_delete(lo), "exists w%d-%06u: present, but version %llu is a delete", w, k,
                 (unsigned long long)lo);
      atomic_fetch_add(&sh->gets, 2);
    }
  }
  free(last);
  free(buf);
  return NULL;
}

/* ---- the test ---------------------------------------------------------------- */

static void verify_final(shared *sh, const char *when) {
  uint8_t *buf = malloc(4096);
  for (int w = 0; w < NW; w++)
    for (uint32_t k = 0; k < NK; k++) {
      uint64_t want = sh->final[w][k];
      if (is_delete(want)) want = 0;
      uint64_t v = read_version(sh, NULL, w, k, buf);
      if (v != want)
        fail_msg("%s: w%d-%06u has version %llu, expected %llu (seed %llu)", when, w, k,
                 (unsigned long long)v, (unsigned long long)want, (unsigned long long)sh->seed);
    }
  uint64_t(*scan)[NK] = malloc(sizeof(uint64_t) * NW * NK);
  scan_versions(sh, NULL, scan, NULL, NULL, 0);
  for (int w = 0; w < NW; w++)
    for (uint32_t k = 0; k < NK; k++) {
      uint64_t want = is_delete(sh->final[w][k]) ? 0 : sh->final[w][k];
      if (scan[w][k] != want)
        fail_msg("%s: scan shows w%d-%06u at %llu, expected %llu", when, w, k,
                 (unsigned long long)scan[w][k], (unsigned long long)want);
    }
  free(scan);
  free(buf);
  assert_int_equal(tu_failures(), 0);
}

static void test_concurrent_readers_and_writers(void **state) {
  (void)state;
  shared *sh = calloc(1, sizeof *sh);
  assert_non_null(sh);
  sh->seed = tu_seed("concurrency");
  sh->ops = (long)tu_env_u64("PAR_CONC_OPS", 200000);
  char *dir = tu_make_dir("concurrency");
  char *path = tu_path(dir, "conc.px");
  par_options o = tu_options(256u << 10, 4);
  o.compaction_threads = 2;
  par_volume *vol = NULL;
  assert_ok(par_open(path, &o, &vol));
  assert_ok(par_region_open(vol, "conc", 1, &sh->reg));

  atomic_init(&sh->writers_left, NW);
  pthread_t wt[NW], rt[3];
  wctx wc[NW];
  for (int w = 0; w < NW; w++) {
    wc[w].sh = sh;
    wc[w].w = w;
    assert_int_equal(pthread_create(&wt[w], NULL, writer, &wc[w]), 0);
  }
  assert_int_equal(pthread_create(&rt[0], NULL, snapshot_checker, sh), 0);
  assert_int_equal(pthread_create(&rt[1], NULL, scan_checker, sh), 0);
  assert_int_equal(pthread_create(&rt[2], NULL, getter, sh), 0);
  for (int w = 0; w < NW; w++) pthread_join(wt[w], NULL);
  for (int i = 0; i < 3; i++) pthread_join(rt[i], NULL);

  par_stats st;
  assert_ok(par_region_stats(sh->reg, &st));
  fprintf(stderr,
          "concurrency: %ld snapshot rounds, %ld scan rounds, %ld gets; %llu compactions, "
          "levels %u, %llu stalls\n",
          (long)atomic_load(&sh->snap_rounds), (long)atomic_load(&sh->scan_rounds),
          (long)atomic_load(&sh->gets), (unsigned long long)st.compactions, st.levels,
          (unsigned long long)st.write_stalls);
  if (tu_failures() != 0) fail_msg("%d check failures (seed %llu)", tu_failures(),
                                   (unsigned long long)sh->seed);
  assert_true(st.compactions > 0);
  assert_true(atomic_load(&sh->snap_rounds) > 0);
  assert_true(atomic_load(&sh->scan_rounds) > 0);

  verify_final(sh, "after the writers finished");
  assert_ok(par_region_close(sh->reg));
  assert_ok(par_close(vol));
  assert_ok(par_open(path, &o, &vol));
  assert_ok(par_region_open(vol, "conc", 0, &sh->reg));
  verify_final(sh, "after reopen");
  assert_ok(par_region_close(sh->reg));
  assert_ok(par_close(vol));
  tu_rm_rf(dir);
  free(dir);
  free(path);
  free(sh);
}

/* Several regions of one volume used concurrently: each is independent. */
typedef struct rctx {
  par_volume *vol;
  int id;
} rctx;

static void *region_worker(void *arg) {
  rctx *c = arg;
  char name[32], key[32], val[64], buf[64];
  snprintf(name, sizeof name, "region-%d", c->id);
  par_region *r = NULL;
  int rc = par_region_open(c->vol, name, 1, &r);
  TU_CHECK(rc == PAR_OK, "open %s: %s", name, par_strerror(rc));
  if (rc != PAR_OK) return NULL;
  for (int i = 0; i < 20000; i++) {
    snprintf(key, sizeof key, "k%06d", i % 5000);
    int vl = snprintf(val, sizeof val, "r%d-i%d", c->id, i);
    rc = par_put(r, key, strlen(key), val, (size_t)vl, 0);
    TU_CHECK(rc == PAR_OK, "put: %s", par_strerror(rc));
  }
  for (int i = 15000; i < 20000; i++) {
    snprintf(key, sizeof key, "k%06d", i % 5000);
    int vl = snprintf(val, sizeof val, "r%d-i%d", c->id, i);
    size_t len = 0;
    rc = par_get(r, NULL, key, strlen(key), buf, sizeof buf, &len);
    TU_CHECK(rc == PAR_OK && len == (size_t)vl && memcmp(buf, val, len) == 0,
             "region %d key %s: %s", c->id, key, par_strerror(rc));
  }
  rc = par_region_close(r);
  TU_CHECK(rc == PAR_OK, "close: %s", par_strerror(rc));
  return NULL;
}

static void test_concurrent_regions(void **state) {
  (void)state;
  char *dir = tu_make_dir("conc_regions");
  char *path = tu_path(dir, "regions.px");
  par_options o = tu_options(256u << 10, 4);
  par_volume *vol = NULL;
  assert_ok(par_open(path, &o, &vol));
  pthread_t t[4];
  rctx c[4];
  for (int i = 0; i < 4; i++) {
    c[i].vol = vol;
    c[i].id = i;
    assert_int_equal(pthread_create(&t[i], NULL, region_worker, &c[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  assert_int_equal(tu_failures(), 0);
  assert_ok(par_close(vol));
  tu_rm_rf(dir);
  free(dir);
  free(path);
}

typedef struct waiter {
  par_region *r;
  int id;
  int rc;
} waiter;

static void *put_one(void *arg) {
  waiter *w = arg;
  char key[24];
  snprintf(key, sizeof key, "held-%d", w->id);
  w->rc = par_put(w->r, key, strlen(key), key, strlen(key), 0);
  return NULL;
}

/* The test holds write_mu while NWAIT writers try to write. A spin without
 * a bound would keep write_spinners at 1 until the lock is free; more than
 * one spinner would show as 2 or more (caught when the polls see it); a
 * bound that does not adapt stays at its maximum. */
#define NWAIT 4
static void test_writers_waiting_for_write_mu(void **state) {
  (void)state;
  char *dir = tu_make_dir("conc_spin");
  char *path = tu_path(dir, "spin.px");
  par_options o = tu_options(256u << 10, 4);
  par_volume *vol = NULL;
  par_region *r = NULL;
  assert_ok(par_open(path, &o, &vol));
  assert_ok(par_region_open(vol, "spin", 1, &r));
  assert_ok(par_put(r, "warm", 4, "up", 2, 0)); /* the first write's one-time set-up, outside the hold */
  pthread_mutex_lock(&r->write_mu);
  pthread_t t[NWAIT];
  waiter w[NWAIT];
  for (int i = 0; i < NWAIT; i++) {
    w[i] = (waiter){r, i, -1};
    assert_int_equal(pthread_create(&t[i], NULL, put_one, &w[i]), 0);
  }
  unsigned most = 0, now = 1;
  int polls = 0;
  /* Up to 10 s for every writer to give up spinning: the bound is at most 100 us. */
  for (; polls < 10000 && (polls < 50 || now); polls++) {
    now = atomic_load(&r->write_spinners);
    if (now > most) most = now;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  assert_true(most <= 1);
  assert_int_equal(now, 0);
  /* The spin that gave up halved the next one's bound. */
  assert_true(atomic_load(&r->write_spin_ns) < WRITE_SPIN_MAX_NS);
  pthread_mutex_unlock(&r->write_mu);
  for (int i = 0; i < NWAIT; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < NWAIT; i++) {
    char key[24], buf[24];
    size_t len = 0;
    assert_int_equal(w[i].rc, PAR_OK);
    snprintf(key, sizeof key, "held-%d", i);
    assert_ok(par_get(r, NULL, key, strlen(key), buf, sizeof buf, &len));
    assert_int_equal(len, strlen(key));
  }
  assert_ok(par_region_close(r));
  assert_ok(par_close(vol));
  tu_rm_rf(dir);
  free(dir);
  free(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_concurrent_readers_and_writers),
      cmocka_unit_test(test_concurrent_regions),
      cmocka_unit_test(test_writers_waiting_for_write_mu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
