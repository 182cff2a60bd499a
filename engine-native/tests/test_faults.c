/*
 * test_faults.c — I/O errors injected into the volume file's system calls
 * (src/io/fault.h): failed pwrite/pread/fdatasync/fallocate calls and short
 * writes, in the WAL, the large log, compaction, the redo log (catalog) and
 * the superblock. In every case:
 *  - the failing call (or a later one, for background work) returns an
 *    error status with a message, never PAR_OK for a sync write that did
 *    not reach the log;
 *  - reads (gets and scans) of the data written before keep working;
 *  - after a reopen without faults every acknowledged synced write is
 *    there, and no key holds bytes that are not one of its versions.
 * And a close that stops a running spill (held at its sync by the same
 * hooks) loses nothing either.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>

#include "api/internal.h"
#include "io/fault.h"
#include "kvgen.h"

#define NKEYS 600u

typedef struct fx {
  char *dir, *path;
  par_options opts;
  par_volume *vol;
  par_region *reg;
  /* Per key: versions 1..hi were attempted; lo is the newest one that must
   * be visible (acknowledged in this session, or synced before a reopen). */
  uint32_t lo[NKEYS], hi[NKEYS], synced[NKEYS];
} fx;

static uint64_t read_wait_saved; /* a test's change, undone by its teardown */

static int setup(void **state) {
  read_wait_saved = read_wait_ns;
  fx *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->dir = tu_make_dir("faults");
  f->path = tu_path(f->dir, "volume.px");
  f->opts = tu_options(256u << 10, 4);
  f->opts.durability_interval_ms = 5;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  fault_reset();
  read_wait_ns = read_wait_saved;
  if (f->reg) par_region_close(f->reg);
  if (f->vol) par_close(f->vol);
  tu_rm_rf(f->dir);
  free(f->dir);
  free(f->path);
  free(f);
  return 0;
}

static void open_all(fx *f) {
  assert_ok(par_open(f->path, &f->opts, &f->vol));
  assert_ok(par_region_open(f->vol, "main", 1, &f->reg));
}

/* Closes without expecting success: the statuses are the test's to check. */
static int close_all(fx *f) {
  int rc = f->reg ? par_region_close(f->reg) : PAR_OK;
  int rc2 = f->vol ? par_close(f->vol) : PAR_OK;
  f->reg = NULL;
  f->vol = NULL;
  return rc ? rc : rc2;
}

/* Reopens without faults: only synced versions must have survived. */
static void reopen(fx *f) {
  fault_reset();
  close_all(f);
  open_all(f);
  memcpy(f->lo, f->synced, sizeof f->lo);
}

/* Writes version hi+1 of keys [from, to); all acknowledged and synced. */
static void load(fx *f, uint32_t from, uint32_t to) {
  for (uint32_t i = from; i < to; i++) {
    assert_ok(kv_put(f->reg, i, ++f->hi[i], 0));
    f->lo[i] = f->hi[i];
  }
  assert_ok(par_sync(f->reg));
  for (uint32_t i = from; i < to; i++) f->synced[i] = f->lo[i];
}

/* Attempts a write that may fail; returns its status. */
static int try_put(fx *f, uint32_t i, unsigned flags) {
  int rc = kv_put(f->reg, i, ++f->hi[i], flags);
  if (rc == PAR_OK) {
    f->lo[i] = f->hi[i];
    if (flags & PAR_SYNC) f->synced[i] = f->hi[i];
  }
  return rc;
}

static void expect_failure(int rc, const char *what) {
  if (rc == PAR_OK) fail_msg("%s succeeded under an injected fault", what);
  if (rc != PAR_EIO && rc != PAR_EFAILED && rc != PAR_ENOSPC)
    fail_msg("%s: unexpected %s (%s)", what, par_strerror(rc), par_last_error());
  if (!*par_last_error()) fail_msg("%s: no error message", what);
}

/* Every key reads back a version in [lo, hi] (0 = absent), by get and by scan. */
static void verify(fx *f) {
  for (uint32_t i = 0; i < NKEYS; i++) {
    uint32_t v;
    int rc = kv_read(f->reg, i, &v);
    if (rc != PAR_OK && rc != PAR_NOT_FOUND)
      fail_msg("key %u: %s (%s)", i, rc == KV_WRONG ? "wrong bytes" : par_strerror(rc), par_last_error());
    if (v < f->lo[i] || v > f->hi[i])
      fail_msg("key %u holds version %u, expected %u..%u", i, v, f->lo[i], f->hi[i]);
  }
  par_scanner *s;
  assert_ok(par_scanner_open(f->reg, NULL, &s));
  assert_ok(par_scanner_seek(s, NULL, 0, PAR_SEEK_FIRST));
  uint32_t n = 0, must = 0;
  for (uint32_t i = 0; i < NKEYS; i++) must += f->lo[i] > 0;
  while (par_scanner_valid(s)) {
    const void *k, *v;
    size_t kl, vl;
    assert_ok(par_scanner_key(s, &k, &kl));
    assert_ok(par_scanner_value(s, &v, &vl));
    unsigned long long i;
    uint32_t ver;
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%.*s", (int)kl, (const char *)k);
    if (kl < 2 || memcmp(k, "kv", 2) != 0) { /* the tests' own extra keys */
      assert_ok(par_scanner_next(s));
      continue;
    }
    if (sscanf(tmp, "kv%llu", &i) != 1 || i >= NKEYS || kv_parse(i, v, vl, &ver) || ver < f->lo[i] ||
        ver > f->hi[i])
      fail_msg("scan: key %s holds a wrong value", tu_key_str(k, kl));
    n++;
    assert_ok(par_scanner_next(s));
  }
  par_scanner_close(s);
  if (n < must) fail_msg("scan returned %u keys, %u must be there", n, must);
}

static int arm(fault_op op, int err, uint64_t skip, uint64_t times, uint64_t lo, uint64_t hi) {
  fault_rule r = {op, skip, times, lo, hi, err, 0};
  int id = fault_arm(&r);
  assert_true(id >= 0);
  return id;
}

/* ---- reads that wait on the device ---------------------------------------- */

/* Once a region's reads wait, gets read leaves and scans read log values
 * with pread (docs/architecture.md, Read path): a device error there is
 * PAR_EIO for that read, with a message, and nothing else; without the
 * fault the same read succeeds and every pair is still there. */
static void test_waiting_reads_eio(void **state) {
  fx *f = *state;
  /* No relocation: GC, idle in the background, would move the big values
   * into L0, where the get below finds its key without the leaf read whose
   * failure it checks. */
  f->opts.gc_threshold_pct = 100;
  open_all(f);
  load(f, 0, NKEYS);
  enum { BIG = 40, BIG_LEN = 3000 };
  char key[16];
  uint8_t val[BIG_LEN];
  for (int i = 0; i < BIG; i++) {
    snprintf(key, sizeof key, "big%03d", i);
    memset(val, 'a' + i % 26, sizeof val);
    assert_ok(par_put(f->reg, key, strlen(key), val, sizeof val, PAR_SYNC));
  }
  assert_ok(par_flush(f->reg));
  reopen(f); /* no large value left in a tail buffer: all on the device */
  /* The warm-up after the open reads with pread in the background: one of
   * its reads took the fault armed below for the scan's (CI at 1408489). */
  region_warm_join(f->reg);
  read_wait_ns = 0; /* every read waits (the teardown restores it) */

  par_scanner *s;
  assert_ok(par_scanner_open(f->reg, NULL, &s));
  assert_ok(par_scanner_seek(s, "big", 3, PAR_SEEK_GE));
  const void *k, *v;
  size_t kl, vl;
  int id = arm(FAULT_PREAD, EIO, 0, 1, 0, 0);
  expect_failure(par_scanner_value(s, &v, &vl), "a scan's value read whose pread fails");
  assert_int_equal(fault_fired(id), 1);
  fault_reset();
  for (int i = 0; i < BIG; i++) {
    assert_ok(par_scanner_key(s, &k, &kl));
    snprintf(key, sizeof key, "big%03d", i);
    assert_int_equal(kl, strlen(key));
    assert_memory_equal(k, key, kl);
    assert_ok(par_scanner_value(s, &v, &vl));
    memset(val, 'a' + i % 26, sizeof val);
    assert_int_equal(vl, sizeof val);
    assert_memory_equal(v, val, vl);
    assert_ok(par_scanner_next(s));
  }
  par_scanner_close(s);

  size_t len;
  id = arm(FAULT_PREAD, EIO, 0, 1, 0, 0);
  expect_failure(par_get(f->reg, NULL, "big007", 6, val, sizeof val, &len), "a get whose leaf pread fails");
  assert_int_equal(fault_fired(id), 1);
  fault_reset();
  assert_ok(par_get(f->reg, NULL, "big007", 6, val, sizeof val, &len));
  assert_int_equal(len, BIG_LEN);
  assert_int_equal(val[0], 'a' + 7);
  verify(f);
}

/* ---- the write-ahead log --------------------------------------------------- */

/* No background work left: the next I/O is the one the test causes. */
static void quiesce(fx *f) { assert_ok(par_flush(f->reg)); }

static void wal_error(void **state, fault_op op) {
  fx *f = *state;
  open_all(f);
  load(f, 0, 300);
  quiesce(f);
  int id = arm(op, EIO, 0, 1, 0, 0);
  expect_failure(try_put(f, 300, PAR_SYNC), "a sync put whose log write fails");
  assert_int_equal(fault_fired(id), 1);
  /* The log accepts nothing more; what was written before stays readable. */
  expect_failure(try_put(f, 301, 0), "a put after the log failed");
  expect_failure(par_sync(f->reg), "par_sync after the log failed");
  verify(f);
  expect_failure(par_region_close(f->reg), "closing a region whose log failed");
  f->reg = NULL;
  reopen(f);
  verify(f);
  load(f, 300, NKEYS); /* a fresh log generation takes writes again */
  assert_ok(par_flush(f->reg));
  reopen(f);
  verify(f);
}

/* A power cut can lose every record of a WAL segment that the catalog
 * already lists (allocated while the segment before it was being synced):
 * replay then ends at a gap before it. The next session's segments used to
 * be listed after that dead one, so every later replay stopped at the same
 * gap and lost them, synced writes included (found by a 1,626-cycle
 * power-loss soak of test_crash). Here the dead segment is made by hand. */
static void test_wal_dead_tail(void **state) {
  fx *f = *state;
  open_all(f);
  char key[32];
  for (int i = 0; i < 100; i++) {
    snprintf(key, sizeof key, "old%03d", i);
    assert_ok(par_put(f->reg, key, strlen(key), "v", 1, PAR_SYNC));
  }
  par_stats st;
  assert_ok(par_region_stats(f->reg, &st));
  close_all(f);

  /* List a segment that starts past the log's end, as one whose records a
   * power cut lost would. */
  assert_ok(par_open(f->path, &f->opts, &f->vol));
  pthread_mutex_lock(&f->vol->meta_mu);
  region_desc *cur = catalog_find(&f->vol->cat, "main");
  region_desc d;
  assert_ok(region_desc_copy(&d, cur));
  uint32_t seg;
  assert_ok(segalloc_alloc(&f->vol->alloc, &seg));
  assert_ok(region_desc_add_wal(&d, (wal_seg){seg, d.wal_gen, st.last_lsn + 500}));
  uint64_t ticket;
  assert_ok(redolog_put_region(&f->vol->log, &d, NULL, 0, &ticket));
  assert_ok(redolog_sync(&f->vol->log, ticket));
  assert_ok(catalog_set(&f->vol->cat, &d)); /* takes d's contents */
  pthread_mutex_unlock(&f->vol->meta_mu);
  assert_ok(par_region_open(f->vol, "main", 0, &f->reg));
  for (int i = 0; i < 50; i++) {
    snprintf(key, sizeof key, "new%03d", i);
    assert_ok(par_put(f->reg, key, strlen(key), "w", 1, PAR_SYNC));
  }
  close_all(f); /* logged writes stay in the WAL: the next open replays them */

  open_all(f);
  for (int i = 0; i < 150; i++) {
    snprintf(key, sizeof key, i < 100 ? "old%03d" : "new%03d", i < 100 ? i : i - 100);
    size_t len = 0;
    char v[4];
    int rc = par_get(f->reg, NULL, key, strlen(key), v, sizeof v, &len);
    if (rc) fail_msg("synced write of %s lost after a reopen: %s", key, par_strerror(rc));
  }
}

static void test_wal_write_eio(void **state) { wal_error(state, FAULT_PWRITE); }
static void test_wal_fsync_eio(void **state) { wal_error(state, FAULT_FSYNC); }

/* Regression: after a failed WAL write the writer thread went on writing
 * the next buffer; its fdatasync then moved durable_lsn past the records
 * that were lost, and par_sync acknowledged writes that recovery could not
 * see (replay stops at the gap). Buffer 0 holds record a, buffer 1 record b;
 * the write of buffer 0 fails. Whatever par_sync says about b must hold
 * after the reopen. Repeated, since it depends on the writer's timing. */
static void test_wal_error_acks_nothing_later(void **state) {
  fx *f = *state;
  f->opts.placement = PAR_PLACEMENT_IN_PLACE; /* big values stay in the WAL record */
  size_t big = 150u << 10;
  uint8_t *val = malloc(big);
  assert_non_null(val);
  open_all(f);
  for (int round = 0; round < 12; round++) {
    char a[16], b[16];
    snprintf(a, sizeof a, "a%02d", round);
    snprintf(b, sizeof b, "b%02d", round);
    tu_fill_pattern(val, big, (uint64_t)round);
    assert_ok(par_sync(f->reg));
    assert_ok(par_put(f->reg, a, 3, val, big, 0));
    /* The WAL buffer's write (not a redo record's, such as the listing of a
     * new WAL segment, which is small) fails. */
    fault_rule wal_write = {FAULT_PWRITE, 0, 1, 0, 0, EIO, big};
    assert_true(fault_arm(&wal_write) >= 0);
    int rc = par_put(f->reg, b, 3, val, big, 0); /* seals buffer 0: its write fails */
    if (rc == PAR_OK) rc = par_sync(f->reg);
    par_region_close(f->reg);
    fault_reset();
    assert_ok(par_region_open(f->vol, "main", 0, &f->reg));
    size_t len = 0;
    int got = par_get(f->reg, NULL, b, 3, NULL, 0, &len);
    if (rc == PAR_OK && got != PAR_OK)
      fail_msg("round %d: par_sync acknowledged %s, which is gone after a reopen (%s)", round, b, par_strerror(got));
  }
  free(val);
}

/* ---- L0 out of memory ---------------------------------------------------- */

static int count_batch_keys(par_region *r, uint32_t n) {
  int found = 0;
  for (uint32_t i = 0; i < n; i++) {
    char k[16];
    snprintf(k, sizeof k, "batch%04u", i);
    size_t len;
    int rc = par_get(r, NULL, k, strlen(k), NULL, 0, &len);
    assert_true(rc == PAR_OK || rc == PAR_NOT_FOUND);
    found += rc == PAR_OK;
  }
  return found;
}

/* Regression: a batch whose WAL record was written but whose L0 insert then
 * failed (out of memory) left next_lsn where it was: the next write reused
 * its LSNs, readers saw part of the batch, and recovery stopped at the
 * duplicate LSN, losing every later write, synced ones included. Now the
 * entries are allocated before the record is written, and a failure after
 * it (a tree node) stops writes until a reopen, which applies the logged
 * batch whole. */
static void test_l0_out_of_memory(void **state) {
  fx *f = *state;
  enum { N = 200 };
  open_all(f);
  load(f, 0, 300);
  quiesce(f);
  par_batch *b;
  assert_ok(par_batch_create(&b));
  for (uint32_t i = 0; i < N; i++) {
    char k[16];
    snprintf(k, sizeof k, "batch%04u", i);
    assert_ok(par_batch_put(b, k, strlen(k), "v", 1));
  }

  /* Out of memory for an entry: nothing is logged, writes go on. */
  int id = arm(FAULT_L0_ENTRY, ENOMEM, N / 2, 1, 0, 0);
  assert_int_equal(par_write(f->reg, b, PAR_SYNC), PAR_ENOMEM);
  assert_int_equal(fault_fired(id), 1);
  fault_reset();
  assert_int_equal(count_batch_keys(f->reg, N), 0);
  assert_ok(try_put(f, 300, PAR_SYNC));

  /* Out of memory for a node after the record was logged (a batch of 200
   * into an empty L0 splits leaves). */
  assert_ok(par_flush(f->reg));
  id = arm(FAULT_L0_NODE, ENOMEM, 2, 1, 0, 0);
  int rc = par_write(f->reg, b, PAR_SYNC);
  assert_int_equal(fault_fired(id), 1);
  fault_reset();
  if (rc == PAR_OK) fail_msg("a batch whose L0 insert failed succeeded");
  int seen = count_batch_keys(f->reg, N);
  if (seen != 0) fail_msg("readers see %d of the %d keys of a failed batch", seen, N);
  try_put(f, 301, PAR_SYNC); /* refused, or acknowledged and then kept */
  par_region_close(f->reg);
  f->reg = NULL;
  reopen(f);
  verify(f);
  seen = count_batch_keys(f->reg, N);
  assert_true(seen == 0 || seen == N);
  load(f, 301, 320);
  reopen(f);
  verify(f);
  par_batch_destroy(b);
}

/* ---- the large log ------------------------------------------------------- */

static void test_large_log_write_eio(void **state) {
  fx *f = *state;
  open_all(f);
  load(f, 0, 300);
  quiesce(f);
  /* Async puts fill the large log's tail buffer; the WAL thread writes it
   * before the WAL records that point into it, and that write fails. */
  for (uint32_t i = 302; i < 320; i += 3) assert_ok(try_put(f, i, 0));
  int id = arm(FAULT_PWRITE, EIO, 0, 1, 0, 0);
  expect_failure(par_sync(f->reg), "par_sync whose large-log write fails");
  assert_int_equal(fault_fired(id), 1);
  for (uint32_t i = 302; i < 320; i += 3) f->lo[i] = f->synced[i];
  expect_failure(try_put(f, 323, PAR_SYNC), "a large put after the log failed");
  verify(f);
  reopen(f);
  verify(f);

  /* A value larger than a segment is written at once, in a run of its own. */
  size_t huge = 3u << 20;
  uint8_t *v = malloc(huge);
  assert_non_null(v);
  tu_fill_pattern(v, huge, 7);
  /* Only its value's writes, whole segments: a catalog write of the region's
   * background work (GC collects the head the failed session left) must not
   * take the fault instead. */
  fault_rule rule = {FAULT_PWRITE, 0, 1, 0, 0, EIO, PAR_SEGMENT_SIZE};
  id = fault_arm(&rule);
  assert_true(id >= 0);
  expect_failure(par_put(f->reg, "huge", 4, v, huge, PAR_SYNC), "a huge put whose write fails");
  assert_int_equal(fault_fired(id), 1);
  fault_reset();
  assert_ok(par_put(f->reg, "huge", 4, v, huge, PAR_SYNC)); /* the region goes on */
  reopen(f);
  size_t len = 0;
  uint8_t *back = malloc(huge);
  assert_non_null(back);
  assert_ok(par_get(f->reg, NULL, "huge", 4, back, huge, &len));
  assert_int_equal(len, huge);
  assert_true(tu_check_pattern(back, len, 7));
  free(back);
  free(v);
  verify(f);
  /* The run the failed put took was given back, never listed: once the
   * value that did get written is deleted too, GC frees its run. */
  assert_ok(par_delete(f->reg, "huge", 4, PAR_SYNC));
  par_stats st;
  for (int i = 0; i < 3; i++) assert_ok(par_flush(f->reg));
  assert_ok(par_region_stats(f->reg, &st));
  /* One segment holds the live large values of the other keys; a failed
   * run neither given back nor counted as garbage would stay: 3. */
  if (st.large_log_segments > 1)
    fail_msg("the large log holds %llu segments once the huge values died", (unsigned long long)st.large_log_segments);
}

/* ---- compaction (background) --------------------------------------------- */

static void compaction_error(void **state, fault_op op) {
  fx *f = *state;
  open_all(f);
  load(f, 0, 300);
  assert_ok(par_flush(f->reg)); /* L1 exists: the next flush reads it */
  load(f, 0, NKEYS);
  assert_ok(par_sync(f->reg));
  int id = arm(op, EIO, 0, 1, 0, 0);
  int first = par_flush(f->reg);
  expect_failure(first, "par_flush whose merge I/O fails");
  assert_int_equal(fault_fired(id), 1);
  /* The error stays reported; nothing was replaced; reads work. */
  assert_par(par_flush(f->reg), first);
  verify(f);
  for (uint32_t i = 0; i < 50; i++) assert_ok(try_put(f, i, 0));
  verify(f);
  /* A new region handle retries the merge. */
  assert_ok(par_region_close(f->reg));
  assert_ok(par_region_open(f->vol, "main", 0, &f->reg));
  assert_ok(par_flush(f->reg));
  verify(f);
  assert_ok(par_sync(f->reg));
  memcpy(f->synced, f->lo, sizeof f->lo);
  reopen(f);
  verify(f);
}

static void test_compaction_write_eio(void **state) { compaction_error(state, FAULT_PWRITE); }
static void test_compaction_fsync_eio(void **state) { compaction_error(state, FAULT_FSYNC); }
static void test_compaction_read_eio(void **state) { compaction_error(state, FAULT_PREAD); }

/* ---- a close while a merge runs ------------------------------------------- */

typedef struct held_merge {
  par_region *r;
  int spill;      /* hold a spill of L1 (else a flush)                  */
  int armed;      /* hold the next such merge (else let it through)      */
  int held;       /* a merge reached a sync and waited there             */
  int saw_close;  /* ... until the region was closing                    */
  uint64_t root;  /* L2's root when the held spill started (0: none)     */
} held_merge;

/* On the compaction thread, at the first call observed (fault_observe_*)
 * in the merge asked for: waits, 10 s at most, for the close. */
static void hold_until_close(void *arg) {
  held_merge *h = arg;
  char name[16];
  if (pthread_getname_np(pthread_self(), name, sizeof name) || strcmp(name, "par-compaction") != 0) return;
  pthread_mutex_lock(&h->r->view_mu);
  int spilling = h->r->view->tree[1][1] != NULL; /* one worker: the running task */
  uint64_t root = h->r->view->tree[2][0] ? h->r->view->tree[2][0]->d.root : 0;
  pthread_mutex_unlock(&h->r->view_mu);
  if (spilling != h->spill || !__atomic_load_n(&h->armed, __ATOMIC_SEQ_CST) ||
      __atomic_exchange_n(&h->held, 1, __ATOMIC_SEQ_CST))
    return;
  h->root = root;
  for (int i = 0; i < 1000 && !__atomic_load_n(&h->r->closing, __ATOMIC_RELAXED); i++) tu_sleep_ms(10);
  __atomic_store_n(&h->saw_close, __atomic_load_n(&h->r->closing, __ATOMIC_RELAXED), __ATOMIC_SEQ_CST);
}

/* Waits until the merge is held, or no merge runs or is due (10 s at
 * most): a write or flush meanwhile would wait behind the held merge. */
static int held_or_idle(held_merge *h) {
  for (int i = 0; i < 1000; i++) {
    if (__atomic_load_n(&h->held, __ATOMIC_SEQ_CST)) return 1;
    pthread_mutex_lock(&h->r->view_mu);
    int busy = h->r->comp.running || h->r->comp.inflight || compaction_pending(h->r) || atomic_load(&h->r->freeze_wanted) ||
               __atomic_load_n(&h->r->comp.queued, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&h->r->view_mu);
    if (!busy) return 0;
    tu_sleep_ms(10);
  }
  return __atomic_load_n(&h->held, __ATOMIC_SEQ_CST);
}

/* The tests' own keys (verify skips them): sp000000.. with 400-byte values. */
static void put_spill_keys(par_region *r, uint32_t from, uint32_t to) {
  uint8_t v[400];
  char k[16];
  for (uint32_t i = from; i < to; i++) {
    snprintf(k, sizeof k, "sp%06u", i);
    memset(v, (int)(i % 251), sizeof v);
    assert_ok(par_put(r, k, strlen(k), v, sizeof v, 0));
  }
}

static void check_spill_keys(par_region *r, uint32_t n) {
  uint8_t v[400], want[400];
  char k[16];
  for (uint32_t i = 0; i < n; i++) {
    size_t len = 0;
    snprintf(k, sizeof k, "sp%06u", i);
    assert_ok(par_get(r, NULL, k, strlen(k), v, sizeof v, &len));
    memset(want, (int)(i % 251), sizeof want);
    if (len != sizeof v || memcmp(v, want, sizeof v) != 0) fail_msg("%s holds a wrong value", k);
  }
}

/* Loads rounds of new keys, each flushed into L1 by a worker (par_flush
 * would wait for the spill), until L1 outgrows its capacity and a spill
 * after a round's flush is held; a spill that starts while a round writes
 * is let through (the writes would wait for it). Returns the keys written. */
static uint32_t spill_held(fx *f, held_merge *h) {
  uint32_t n = 0;
  for (int round = 0; round < 100; round++) {
    put_spill_keys(f->reg, n, n + 100);
    n += 100;
    __atomic_store_n(&h->armed, 1, __ATOMIC_SEQ_CST);
    atomic_store(&f->reg->freeze_wanted, 1);
    compaction_schedule(f->reg);
    if (held_or_idle(h)) break;
    __atomic_store_n(&h->armed, 0, __ATOMIC_SEQ_CST);
  }
  assert_true(__atomic_load_n(&h->held, __ATOMIC_SEQ_CST));
  return n;
}

/* A close during a spill, held at its first read of the trees (stop: 1) or
 * at the sync of its new tree (stop: 0): a spill in its first half stops
 * before its commit, the catalog keeps the levels it had, and the next
 * session spills again; one past half finishes. Either way the close makes
 * every acknowledged write durable. Before, every spill finished first: a
 * close after a load waited for a merge of the whole last level (11 s at
 * 20 M records). */
static void close_during_spill(void **state, int stop) {
  fx *f = *state;
  f->opts = tu_options(64u << 10, 2); /* L1 holds 128 KiB: it spills soon */
  open_all(f);
  load(f, 0, NKEYS);
  held_merge h = {.r = f->reg, .spill = 1};
  if (stop) fault_observe_reads(hold_until_close, &h);
  else fault_observe_syncs(hold_until_close, &h);
  uint32_t n = spill_held(f, &h);
  assert_ok(par_region_close(f->reg));
  f->reg = NULL;
  fault_reset();
  assert_true(h.saw_close);
  const region_desc *d = catalog_find(&f->vol->cat, "main");
  if (stop) assert_true(d->level[2][0].root == h.root); /* the spill recorded nothing */
  else assert_true(d->level[2][0].root != h.root);
  reopen(f);
  verify(f);
  check_spill_keys(f->reg, n);
  assert_ok(par_compact(f->reg)); /* a stopped spill, redone, and the rest */
  assert_true(catalog_find(&f->vol->cat, "main")->level[2][0].root != h.root);
  reopen(f);
  verify(f);
  check_spill_keys(f->reg, n);
}

static void test_close_stops_early_spill(void **state) { close_during_spill(state, 1); }
static void test_close_finishes_late_spill(void **state) { close_during_spill(state, 0); }

/* A close waits for a running flush (it is what bounds the WAL a reopen
 * replays): held at its sync until the close began, it still commits. */
static void test_close_waits_for_flush(void **state) {
  fx *f = *state;
  open_all(f);
  load(f, 0, 300);
  assert_ok(par_flush(f->reg));
  load(f, 0, NKEYS);
  uint64_t covered = catalog_find(&f->vol->cat, "main")->covered_lsn;
  held_merge h = {.r = f->reg, .armed = 1};
  fault_observe_syncs(hold_until_close, &h);
  /* A worker freezes L0 and merges it (as when the memory budget asks);
   * par_flush would wait for the merge. */
  atomic_store(&f->reg->freeze_wanted, 1);
  compaction_schedule(f->reg);
  assert_true(held_or_idle(&h));
  assert_ok(par_region_close(f->reg));
  f->reg = NULL;
  fault_reset();
  assert_true(h.saw_close);
  assert_true(catalog_find(&f->vol->cat, "main")->covered_lsn > covered); /* committed */
  reopen(f);
  verify(f);
}

/* ---- the catalog (redo log) and the superblock --------------------------- */

static void catalog_error(void **state, fault_op op) {
  fx *f = *state;
  open_all(f);
  load(f, 0, 300);
  quiesce(f);
  uint64_t lo = 0, hi = 0;
  if (op == FAULT_PWRITE) { /* the segment the next redo record goes to */
    pthread_mutex_lock(&f->vol->meta_mu);
    lo = seg_offset(f->vol->log.segs.v[f->vol->log.segs.n - 1]);
    pthread_mutex_unlock(&f->vol->meta_mu);
    hi = lo + PAR_SEGMENT_SIZE;
  }
  int id = arm(op, EIO, 0, 1, lo, hi);
  expect_failure(par_region_create(f->vol, "second"), "a region create whose redo record fails");
  assert_int_equal(fault_fired(id), 1);
  /* Whether that record is durable is unknown: the catalog takes no more
   * changes, and no space is handed out, until the volume is reopened. */
  fault_reset();
  assert_par(par_region_create(f->vol, "third"), PAR_EFAILED);
  for (uint32_t i = 0; i < 20; i++) assert_ok(try_put(f, i, 0)); /* the WAL segment has room */
  assert_par(par_flush(f->reg), PAR_EFAILED); /* a merge gets no segment */
  verify(f);
  expect_failure(close_all(f), "closing a volume whose catalog failed");
  open_all(f);
  memcpy(f->lo, f->synced, sizeof f->lo);
  verify(f);
  par_region *third;
  assert_par(par_region_open(f->vol, "third", 0, &third), PAR_ENOENT);
  load(f, 300, NKEYS);
  assert_ok(par_flush(f->reg));
  reopen(f);
  verify(f);
}

static void test_catalog_write_eio(void **state) { catalog_error(state, FAULT_PWRITE); }
static void test_catalog_fsync_eio(void **state) { catalog_error(state, FAULT_FSYNC); }

static void test_superblock_write_eio(void **state) {
  fx *f = *state;
  open_all(f);
  load(f, 0, NKEYS);
  assert_ok(par_flush(f->reg));
  assert_ok(par_region_close(f->reg));
  f->reg = NULL;
  /* par_close checkpoints: a new redo stream, then the superblock flip. */
  int id = arm(FAULT_PWRITE, EIO, 0, 1, 0, 2 * PAR_BLOCK);
  expect_failure(par_close(f->vol), "par_close whose superblock write fails");
  f->vol = NULL;
  assert_int_equal(fault_fired(id), 1);
  /* par_open checkpoints too. */
  id = arm(FAULT_PWRITE, EIO, 0, 1, 0, 2 * PAR_BLOCK);
  expect_failure(par_open(f->path, &f->opts, &f->vol), "par_open whose superblock write fails");
  assert_int_equal(fault_fired(id), 1);
  reopen(f);
  verify(f);
}

/* ---- space ---------------------------------------------------------------- */

static void test_fallocate_enospc(void **state) {
  fx *f = *state;
  open_all(f);
  load(f, 0, 100);
  quiesce(f);
  /* 40 MiB need a run of 20 segments: more than the volume has, so it must grow. */
  size_t huge = 40u << 20;
  uint8_t *v = malloc(huge);
  assert_non_null(v);
  tu_fill_pattern(v, huge, 9);
  int id = arm(FAULT_FALLOCATE, ENOSPC, 0, 0, 0, 0);
  assert_par(par_put(f->reg, "huge", 4, v, huge, PAR_SYNC), PAR_ENOSPC);
  assert_true(fault_fired(id) >= 1);
  load(f, 100, 300); /* what fits in the volume still does */
  verify(f);
  fault_reset();
  assert_ok(par_put(f->reg, "huge", 4, v, huge, PAR_SYNC));
  reopen(f);
  verify(f);
  size_t len = 0;
  assert_ok(par_get(f->reg, NULL, "huge", 4, v, huge, &len));
  assert_int_equal(len, huge);
  assert_true(tu_check_pattern(v, len, 9));
  free(v);
}

static void test_short_writes(void **state) {
  fx *f = *state;
  open_all(f);
  load(f, 0, 300);
  quiesce(f);
  /* A short write alone is retried (the writes here span several blocks). */
  int id = arm(FAULT_PWRITE, 0, 0, 1, 0, 0);
  load(f, 300, 330);
  assert_int_equal(fault_fired(id), 1);
  fault_reset();
  /* A disk that fills mid-write: part of the bytes, then ENOSPC. */
  arm(FAULT_PWRITE, 0, 0, 1, 0, 0);
  arm(FAULT_PWRITE, ENOSPC, 0, 1, 0, 0);
  for (uint32_t i = 330; i < 360; i++) assert_ok(try_put(f, i, 0));
  expect_failure(par_sync(f->reg), "par_sync whose write runs out of space");
  verify(f);
  reopen(f);
  verify(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_wal_dead_tail, setup, teardown),
      cmocka_unit_test_setup_teardown(test_waiting_reads_eio, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wal_write_eio, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wal_fsync_eio, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wal_error_acks_nothing_later, setup, teardown),
      cmocka_unit_test_setup_teardown(test_l0_out_of_memory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_large_log_write_eio, setup, teardown),
      cmocka_unit_test_setup_teardown(test_compaction_write_eio, setup, teardown),
      cmocka_unit_test_setup_teardown(test_compaction_fsync_eio, setup, teardown),
      cmocka_unit_test_setup_teardown(test_compaction_read_eio, setup, teardown),
      cmocka_unit_test_setup_teardown(test_close_stops_early_spill, setup, teardown),
      cmocka_unit_test_setup_teardown(test_close_finishes_late_spill, setup, teardown),
      cmocka_unit_test_setup_teardown(test_close_waits_for_flush, setup, teardown),
      cmocka_unit_test_setup_teardown(test_catalog_write_eio, setup, teardown),
      cmocka_unit_test_setup_teardown(test_catalog_fsync_eio, setup, teardown),
      cmocka_unit_test_setup_teardown(test_superblock_write_eio, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fallocate_enospc, setup, teardown),
      cmocka_unit_test_setup_teardown(test_short_writes, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
