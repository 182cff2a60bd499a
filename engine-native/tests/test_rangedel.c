/*
 * test_rangedel.c — range deletes (par_delete_range).
 *
 *  rd_reads     keys of all three size classes, some range tombstones over
 *               them (overlapping, adjacent, in a batch followed by a put
 *               inside the range): gets, par_exists, par_multi_get and
 *               scans forward and backward (every seek mode) agree with a
 *               reference map while the tombstones sit in L0, in an upper
 *               level, after a reopen (WAL replay) and after par_compact,
 *               which drops them at the last level; a snapshot taken
 *               before the range deletes keeps seeing the keys.
 *  rd_snapshot  snapshots taken before and after a range delete, and the
 *               latest state, across flushes and compactions.
 *  rd_gc        large values hidden only by a range tombstone become
 *               garbage that GC reclaims, also when GC runs while the
 *               tombstone is still in L0 (its liveness check must count
 *               them dead, or a relocation would bring them back), and
 *               live values in the same segments survive.
 *  rd_bad_input NULL and malformed bounds, begin > end, an empty range, and
 *               the per-region budget of live range tombstones (PAR_ELIMIT,
 *               back under it after par_compact).
 *  rd_txn       range deletes in a cross-region batch, across a reopen.
 *  rd_format    volumes of the previous formats (3, 4) still open and become
 *               the current one (5); a later format is refused with
 *               PAR_ENOTVOLUME.
 *
 * Environment: PAR_SEED.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "api/internal.h"
#include "util/coding.h"
#include "util/crc32c.h"

static size_t rd_key(uint32_t i, char *out) { return (size_t)snprintf(out, 32, "rd-%06u", i); }

/* Small, medium and large values by key. */
static size_t rd_value(uint32_t i, uint32_t ver, uint8_t *out) {
  static const size_t sizes[3] = {40, 400, 3000};
  size_t len = sizes[(i + ver) % 3] + i % 17;
  tu_fill_pattern(out, len, (uint64_t)i << 20 | ver);
  return len;
}

typedef struct fixture {
  char *dir, *path;
  par_options o;
  par_volume *v;
  par_region *r;
  tu_map ref;
} fixture;

static void fx_open(fixture *f, int create) {
  assert_ok(par_open(f->path, &f->o, &f->v));
  assert_ok(par_region_open(f->v, "rd", create, &f->r));
}

static void fx_close(fixture *f) {
  assert_ok(par_region_close(f->r));
  assert_ok(par_close(f->v));
}

static void fx_init(fixture *f, const char *name) {
  memset(f, 0, sizeof *f);
  f->dir = tu_make_dir(name);
  f->path = tu_path(f->dir, "rd.px");
  f->o = tu_options(256u << 10, 4);
  f->o.gc_threshold_pct = 10;
  tu_map_init(&f->ref);
  fx_open(f, 1);
}

static void fx_done(fixture *f) {
  fx_close(f);
  tu_map_free(&f->ref);
  tu_rm_rf(f->dir);
  free(f->dir);
  free(f->path);
}

static void put(fixture *f, uint32_t i, uint32_t ver) {
  char k[32];
  uint8_t v[4096];
  size_t kl = rd_key(i, k), vl = rd_value(i, ver, v);
  assert_ok(par_put(f->r, k, kl, v, vl, 0));
  tu_map_put(&f->ref, k, kl, v, vl);
}

static void del_range(fixture *f, uint32_t from, uint32_t to) {
  char b[32], e[32];
  size_t bl = rd_key(from, b), el = rd_key(to, e);
  assert_ok(par_delete_range(f->r, b, bl, e, el, 0));
  tu_map_del_range(&f->ref, b, bl, e, el);
}

/* Every way of reading agrees with ref: tu_verify_region (scan and gets),
 * par_exists and par_multi_get of every key id below n, and reverse scans
 * from the end and from keys inside and around the ranges. */
static void check(fixture *f, const par_snapshot *snap, const tu_map *ref, uint32_t n, const char *when) {
  char err[600];
  if (tu_verify_region(f->r, snap, ref, err, sizeof err)) fail_msg("%s: %s", when, err);
  par_snapshot *own = NULL;
  if (!snap) assert_ok(par_snapshot_create(f->r, &own));
  const par_snapshot *s = snap ? snap : own;
  enum { BATCH = 256 };
  char keys[BATCH][32];
  const void *kp[BATCH], *vals[BATCH];
  size_t kl[BATCH], vl[BATCH];
  int st[BATCH];
  for (uint32_t base = 0; base < n; base += BATCH) {
    uint32_t m = n - base < BATCH ? n - base : BATCH;
    for (uint32_t j = 0; j < m; j++) {
      kl[j] = rd_key(base + j, keys[j]);
      kp[j] = keys[j];
    }
    assert_ok(par_multi_get((par_snapshot *)s, m, kp, kl, vals, vl, st));
    for (uint32_t j = 0; j < m; j++) {
      const tu_entry *e = tu_map_get(ref, keys[j], kl[j]);
      if (st[j] != (e ? PAR_OK : PAR_NOT_FOUND))
        fail_msg("%s: multi-get %s = %s", when, keys[j], par_strerror(st[j]));
      if (e && (vl[j] != e->vlen || memcmp(vals[j], e->val, vl[j])))
        fail_msg("%s: multi-get %s: value differs", when, keys[j]);
      if (par_exists(f->r, snap, keys[j], kl[j]) != st[j]) fail_msg("%s: exists %s", when, keys[j]);
    }
  }
  /* Backwards: from the end, and from every 7th key id with LE and LT. */
  par_scanner *sc;
  assert_ok(par_scanner_open(f->r, snap, &sc));
  for (uint32_t from = 0; from <= n + 7; from += 7) {
    char k[32];
    size_t klen = rd_key(from, k);
    par_seek_mode mode = from > n ? PAR_SEEK_LAST : from % 2 ? PAR_SEEK_LE : PAR_SEEK_LT;
    assert_ok(par_scanner_seek(sc, k, klen, mode));
    long pos = mode == PAR_SEEK_LAST ? (long)ref->n - 1
               : (long)tu_map_lower_bound(ref, k, klen, mode == PAR_SEEK_LE) - 1;
    for (int step = 0; step < 40; step++, pos--) {
      if (pos < 0) {
        if (par_scanner_valid(sc)) fail_msg("%s: reverse scan from %s goes past the first key", when, k);
        break;
      }
      if (!par_scanner_valid(sc)) fail_msg("%s: reverse scan from %s ends early", when, k);
      const void *sk, *sv;
      size_t skl, svl;
      assert_ok(par_scanner_key(sc, &sk, &skl));
      const tu_entry *e = &ref->e[pos];
      if (tu_key_cmp(sk, skl, e->key, e->klen))
        fail_msg("%s: reverse scan from %s: %s, expected %s", when, k, tu_key_str(sk, skl),
                 tu_key_str(e->key, e->klen));
      assert_ok(par_scanner_value(sc, &sv, &svl));
      if (svl != e->vlen || memcmp(sv, e->val, svl)) fail_msg("%s: reverse scan: value of %s", when, k);
      assert_ok(par_scanner_prev(sc));
    }
  }
  par_scanner_close(sc);
  par_snapshot_release(own);
}

/* Range tombstones in the region's current trees and L0s. */
static uint32_t live_range_tombstones(par_region *r) {
  uint64_t lsn;
  view *w = region_acquire_view(r, &lsn);
  uint32_t n = w->active->nrtombs + (w->frozen ? w->frozen->nrtombs : 0);
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++)
      if (w->tree[i][j]) n += w->tree[i][j]->d.rtombs.n;
  view_unref(w);
  return n;
}

/* The root of L1's active tree (0: no entries), which must exist. */
static uint64_t l1_root(par_region *r) {
  uint64_t lsn;
  view *w = region_acquire_view(r, &lsn);
  assert_non_null(w->tree[1][0]);
  uint64_t root = w->tree[1][0]->d.root;
  view_unref(w);
  return root;
}

static void test_rd_reads(void **state) {
  (void)state;
  fixture fx, *f = &fx;
  fx_init(f, "rd_reads");
  enum { N = 3000 };
  for (uint32_t i = 0; i < N; i++) put(f, i, 1);
  assert_ok(par_flush(f->r)); /* the keys in L1 */
  par_snapshot *before;
  assert_ok(par_snapshot_create(f->r, &before));
  tu_map before_ref;
  tu_map_copy(&before_ref, &f->ref);

  /* In L0: overlapping, adjacent and nested ranges, a batch whose put
   * inside its range survives it, and keys rewritten after a range delete. */
  del_range(f, 100, 400);
  del_range(f, 300, 500);
  del_range(f, 500, 520);
  del_range(f, 1000, 1001);
  del_range(f, 2000, 2999);
  del_range(f, 2100, 2200);
  for (uint32_t i = 2150; i < 2160; i++) put(f, i, 2);
  char b[32], e[32];
  size_t bl = rd_key(1500, b), el = rd_key(1600, e);
  par_batch *batch;
  assert_ok(par_batch_create(&batch));
  assert_ok(par_batch_delete_range(batch, b, bl, e, el));
  uint8_t v[4096];
  size_t vl = rd_value(1550, 3, v);
  char k[32];
  size_t kl = rd_key(1550, k);
  assert_ok(par_batch_put(batch, k, kl, v, vl));
  assert_ok(par_write(f->r, batch, 0));
  par_batch_destroy(batch);
  tu_map_del_range(&f->ref, b, bl, e, el);
  tu_map_put(&f->ref, k, kl, v, vl);
  /* A begin equal to its end deletes nothing. */
  assert_ok(par_delete_range(f->r, k, kl, k, kl, 0));
  check(f, NULL, &f->ref, N + 10, "tombstones in L0");
  check(f, before, &before_ref, N + 10, "snapshot before the range deletes");
  par_snapshot_release(before);
  tu_map_free(&before_ref);

  fx_close(f); /* unflushed: the reopen replays them from the WAL */
  fx_open(f, 0);
  check(f, NULL, &f->ref, N + 10, "after a reopen (WAL replay)");

  assert_ok(par_flush(f->r)); /* into L1, the last level: covered entries and tombstones dropped */
  check(f, NULL, &f->ref, N + 10, "after a flush");
  /* Tombstones above older data: enough small pairs to spill L1 (1 MiB)
   * into L2, all compacted into L2; then range deletes flushed into L1,
   * which keeps them for L2. */
  for (uint32_t i = N; i < 8 * N; i++) put(f, i, 3 + (3 - i % 3) % 3); /* (i + ver) % 3 == 0: small */
  assert_ok(par_compact(f->r));
  par_stats st;
  assert_ok(par_region_stats(f->r, &st));
  assert_true(st.levels >= 2);
  del_range(f, N + 10, N + 900);
  del_range(f, 5 * N, 6 * N);
  for (uint32_t i = N + 20; i < N + 30; i++) put(f, i, 4);
  assert_ok(par_flush(f->r));
  assert_true(live_range_tombstones(f->r) >= 2); /* in L1, above L2 */
  check(f, NULL, &f->ref, 8 * N + 10, "after flushing tombstones over a deeper level");
  fx_close(f);
  fx_open(f, 0);
  assert_true(live_range_tombstones(f->r) >= 2);
  check(f, NULL, &f->ref, 8 * N + 10, "after a reopen with tombstones in the levels");
  assert_ok(par_compact(f->r));
  check(f, NULL, &f->ref, 8 * N + 10, "after par_compact");
  assert_int_equal(live_range_tombstones(f->r), 0);
  /* A flush of range tombstones alone over the compacted level: L1 is a
   * tree of tombstones without entries (root 0), kept across a reopen. */
  del_range(f, 7 * N, 7 * N + 500);
  assert_ok(par_flush(f->r));
  assert_int_equal(l1_root(f->r), 0);
  assert_int_equal(live_range_tombstones(f->r), 1);
  fx_close(f);
  fx_open(f, 0);
  assert_int_equal(live_range_tombstones(f->r), 1);
  check(f, NULL, &f->ref, 8 * N + 10, "a tree of range tombstones alone, after a reopen");
  fx_done(f);
}

/* The snapshot taken before the range deletes keeps the keys across flushes
 * and compactions (its view holds the trees it started with). */
static void test_rd_snapshot(void **state) {
  (void)state;
  fixture fx, *f = &fx;
  fx_init(f, "rd_snapshot");
  enum { N = 2000 };
  for (uint32_t i = 0; i < N; i++) put(f, i, 1);
  par_snapshot *before;
  assert_ok(par_snapshot_create(f->r, &before));
  tu_map before_ref;
  tu_map_copy(&before_ref, &f->ref);
  del_range(f, 0, N / 2);
  par_snapshot *after;
  assert_ok(par_snapshot_create(f->r, &after));
  tu_map after_ref;
  tu_map_copy(&after_ref, &f->ref);
  for (uint32_t i = 10; i < 20; i++) put(f, i, 2); /* after both snapshots */
  for (int round = 0; round < 2; round++) {
    check(f, before, &before_ref, N, "snapshot before");
    check(f, after, &after_ref, N, "snapshot after");
    check(f, NULL, &f->ref, N, "latest");
    assert_ok(par_compact(f->r));
  }
  par_snapshot_release(before);
  par_snapshot_release(after);
  tu_map_free(&before_ref);
  tu_map_free(&after_ref);
  fx_done(f);
}

/* ---- rd_gc ---- */

static size_t big_value(uint32_t i, uint32_t ver, uint8_t *out) {
  size_t len = 2000 + (i * 7919u + ver) % 3000;
  tu_fill_pattern(out, len, (uint64_t)i << 20 | ver);
  return len;
}

/* Keys below deleted_below are absent, odd keys hold version 2, even ones version 1. */
static void check_big(par_region *r, uint32_t n, uint32_t deleted_below, const char *when) {
  uint8_t *buf = malloc(8192), *want = malloc(8192);
  for (uint32_t i = 0; i < n; i++) {
    char k[32];
    size_t kl = rd_key(i, k), len = 0;
    int rc = par_get(r, NULL, k, kl, buf, 8192, &len);
    if (i < deleted_below) {
      if (rc != PAR_NOT_FOUND) fail_msg("%s: %s deleted by a range is back (%s)", when, k, par_strerror(rc));
      continue;
    }
    size_t wl = big_value(i, i % 2 ? 2 : 1, want);
    if (rc != PAR_OK || len != wl || memcmp(buf, want, wl))
      fail_msg("%s: %s: %s, %zu bytes (expected %zu)", when, k, par_strerror(rc), len, wl);
  }
  free(buf);
  free(want);
}

/* Waits (up to 20 s) until the region has no merge or collection left to do. */
static void wait_idle(par_region *r) {
  for (int i = 0; i < 2000; i++) {
    pthread_mutex_lock(&r->view_mu);
    int busy = compaction_busy(r);
    pthread_mutex_unlock(&r->view_mu);
    if (!busy) return;
    if (i % 50 == 0) compaction_schedule(r);
    usleep(10000);
  }
}

static int l0_frozen(par_region *r) {
  pthread_mutex_lock(&r->cur_mu);
  int frozen = r->view->frozen != NULL;
  pthread_mutex_unlock(&r->cur_mu);
  return frozen;
}

static void test_rd_gc(void **state) {
  (void)state;
  fixture fx, *f = &fx;
  fx_init(f, "rd_gc");
  enum { N = 4000 };
  uint8_t *val = malloc(8192);
  char k[32];
  for (uint32_t i = 0; i < N; i++) assert_ok(par_put(f->r, k, rd_key(i, k), val, big_value(i, 1, val), 0));
  assert_ok(par_flush(f->r));
  /* Overwrites of the odd keys make every segment half garbage once merged.
   * Small pairs of other keys then fill L0 until it freezes; at once the
   * range delete goes into the fresh L0, so that GC, which runs after the
   * merge of the frozen one, finds the even keys of the first quarter dead
   * by a tombstone in L0 only: its liveness check must see that. */
  for (uint32_t i = 1; i < N; i += 2) assert_ok(par_put(f->r, k, rd_key(i, k), val, big_value(i, 2, val), 0));
  for (uint32_t i = 0; !l0_frozen(f->r); i++) {
    assert_true(i < 1000000);
    assert_ok(par_put(f->r, k, (size_t)snprintf(k, sizeof k, "rf%06u", i), val, 100, 0));
  }
  par_stats st;
  assert_ok(par_region_stats(f->r, &st));
  uint64_t runs_before = st.gc_runs;
  char b[32], e[32];
  assert_ok(par_delete_range(f->r, b, rd_key(0, b), e, rd_key(N / 4, e), 0));
  wait_idle(f->r);
  assert_ok(par_region_stats(f->r, &st));
  fprintf(stderr, "rd_gc: with the tombstone in L0: %llu GC runs (%llu before the range delete), %llu "
          "segments freed, %llu bytes relocated\n", (unsigned long long)st.gc_runs, (unsigned long long)runs_before,
          (unsigned long long)st.gc_segments_freed, (unsigned long long)st.gc_bytes_relocated);
  check_big(f->r, N, N / 4, "GC with the tombstone in L0");
  fx_close(f);
  fx_open(f, 0);
  check_big(f->r, N, N / 4, "after a reopen");
  /* The merges drop the covered values: their records become garbage. */
  assert_ok(par_compact(f->r));
  wait_idle(f->r);
  assert_ok(par_flush(f->r));
  wait_idle(f->r);
  check_big(f->r, N, N / 4, "after par_compact and GC");
  assert_ok(par_region_stats(f->r, &st));
  uint64_t live = 0;
  for (uint32_t i = N / 4; i < N; i++) live += big_value(i, i % 2 ? 2 : 1, val) + 32;
  uint64_t bound = (uint64_t)(live / 0.9) + 2 * (uint64_t)PAR_SEGMENT_SIZE;
  fprintf(stderr, "rd_gc: large log %llu segments (%.1f MiB) for %.1f MiB live (bound %.1f MiB)\n",
          (unsigned long long)st.large_log_segments, st.large_log_segments * 2.0, live / 1048576.0,
          bound / 1048576.0);
  if (st.large_log_segments * (uint64_t)PAR_SEGMENT_SIZE > bound)
    fail_msg("values deleted by a range were not reclaimed: %llu segments", (unsigned long long)st.large_log_segments);
  fx_close(f);
  fx_open(f, 0);
  check_big(f->r, N, N / 4, "after the last reopen");
  free(val);
  fx_done(f);
}

/* ---- rd_bad_input ---- */

static void test_rd_bad_input(void **state) {
  (void)state;
  fixture fx, *f = &fx;
  fx_init(f, "rd_bad");
  char big[PAR_MAX_KEY_SIZE + 1];
  memset(big, 'z', sizeof big);
  assert_par(par_delete_range(NULL, "a", 1, "b", 1, 0), PAR_EINVAL);
  assert_par(par_delete_range(f->r, NULL, 1, "b", 1, 0), PAR_EINVAL);
  assert_par(par_delete_range(f->r, "a", 1, NULL, 1, 0), PAR_EINVAL);
  assert_par(par_delete_range(f->r, "a", 0, "b", 1, 0), PAR_EINVAL);
  assert_par(par_delete_range(f->r, "a", 1, "b", 0, 0), PAR_EINVAL);
  assert_par(par_delete_range(f->r, "a", 1, big, sizeof big, 0), PAR_ETOOBIG);
  assert_par(par_delete_range(f->r, "b", 1, "a", 1, 0), PAR_EINVAL);
  assert_non_null(strstr(par_last_error(), "begins after its end"));
  assert_par(par_delete_range(f->r, "ab", 2, "a", 1, 0), PAR_EINVAL);
  assert_par(par_delete_range(f->r, "a", 1, "b", 1, PAR_SYNC | PAR_NO_WAL), PAR_EINVAL);
  par_batch *b;
  assert_ok(par_batch_create(&b));
  assert_par(par_batch_delete_range(NULL, "a", 1, "b", 1), PAR_EINVAL);
  assert_par(par_batch_delete_range(b, "b", 1, "a", 1), PAR_EINVAL);
  assert_par(par_batch_delete_range_in(b, NULL, "a", 1, "b", 1), PAR_EINVAL);
  assert_int_equal(par_batch_count(b), 0);
  par_batch_destroy(b);
  put(f, 1, 1);
  char err[600];
  if (tu_verify_region(f->r, NULL, &f->ref, err, sizeof err)) fail_msg("after refused range deletes: %s", err);

  /* The budget: distinct ranges with long bounds until PAR_ELIMIT. */
  char lo[PAR_MAX_KEY_SIZE], hi[PAR_MAX_KEY_SIZE];
  int made = 0, rc = PAR_OK;
  for (; made < 1000; made++) {
    memset(lo, 'a', sizeof lo);
    memset(hi, 'a', sizeof hi);
    snprintf(lo, 16, "r%05d-a", made);
    snprintf(hi, 16, "r%05d-b", made);
    if ((rc = par_delete_range(f->r, lo, sizeof lo, hi, sizeof hi, 0))) break;
  }
  assert_par(rc, PAR_ELIMIT);
  fprintf(stderr, "rd_bad_input: %d range tombstones of 2 KiB of bounds fit the budget: %s\n", made, par_last_error());
  assert_true(made >= (int)(PAR_MAX_RANGE_TOMBSTONE_BYTES / (4 + 2 * PAR_MAX_KEY_SIZE)) - 1);
  assert_ok(par_compact(f->r)); /* they reach the last level and go */
  assert_ok(par_delete_range(f->r, lo, sizeof lo, hi, sizeof hi, 0));
  fx_done(f);
}

/* ---- rd_txn ---- */

static void test_rd_txn(void **state) {
  (void)state;
  fixture fx, *f = &fx;
  fx_init(f, "rd_txn");
  par_region *r2;
  assert_ok(par_region_open(f->v, "rd2", 1, &r2));
  char k[32], b[32], e[32];
  for (uint32_t i = 0; i < 100; i++) {
    put(f, i, 1);
    assert_ok(par_put(r2, k, rd_key(i, k), "x", 1, 0));
  }
  par_batch *batch;
  assert_ok(par_batch_create(&batch));
  size_t bl = rd_key(10, b), el = rd_key(20, e);
  assert_ok(par_batch_delete_range_in(batch, f->r, b, bl, e, el));
  assert_ok(par_batch_delete_range_in(batch, r2, b, bl, e, el));
  assert_ok(par_batch_put_in(batch, r2, b, bl, "y", 1));
  assert_ok(par_write_volume(f->v, batch, 0));
  par_batch_destroy(batch);
  tu_map_del_range(&f->ref, b, bl, e, el);
  for (int pass = 0; pass < 2; pass++) {
    check(f, NULL, &f->ref, 100, "cross-region batch");
    for (uint32_t i = 0; i < 100; i++) {
      size_t len;
      char val[8];
      int rc = par_get(r2, NULL, k, rd_key(i, k), val, sizeof val, &len);
      assert_par(rc, i > 10 && i < 20 ? PAR_NOT_FOUND : PAR_OK);
      if (i == 10) assert_int_equal(val[0], 'y');
    }
    assert_ok(par_region_close(r2));
    fx_close(f);
    fx_open(f, 0);
    assert_ok(par_region_open(f->v, "rd2", 0, &r2));
  }
  assert_ok(par_region_close(r2));
  fx_done(f);
}

/* ---- rd_format ---- */

static void set_format(const char *path, uint32_t version) {
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  uint8_t sb[4096];
  for (int copy = 0; copy < 2; copy++) {
    assert_int_equal(pread(fd, sb, sizeof sb, copy * 4096), (ssize_t)sizeof sb);
    enc32(sb + 8, version);
    enc32(sb + 4092, crc32c(0, sb, 4092));
    assert_int_equal(pwrite(fd, sb, sizeof sb, copy * 4096), (ssize_t)sizeof sb);
  }
  close(fd);
}

static uint32_t get_format(const char *path) {
  int fd = open(path, O_RDONLY);
  uint8_t sb[16];
  assert_int_equal(pread(fd, sb, sizeof sb, 0), (ssize_t)sizeof sb);
  close(fd);
  return dec32(sb + 8);
}

static void test_rd_format(void **state) {
  (void)state;
  fixture fx, *f = &fx;
  fx_init(f, "rd_format");
  for (uint32_t i = 0; i < 50; i++) put(f, i, 1);
  fx_close(f);
  assert_int_equal(get_format(f->path), PAR_FORMAT_VERSION);
  /* A format 3 volume (no range tombstones can be in it) opens. */
  set_format(f->path, 3);
  fx_open(f, 0);
  del_range(f, 5, 9);
  char err[600];
  if (tu_verify_region(f->r, NULL, &f->ref, err, sizeof err)) fail_msg("format 3 volume: %s", err);
  fx_close(f);
  assert_int_equal(get_format(f->path), PAR_FORMAT_VERSION);
  /* A later format is refused with a clear error, not PAR_ECORRUPT. */
  set_format(f->path, PAR_FORMAT_VERSION + 1);
  par_volume *v = NULL;
  assert_par(par_open(f->path, &f->o, &v), PAR_ENOTVOLUME);
  assert_non_null(strstr(par_last_error(), "format"));
  /* A format 4 volume (no incarnation reservation can be in it) opens. */
  set_format(f->path, 4);
  fx_open(f, 0);
  if (tu_verify_region(f->r, NULL, &f->ref, err, sizeof err)) fail_msg("format 4 volume: %s", err);
  fx_close(f);
  assert_int_equal(get_format(f->path), PAR_FORMAT_VERSION);
  fx_open(f, 0);
  fx_done(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rd_reads),   cmocka_unit_test(test_rd_snapshot), cmocka_unit_test(test_rd_gc),
      cmocka_unit_test(test_rd_bad_input), cmocka_unit_test(test_rd_txn),    cmocka_unit_test(test_rd_format),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
