/*
 * test_txn.c — batches across the regions of a volume (par_write_volume) and
 * snapshots of several regions (par_snapshot_create_many).
 *
 *  - bad input: ops without a region, regions of another volume or closed,
 *    PAR_NO_WAL, par_write of a batch naming another region;
 *  - a randomized model test: cross-region batches, single writes, flushes
 *    and reopens against one reference map per region;
 *  - readers of par_snapshot_create_many never see half a batch while a
 *    writer commits batches that set the same key in every region;
 *  - kill -9 and power-cut cycles: a child commits batches that write a
 *    unique key and a shared counter key in each of three regions (plus
 *    single-region writes between them); after recovery every region holds
 *    exactly the same batches, and every batch acknowledged is there.
 *
 * Environment: PAR_SEED, PAR_TXN_CYCLES (default 8 of each kind).
 */
#define _GNU_SOURCE
#include "testutil.h"

#include "io/powerloss.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NR 3
static const char *const NAMES[NR] = {"ra", "rb", "rc"};

static void open_all(par_volume *v, par_region **r) {
  for (int i = 0; i < NR; i++) assert_ok(par_region_open(v, NAMES[i], 1, &r[i]));
}

static void close_all(par_region **r) {
  for (int i = 0; i < NR; i++) assert_ok(par_region_close(r[i]));
}

/* ---- bad input ---------------------------------------------------------------- */

static void test_bad_input(void **state) {
  (void)state;
  char *dir = tu_make_dir("txn_bad");
  char *p1 = tu_path(dir, "v1"), *p2 = tu_path(dir, "v2");
  par_options o = tu_options(0, 0);
  par_volume *v1, *v2;
  par_region *a, *b, *c;
  assert_ok(par_open(p1, &o, &v1));
  assert_ok(par_open(p2, &o, &v2));
  assert_ok(par_region_open(v1, "a", 1, &a));
  assert_ok(par_region_open(v1, "b", 1, &b));
  assert_ok(par_region_open(v2, "c", 1, &c));
  par_batch *bt;
  assert_ok(par_batch_create(&bt));
  assert_par(par_batch_put_in(bt, NULL, "k", 1, "v", 1), PAR_EINVAL);
  assert_par(par_batch_put_in(NULL, a, "k", 1, "v", 1), PAR_EINVAL);
  assert_par(par_batch_delete_in(bt, a, "", 0), PAR_EINVAL);
  assert_ok(par_batch_put_in(bt, a, "k", 1, "v", 1));
  assert_ok(par_batch_put_in(bt, b, "k", 1, "v", 1));
  assert_par(par_write(a, bt, 0), PAR_EINVAL); /* holds an op for b */
  assert_par(par_write_volume(v1, bt, PAR_NO_WAL), PAR_EINVAL);
  assert_par(par_write_volume(NULL, bt, 0), PAR_EINVAL);
  assert_ok(par_batch_put_in(bt, c, "k", 1, "v", 1));
  assert_par(par_write_volume(v1, bt, 0), PAR_EINVAL); /* c is of v2 */
  par_batch_clear(bt);
  assert_ok(par_batch_put(bt, "k", 1, "v", 1));
  assert_par(par_write_volume(v1, bt, 0), PAR_EINVAL); /* no region */
  par_batch_clear(bt);
  /* Nothing of the refused batches was applied. */
  size_t len;
  char buf[8];
  assert_par(par_get(a, NULL, "k", 1, buf, sizeof buf, &len), PAR_NOT_FOUND);
  assert_par(par_get(b, NULL, "k", 1, buf, sizeof buf, &len), PAR_NOT_FOUND);
  par_snapshot *s[2];
  par_region *mixed[2] = {a, c};
  assert_par(par_snapshot_create_many(2, mixed, s), PAR_EINVAL);
  assert_par(par_snapshot_create_many(0, mixed, s), PAR_EINVAL);
  /* A region closed after its op was added. */
  par_region *d;
  assert_ok(par_region_open(v1, "d", 1, &d));
  assert_ok(par_batch_put_in(bt, a, "k", 1, "v", 1));
  assert_ok(par_batch_put_in(bt, d, "k", 1, "v", 1));
  assert_ok(par_region_close(d));
  assert_par(par_write_volume(v1, bt, 0), PAR_EINVAL);
  par_batch_destroy(bt);
  assert_ok(par_region_close(a));
  assert_ok(par_region_close(b));
  assert_ok(par_region_close(c));
  assert_ok(par_close(v1));
  assert_ok(par_close(v2));
  tu_rm_rf(dir);
  free(p1);
  free(p2);
  free(dir);
}

/* ---- model test --------------------------------------------------------------- */

static void check_model(par_region **r, tu_map *m, uint64_t seed, int step) {
  static uint8_t buf[8192];
  for (int i = 0; i < NR; i++) {
    par_scanner *sc;
    assert_ok(par_scanner_open(r[i], NULL, &sc));
    assert_ok(par_scanner_seek(sc, NULL, 0, PAR_SEEK_FIRST));
    size_t n = 0;
    for (; par_scanner_valid(sc); n++) {
      const void *k, *val;
      size_t kl, vl;
      assert_ok(par_scanner_key(sc, &k, &kl));
      assert_ok(par_scanner_value(sc, &val, &vl));
      const tu_entry *e = tu_map_get(&m[i], k, kl);
      if (!e || e->vlen != vl || memcmp(e->val, val, vl) != 0)
        fail_msg("seed %llu step %d region %s: key %.*s differs from the model", (unsigned long long)seed,
                 step, NAMES[i], (int)kl, (const char *)k);
      assert_ok(par_scanner_next(sc));
    }
    par_scanner_close(sc);
    if (n != m[i].n)
      fail_msg("seed %llu step %d region %s: %zu keys, the model has %zu", (unsigned long long)seed, step,
               NAMES[i], n, m[i].n);
    for (size_t j = 0; j < m[i].n; j++) {
      size_t len;
      assert_ok(par_get(r[i], NULL, m[i].e[j].key, m[i].e[j].klen, buf, sizeof buf, &len));
      assert_int_equal(len, m[i].e[j].vlen);
    }
  }
}

static void test_model(void **state) {
  (void)state;
  uint64_t seed = tu_seed("txn_model"), rng = seed;
  char *dir = tu_make_dir("txn_model");
  char *path = tu_path(dir, "vol");
  par_options o = tu_options(128u << 10, 4);
  par_volume *v;
  par_region *r[NR];
  assert_ok(par_open(path, &o, &v));
  open_all(v, r);
  tu_map m[NR];
  for (int i = 0; i < NR; i++) tu_map_init(&m[i]);
  par_batch *b;
  assert_ok(par_batch_create(&b));
  uint8_t val[4000];
  for (int step = 0; step < 600; step++) {
    uint64_t what = tu_rand_range(&rng, 100);
    if (what < 70) {
      par_batch_clear(b);
      int ops = 1 + (int)tu_rand_range(&rng, 20);
      tu_map staged[NR];
      for (int i = 0; i < NR; i++) tu_map_copy(&staged[i], &m[i]);
      for (int k = 0; k < ops; k++) {
        int i = (int)tu_rand_range(&rng, NR);
        char key[24];
        size_t kl = (size_t)snprintf(key, sizeof key, "k%03llu", (unsigned long long)tu_rand_range(&rng, 300));
        if (tu_rand_range(&rng, 4) == 0) {
          assert_ok(par_batch_delete_in(b, r[i], key, kl));
          tu_map_del(&staged[i], key, kl);
        } else {
          uint64_t h = tu_rand(&rng);
          size_t vl = h % 20 == 0 ? 1200 + h % 2000 : h % 7 == 0 ? 200 : h % 60;
          tu_fill_pattern(val, vl, h);
          assert_ok(par_batch_put_in(b, r[i], key, kl, val, vl));
          tu_map_put(&staged[i], key, kl, val, vl);
        }
      }
      assert_ok(par_write_volume(v, b, 0));
      for (int i = 0; i < NR; i++) {
        tu_map_free(&m[i]);
        m[i] = staged[i];
      }
    } else if (what < 85) {
      int i = (int)tu_rand_range(&rng, NR);
      char key[24];
      size_t kl = (size_t)snprintf(key, sizeof key, "k%03llu", (unsigned long long)tu_rand_range(&rng, 300));
      uint64_t h = tu_rand(&rng);
      size_t vl = h % 100;
      tu_fill_pattern(val, vl, h);
      assert_ok(par_put(r[i], key, kl, val, vl, h % 3 == 0 ? PAR_NO_WAL : 0));
      tu_map_put(&m[i], key, kl, val, vl);
    } else if (what < 93) {
      assert_ok(par_flush(r[tu_rand_range(&rng, NR)]));
    } else {
      close_all(r);
      assert_ok(par_close(v));
      assert_ok(par_open(path, &o, &v));
      open_all(v, r);
    }
    if (step % 25 == 0 || what >= 93) check_model(r, m, seed, step);
  }
  check_model(r, m, seed, 600);
  par_batch_destroy(b);
  close_all(r);
  assert_ok(par_close(v));
  for (int i = 0; i < NR; i++) tu_map_free(&m[i]);
  tu_rm_rf(dir);
  free(path);
  free(dir);
}

/* ---- concurrent readers ------------------------------------------------------- */

typedef struct conc {
  par_volume *v;
  par_region *r[NR];
  atomic_int stop;
  atomic_ulong checks, batches;
  int bad;
} conc;

static void *conc_writer(void *arg) {
  conc *c = arg;
  par_batch *b;
  if (par_batch_create(&b)) abort();
  for (uint64_t i = 1; !atomic_load(&c->stop); i++) {
    par_batch_clear(b);
    char val[32];
    size_t vl = (size_t)snprintf(val, sizeof val, "%llu", (unsigned long long)i);
    for (int k = 0; k < NR; k++) {
      if (par_batch_put_in(b, c->r[k], "x", 1, val, vl)) abort();
      char key[24];
      size_t kl = (size_t)snprintf(key, sizeof key, "f%llu", (unsigned long long)(i % 500));
      if (par_batch_put_in(b, c->r[k], key, kl, val, vl)) abort();
    }
    if (par_write_volume(c->v, b, 0)) abort();
    atomic_store(&c->batches, i);
    if (i % 50 == 0 && par_put(c->r[i % NR], "single", 6, val, vl, 0)) abort();
  }
  par_batch_destroy(b);
  return NULL;
}

static void *conc_reader(void *arg) {
  conc *c = arg;
  while (!atomic_load(&c->stop)) {
    par_snapshot *s[NR];
    if (par_snapshot_create_many(NR, c->r, s)) abort();
    char first[32] = "", got[32];
    for (int k = 0; k < NR; k++) {
      size_t len = 0;
      int rc = par_get(c->r[k], s[k], "x", 1, got, sizeof got - 1, &len);
      got[rc == PAR_OK ? len : 0] = 0;
      if (k == 0) memcpy(first, got, sizeof first);
      else if (strcmp(first, got) != 0) c->bad = 1;
    }
    for (int k = 0; k < NR; k++) par_snapshot_release(s[k]);
    atomic_fetch_add(&c->checks, 1);
  }
  return NULL;
}

static void test_snapshots_see_whole_batches(void **state) {
  (void)state;
  char *dir = tu_make_dir("txn_conc");
  char *path = tu_path(dir, "vol");
  par_options o = tu_options(64u << 10, 4);
  o.durability_interval_ms = 2;
  conc c = {0};
  assert_ok(par_open(path, &o, &c.v));
  open_all(c.v, c.r);
  pthread_t w, rd[2];
  assert_int_equal(pthread_create(&w, NULL, conc_writer, &c), 0);
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&rd[i], NULL, conc_reader, &c), 0);
  struct timespec ts = {1, 500000000};
  nanosleep(&ts, NULL);
  atomic_store(&c.stop, 1);
  pthread_join(w, NULL);
  for (int i = 0; i < 2; i++) pthread_join(rd[i], NULL);
  fprintf(stderr, "%lu consistent multi-region snapshots while %lu batches committed\n",
          (unsigned long)atomic_load(&c.checks), (unsigned long)atomic_load(&c.batches));
  assert_false(c.bad);
  assert_true(atomic_load(&c.checks) > 10 && atomic_load(&c.batches) > 10);
  close_all(c.r);
  assert_ok(par_close(c.v));
  tu_rm_rf(dir);
  free(path);
  free(dir);
}

/* ---- crash cycles ------------------------------------------------------------- */

static void child_die(const char *what, int rc) {
  fprintf(stderr, "txn child: %s: %s (%s)\n", what, par_strerror(rc), par_last_error());
  _exit(3);
}

static size_t batch_key(int cycle, uint64_t i, char *out) {
  return (size_t)snprintf(out, 40, "b%03d-%010llu", cycle, (unsigned long long)i);
}

static void child_main(const char *path, const char *ack_path, const char *journal, int cycle, int ready_fd) {
  if (journal && powerloss_arm(journal) != 0) _exit(9);
  par_options o = tu_options(128u << 10, 4);
  o.durability_interval_ms = 10;
  par_volume *v;
  par_region *r[NR];
  int rc = par_open(path, &o, &v);
  for (int i = 0; !rc && i < NR; i++) rc = par_region_open(v, NAMES[i], 1, &r[i]);
  if (rc) child_die("open", rc);
  int fd = open(ack_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) _exit(5);
  if (write(ready_fd, "R", 1) != 1) _exit(7);
  par_batch *b;
  if (par_batch_create(&b)) _exit(6);
  uint8_t val[3000];
  for (uint64_t i = 1;; i++) {
    par_batch_clear(b);
    char key[40];
    size_t kl = batch_key(cycle, i, key);
    size_t vl = i % 17 == 0 ? 2500 : 16;
    tu_fill_pattern(val, vl, i);
    for (int k = 0; k < NR; k++) {
      if ((rc = par_batch_put_in(b, r[k], key, kl, val, vl))) child_die("batch", rc);
      if ((rc = par_batch_put_in(b, r[k], "counter", 7, key, kl))) child_die("batch", rc);
    }
    if ((rc = par_write_volume(v, b, 0))) child_die("write_volume", rc);
    char line[32];
    int n = snprintf(line, sizeof line, "%llu\n", (unsigned long long)i);
    if (pwrite(fd, line, (size_t)n, 0) != n) _exit(4);
    /* Single-region writes between batches interleave the regions' LSNs. */
    for (int k = 0; k < (int)(i % 4); k++)
      if ((rc = par_put(r[(i + k) % NR], "noise", 5, val, 100, k == 2 ? PAR_NO_WAL : 0))) child_die("put", rc);
  }
}

typedef struct child_args {
  const char *path, *ack_path, *journal;
  int cycle;
} child_args;

static void run_child(void *arg, int ready_fd) {
  child_args *a = arg;
  child_main(a->path, a->ack_path, a->journal, a->cycle, ready_fd);
}

/* The batches of cycle present in region r, as a bitmap up to max. */
static uint64_t present(par_region *r, int cycle, uint64_t max, uint8_t *bits, uint64_t seed) {
  uint64_t top = 0;
  char key[40];
  uint8_t buf[3000];
  for (uint64_t i = 1; i <= max; i++) {
    size_t len;
    int rc = par_get(r, NULL, key, batch_key(cycle, i, key), buf, sizeof buf, &len);
    assert_par2(rc, PAR_OK, PAR_NOT_FOUND);
    bits[i] = rc == PAR_OK;
    if (rc == PAR_OK) {
      if (len != (i % 17 == 0 ? 2500u : 16u) || !tu_check_pattern(buf, len, i))
        fail_msg("seed %llu cycle %d: batch %llu's value is damaged", (unsigned long long)seed, cycle,
                 (unsigned long long)i);
      top = i;
    }
  }
  return top;
}

static void run_cycles(const char *name, int powerloss, int cycles) {
  uint64_t seed = tu_seed(name), rng = seed;
  char *dir = tu_make_dir(name);
  char *path = tu_path(dir, "vol");
  char *ack_path = tu_path(dir, "acks");
  char *journal = powerloss ? tu_path(dir, "journal") : NULL;
  for (int cycle = 0; cycle < cycles; cycle++) {
    uint64_t delay = 30 + tu_rand_range(&rng, 500);
    child_args ca = {path, ack_path, journal, cycle};
    powerloss_stats ps;
    tu_kill_cycle(seed, cycle, run_child, &ca, delay, path, journal, tu_mix64(rng++), &ps);
    uint64_t acked = 0;
    FILE *fp = fopen(ack_path, "r");
    if (fp) {
      unsigned long long a;
      if (fscanf(fp, "%llu", &a) == 1) acked = a;
      fclose(fp);
    }
    par_options o = tu_options(128u << 10, 4);
    o.create_if_missing = 0;
    par_volume *v;
    par_region *r[NR];
    assert_ok(par_open(path, &o, &v));
    for (int i = 0; i < NR; i++) assert_ok(par_region_open(v, NAMES[i], 0, &r[i]));
    uint64_t max = acked + 1000;
    uint8_t *bits[NR];
    uint64_t top[NR];
    for (int i = 0; i < NR; i++) {
      bits[i] = calloc(max + 1, 1);
      top[i] = present(r[i], cycle, max, bits[i], seed);
    }
    for (uint64_t i = 1; i <= max; i++) {
      for (int k = 1; k < NR; k++)
        if (bits[k][i] != bits[0][i])
          fail_msg("seed %llu cycle %d: batch %llu is in region %s but not in %s", (unsigned long long)seed,
                   cycle, (unsigned long long)i, bits[0][i] ? NAMES[0] : NAMES[k], bits[0][i] ? NAMES[k] : NAMES[0]);
      if (i <= acked && !bits[0][i])
        fail_msg("seed %llu cycle %d: acknowledged batch %llu is lost", (unsigned long long)seed, cycle,
                 (unsigned long long)i);
      if (i <= top[0] && !bits[0][i])
        fail_msg("seed %llu cycle %d: batch %llu is lost but the later batch %llu is there",
                 (unsigned long long)seed, cycle, (unsigned long long)i, (unsigned long long)top[0]);
    }
    /* The counter names the same last batch everywhere. */
    char c0[40] = "", ck[40];
    for (int k = 0; k < NR; k++) {
      size_t len = 0;
      int rc = par_get(r[k], NULL, "counter", 7, ck, sizeof ck - 1, &len);
      assert_par2(rc, PAR_OK, PAR_NOT_FOUND);
      ck[rc == PAR_OK ? len : 0] = 0;
      if (k == 0) memcpy(c0, ck, sizeof c0);
      else if (strcmp(c0, ck) != 0)
        fail_msg("seed %llu cycle %d: counter is %s in %s but %s in %s", (unsigned long long)seed, cycle, c0,
                 NAMES[0], ck, NAMES[k]);
    }
    fprintf(stderr, "%s cycle %2d: killed after %3llu ms; %llu batches acknowledged, %llu recovered\n", name,
            cycle, (unsigned long long)delay, (unsigned long long)acked, (unsigned long long)top[0]);
    for (int i = 0; i < NR; i++) free(bits[i]);
    close_all(r);
    assert_ok(par_close(v));
  }
  tu_rm_rf(dir);
  free(dir);
  free(path);
  free(ack_path);
  free(journal);
}

static void test_crash(void **state) {
  (void)state;
  run_cycles("txn_crash", 0, (int)tu_env_u64("PAR_TXN_CYCLES", 8));
}

static void test_powerloss(void **state) {
  (void)state;
  run_cycles("txn_powerloss", 1, (int)tu_env_u64("PAR_TXN_CYCLES", 8));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_model),
      cmocka_unit_test(test_snapshots_see_whole_batches),
      cmocka_unit_test(test_crash),
      cmocka_unit_test(test_powerloss),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
