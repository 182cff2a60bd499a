/*
 * test_nowal.c — writes without the WAL (PAR_NO_WAL).
 *
 * The promise (parallax.h): an unlogged write is visible at once and durable
 * from the next completed flush (par_flush, an automatic L0 flush, a clean
 * close); after a crash the region holds every unlogged write made before
 * the last completed par_flush, and every logged write as usual (a prefix of
 * the log holding every synced one) — an unlogged write lost in the crash
 * leaves an LSN gap that replay must step over, not stop at.
 *
 * The crash cycles: a child writes s = 1, 2, 3 ... each to its own key,
 * one in three unlogged, some logged ones with PAR_SYNC (acknowledged to a
 * side file once they return), a par_flush every FLUSH_EVERY writes
 * (acknowledged too), with a small L0 and some medium and large values,
 * until the parent kills it (or cuts the power: io/powerloss.h). The parent
 * reopens and checks: every value is intact; the logged writes present are
 * exactly 1..P for some P at least the last synced one; every write up to
 * the last acknowledged flush is present, unlogged ones included; earlier
 * cycles' keys are all still there.
 *
 * Environment: PAR_SEED, PAR_NOWAL_CYCLES (default 8 of each kind).
 */
#define _GNU_SOURCE
#include "testutil.h"

#include "io/powerloss.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FLUSH_EVERY 2500
#define VBUF 4096

static int unlogged(uint64_t s) { return tu_mix64(s) % 3 == 0; }
static int synced(uint64_t s) { return !unlogged(s) && (tu_mix64(s) >> 8) % 32 == 0; }

static size_t key_of(int cycle, uint64_t s, char *out) {
  return (size_t)snprintf(out, 40, "c%03d-%010llu", cycle, (unsigned long long)s);
}

/* Mostly small values, some medium (transient log) and large (large log). */
static size_t value_len(uint64_t s) {
  uint64_t h = tu_mix64(s ^ 0xabcdu);
  return h % 50 == 0 ? 1500 + h % 1000 : h % 10 == 0 ? 300 : 8 + h % 60;
}

/* ---- unit tests ------------------------------------------------------------- */

static void test_flags_and_visibility(void **state) {
  (void)state;
  char *dir = tu_make_dir("nowal_unit");
  char *path = tu_path(dir, "vol");
  par_options o = tu_options(0, 0);
  par_volume *v;
  par_region *r;
  assert_ok(par_open(path, &o, &v));
  assert_ok(par_region_open(v, "r", 1, &r));
  assert_par(par_put(r, "k", 1, "v", 1, PAR_SYNC | PAR_NO_WAL), PAR_EINVAL);
  assert_par(par_put(r, "k", 1, "v", 1, 64), PAR_EINVAL);
  assert_par(par_delete(r, "k", 1, 64), PAR_EINVAL);
  par_batch *b;
  assert_ok(par_batch_create(&b));
  assert_ok(par_batch_put(b, "b", 1, "1", 1));
  assert_par(par_write(r, b, PAR_SYNC | PAR_NO_WAL), PAR_EINVAL);
  assert_ok(par_write(r, b, PAR_NO_WAL));
  par_batch_destroy(b);

  /* Unlogged and logged writes interleave; a logged sync write after
   * unlogged ones returns (its wait does not hang on the gap). */
  char key[40], val[VBUF], out[VBUF];
  for (uint64_t s = 1; s <= 3000; s++) {
    size_t kl = key_of(0, s, key), vl = value_len(s);
    tu_fill_pattern(val, vl, s);
    assert_ok(par_put(r, key, kl, val, vl, unlogged(s) ? PAR_NO_WAL : synced(s) ? PAR_SYNC : 0));
  }
  assert_ok(par_put(r, "u", 1, "x", 1, PAR_NO_WAL));
  assert_ok(par_sync(r)); /* the newest LSN is unlogged: must not wait forever */
  assert_ok(par_delete(r, "u", 1, PAR_NO_WAL));
  size_t len;
  assert_par(par_get(r, NULL, "u", 1, out, sizeof out, &len), PAR_NOT_FOUND);
  assert_ok(par_get(r, NULL, "b", 1, out, sizeof out, &len));
  par_stats st;
  assert_ok(par_region_stats(r, &st));
  uint64_t wal_bytes = st.wal_bytes_appended;
  /* An unlogged write appends nothing to the WAL; the next logged one
   * records the gap in a few bytes. */
  for (int i = 0; i < 100; i++) assert_ok(par_put(r, "big", 3, val, 1000, PAR_NO_WAL));
  assert_ok(par_region_stats(r, &st));
  assert_int_equal(st.wal_bytes_appended, wal_bytes);

  /* A clean close flushes unlogged writes: all there after reopen. */
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  assert_ok(par_open(path, &o, &v));
  assert_ok(par_region_open(v, "r", 0, &r));
  for (uint64_t s = 1; s <= 3000; s++) {
    size_t kl = key_of(0, s, key), vl = value_len(s);
    assert_ok(par_get(r, NULL, key, kl, out, sizeof out, &len));
    assert_int_equal(len, vl);
    assert_true(tu_check_pattern(out, len, s));
  }
  assert_ok(par_get(r, NULL, "big", 3, out, sizeof out, &len));
  assert_int_equal(len, 1000);
  /* Logged writes after the reopen, then a reopen without close semantics
   * being needed: replay starts past the flushed gap. */
  assert_ok(par_put(r, "after", 5, "1", 1, PAR_NO_WAL));
  assert_ok(par_flush(r));
  assert_ok(par_put(r, "after2", 6, "2", 1, PAR_SYNC));
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  assert_ok(par_open(path, &o, &v));
  assert_ok(par_region_open(v, "r", 0, &r));
  assert_ok(par_get(r, NULL, "after", 5, out, sizeof out, &len));
  assert_ok(par_get(r, NULL, "after2", 6, out, sizeof out, &len));
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  tu_rm_rf(dir);
  free(path);
  free(dir);
}

/* ---- crash cycles ----------------------------------------------------------- */

static void child_die(const char *what, int rc) {
  fprintf(stderr, "nowal child: %s: %s (%s)\n", what, par_strerror(rc), par_last_error());
  _exit(3);
}

static void ack(int fd, char kind, uint64_t s) {
  char line[64];
  int n = snprintf(line, sizeof line, "%c %llu\n", kind, (unsigned long long)s);
  if (write(fd, line, (size_t)n) != n) _exit(4);
}

static void child_main(const char *path, const char *ack_path, const char *journal, int cycle,
                       int ready_fd) {
  if (journal && powerloss_arm(journal) != 0) _exit(9);
  par_options o = tu_options(256u << 10, 4);
  o.durability_interval_ms = 20;
  par_volume *v;
  par_region *r;
  int rc = par_open(path, &o, &v);
  if (!rc) rc = par_region_open(v, "nowal", 1, &r);
  if (rc) child_die("open", rc);
  int fd = open(ack_path, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) _exit(5);
  if (write(ready_fd, "R", 1) != 1) _exit(7);
  char key[40];
  uint8_t val[VBUF];
  for (uint64_t s = 1;; s++) {
    size_t kl = key_of(cycle, s, key), vl = value_len(s);
    tu_fill_pattern(val, vl, s);
    rc = par_put(r, key, kl, val, vl, unlogged(s) ? PAR_NO_WAL : synced(s) ? PAR_SYNC : 0);
    if (rc) child_die("put", rc);
    if (synced(s)) ack(fd, 'S', s);
    if (s % FLUSH_EVERY == 0) {
      if ((rc = par_flush(r))) child_die("flush", rc);
      ack(fd, 'F', s);
    }
  }
}

static void read_acks(const char *ack_path, uint64_t *max_sync, uint64_t *max_flush) {
  *max_sync = *max_flush = 0;
  FILE *fp = fopen(ack_path, "r");
  if (!fp) return;
  char kind;
  unsigned long long s;
  while (fscanf(fp, " %c %llu", &kind, &s) == 2) {
    uint64_t *m = kind == 'S' ? max_sync : max_flush;
    if (s > *m) *m = s;
  }
  fclose(fp);
}

typedef struct child_args {
  const char *path, *ack_path, *journal;
  int cycle;
} child_args;

static void run_child(void *arg, int ready_fd) {
  child_args *a = arg;
  child_main(a->path, a->ack_path, a->journal, a->cycle, ready_fd);
}

/* Checks cycle's keys; returns how many there are. */
static uint64_t verify_cycle(par_region *r, uint64_t seed, int cycle, uint64_t max_sync,
                             uint64_t max_flush, uint64_t *unlogged_lost) {
  /* Past the last present key nothing is present: scan for it first. */
  uint64_t top = 0, count = 0;
  par_scanner *sc;
  assert_ok(par_scanner_open(r, NULL, &sc));
  char prefix[40];
  snprintf(prefix, sizeof prefix, "c%03d-", cycle);
  assert_ok(par_scanner_seek(sc, prefix, strlen(prefix), PAR_SEEK_GE));
  while (par_scanner_valid(sc)) {
    const void *k, *val;
    size_t kl, vl;
    assert_ok(par_scanner_key(sc, &k, &kl));
    if (kl < 5 || memcmp(k, prefix, 5) != 0) break;
    char digits[40] = "";
    memcpy(digits, (const char *)k + 5, kl - 5 < sizeof digits - 1 ? kl - 5 : sizeof digits - 1);
    unsigned long long s = strtoull(digits, NULL, 10);
    assert_ok(par_scanner_value(sc, &val, &vl));
    if (vl != value_len(s) || !tu_check_pattern(val, vl, s))
      fail_msg("seed %llu cycle %d: the value of write %llu is damaged (%zu bytes, %s)",
               (unsigned long long)seed, cycle, s, vl, unlogged(s) ? "unlogged" : "logged");
    top = s;
    count++;
    assert_ok(par_scanner_next(sc));
  }
  par_scanner_close(sc);
  /* P: the last logged write present; every logged write up to it is. */
  uint64_t p = 0;
  char key[40];
  uint8_t buf[VBUF];
  size_t len;
  for (uint64_t s = 1; s <= top; s++)
    if (!unlogged(s) && par_get(r, NULL, key, key_of(cycle, s, key), buf, sizeof buf, &len) == PAR_OK)
      p = s;
  *unlogged_lost = 0;
  for (uint64_t s = 1; s <= top; s++) {
    int rc = par_get(r, NULL, key, key_of(cycle, s, key), buf, sizeof buf, &len);
    assert_par2(rc, PAR_OK, PAR_NOT_FOUND);
    if (!unlogged(s) && s <= p && rc != PAR_OK)
      fail_msg("seed %llu cycle %d: logged write %llu is lost, but the later logged write %llu is "
               "there", (unsigned long long)seed, cycle, (unsigned long long)s, (unsigned long long)p);
    if (unlogged(s) && s <= max_flush && rc != PAR_OK)
      fail_msg("seed %llu cycle %d: unlogged write %llu is lost although the flush after write "
               "%llu completed", (unsigned long long)seed, cycle, (unsigned long long)s,
               (unsigned long long)max_flush);
    if (unlogged(s) && rc != PAR_OK) (*unlogged_lost)++;
  }
  if (p < max_sync)
    fail_msg("seed %llu cycle %d: synced write %llu is lost (logged writes recovered up to %llu)",
             (unsigned long long)seed, cycle, (unsigned long long)max_sync, (unsigned long long)p);
  return count;
}

static void run_cycles(const char *name, int powerloss, int cycles) {
  uint64_t seed = tu_seed(name), rng = seed;
  char *dir = tu_make_dir(name);
  char *path = tu_path(dir, "vol");
  char *ack_path = tu_path(dir, "acks");
  char *journal = powerloss ? tu_path(dir, "journal") : NULL;
  uint64_t *kept = calloc((size_t)cycles + 1, sizeof *kept);
  assert_non_null(kept);
  for (int cycle = 0; cycle < cycles; cycle++) {
    uint64_t delay = 50 + tu_rand_range(&rng, 600);
    child_args ca = {path, ack_path, journal, cycle};
    powerloss_stats ps;
    tu_kill_cycle(seed, cycle, run_child, &ca, delay, path, journal, tu_mix64(rng++), &ps);
    uint64_t max_sync, max_flush, lost;
    read_acks(ack_path, &max_sync, &max_flush);
    par_options o = tu_options(256u << 10, 4);
    o.create_if_missing = 0;
    par_volume *v;
    par_region *r;
    assert_ok(par_open(path, &o, &v));
    assert_ok(par_region_open(v, "nowal", 0, &r));
    kept[cycle] = verify_cycle(r, seed, cycle, max_sync, max_flush, &lost);
    for (int old = 0; old < cycle; old++) {
      uint64_t ms = 0, mf = 0, l;
      uint64_t now = verify_cycle(r, seed, old, ms, mf, &l);
      if (now != kept[old])
        fail_msg("seed %llu cycle %d: cycle %d's keys went from %llu to %llu", (unsigned long long)seed,
                 cycle, old, (unsigned long long)kept[old], (unsigned long long)now);
    }
    fprintf(stderr, "%s cycle %2d: killed after %3llu ms; %llu writes kept, flushed up to %llu, "
            "synced up to %llu, %llu unlogged lost\n", name, cycle, (unsigned long long)delay,
            (unsigned long long)kept[cycle], (unsigned long long)max_flush,
            (unsigned long long)max_sync, (unsigned long long)lost);
    assert_ok(par_region_close(r));
    assert_ok(par_close(v));
  }
  tu_rm_rf(dir);
  free(kept);
  free(dir);
  free(path);
  free(ack_path);
  free(journal);
}

static void test_nowal_crash(void **state) {
  (void)state;
  run_cycles("nowal_crash", 0, (int)tu_env_u64("PAR_NOWAL_CYCLES", 8));
}

static void test_nowal_powerloss(void **state) {
  (void)state;
  run_cycles("nowal_powerloss", 1, (int)tu_env_u64("PAR_NOWAL_CYCLES", 8));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flags_and_visibility),
      cmocka_unit_test(test_nowal_crash),
      cmocka_unit_test(test_nowal_powerloss),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
