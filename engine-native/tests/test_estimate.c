/*
 * test_estimate.c — par_estimate_range and the estimates of par_stats
 * (estimated_keys, pending_compaction_bytes), checked against exact counts
 * from scans:
 *  - bad input: NULL region or out, empty or oversized bounds, a NULL bound
 *    with a length, begin after end;
 *  - an empty region estimates 0 everywhere;
 *  - a region of uniformly spread keys over L0 and several levels: the whole
 *    range is exact, empty ranges (begin == end, before the first key, after
 *    the last) are 0, and random ranges of 5% of the keys or more are within
 *    25% of a scan's count;
 *  - after overwrites, deletes and par_compact, estimated_keys is the live
 *    count and nothing is pending;
 *  - pending compaction bytes of hand-made views: a frozen L0, levels over
 *    their capacity, spills under way, and the spills they cascade into.
 *
 * Environment: PAR_SEED, PAR_ESTIMATE_KEYS (default 150000).
 */
#include "testutil.h"

#include "api/internal.h"

#define VALUE_LEN 40

/* Key i: 8 bytes, big-endian, of a bijective mix of i — unique and spread
 * uniformly over the key space whatever the load order. */
static void key_of(uint64_t i, uint8_t k[8]) {
  uint64_t x = tu_mix64(i);
  for (int b = 0; b < 8; b++) k[b] = (uint8_t)(x >> (56 - 8 * b));
}

static void put_key(par_region *r, uint64_t i, uint64_t version) {
  uint8_t k[8], v[VALUE_LEN];
  key_of(i, k);
  memset(v, (int)(version & 0xff), sizeof v);
  assert_ok(par_put(r, k, sizeof k, v, sizeof v, 0));
}

/* Live keys in [begin, end) by a scan (NULL: unbounded). */
static uint64_t scan_count(par_region *r, const uint8_t *begin, const uint8_t *end) {
  par_scanner *s;
  assert_ok(par_scanner_open(r, NULL, &s));
  assert_ok(par_scanner_seek(s, begin, begin ? 8 : 0, begin ? PAR_SEEK_GE : PAR_SEEK_FIRST));
  uint64_t n = 0;
  while (par_scanner_valid(s)) {
    const void *k;
    size_t kl;
    assert_ok(par_scanner_key(s, &k, &kl));
    if (end && memcmp(k, end, 8) >= 0) break; /* every key is 8 bytes */
    n++;
    assert_ok(par_scanner_next(s));
  }
  par_scanner_close(s);
  return n;
}

static uint64_t estimate(par_region *r, const uint8_t *begin, const uint8_t *end, uint64_t *bytes) {
  par_range_estimate e;
  assert_ok(par_estimate_range(r, begin, begin ? 8 : 0, end, end ? 8 : 0, &e));
  if (bytes) *bytes = e.bytes;
  return e.entries;
}

static void test_bad_input(void **state) {
  (void)state;
  char *dir = tu_make_dir("estimate_bad");
  char *path = tu_path(dir, "vol");
  par_options o = tu_options(1u << 20, 4);
  par_volume *v;
  par_region *r;
  assert_ok(par_open(path, &o, &v));
  assert_ok(par_region_open(v, "r", 1, &r));
  par_range_estimate e;
  static uint8_t big[PAR_MAX_KEY_SIZE + 1];
  assert_par(par_estimate_range(NULL, "a", 1, "b", 1, &e), PAR_EINVAL);
  assert_par(par_estimate_range(r, "a", 1, "b", 1, NULL), PAR_EINVAL);
  assert_par(par_estimate_range(r, "a", 0, "b", 1, &e), PAR_EINVAL);
  assert_par(par_estimate_range(r, "a", 1, "b", 0, &e), PAR_EINVAL);
  assert_par(par_estimate_range(r, NULL, 1, "b", 1, &e), PAR_EINVAL);
  assert_par(par_estimate_range(r, "a", 1, NULL, 3, &e), PAR_EINVAL);
  assert_par(par_estimate_range(r, "b", 1, "a", 1, &e), PAR_EINVAL);
  assert_non_null(strstr(par_last_error(), "begin is after end"));
  assert_par(par_estimate_range(r, "ab", 2, "a", 1, &e), PAR_EINVAL);
  assert_par(par_estimate_range(r, big, sizeof big, NULL, 0, &e), PAR_ETOOBIG);
  assert_par(par_estimate_range(r, NULL, 0, big, sizeof big, &e), PAR_ETOOBIG);
  /* the empty region */
  assert_ok(par_estimate_range(r, NULL, 0, NULL, 0, &e));
  assert_int_equal(e.entries, 0);
  assert_int_equal(e.bytes, 0);
  assert_ok(par_estimate_range(r, "a", 1, "a", 1, &e));
  assert_int_equal(e.entries, 0);
  assert_int_equal(e.bytes, 0);
  par_stats st;
  assert_ok(par_region_stats(r, &st));
  assert_int_equal(st.estimated_keys, 0);
  assert_int_equal(st.pending_compaction_bytes, 0);
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  tu_rm_rf(dir);
  free(path);
  free(dir);
}

static void test_accuracy(void **state) {
  (void)state;
  uint64_t rng = tu_seed("test_estimate accuracy");
  uint64_t n = tu_env_u64("PAR_ESTIMATE_KEYS", 150000);
  char *dir = tu_make_dir("estimate");
  char *path = tu_path(dir, "vol");
  par_options o = tu_options(1u << 20, 2);
  par_volume *v;
  par_region *r;
  assert_ok(par_open(path, &o, &v));
  assert_ok(par_region_open(v, "r", 1, &r));
  /* Most keys reach the levels; the last few thousand stay in L0. */
  uint64_t in_l0 = n / 30;
  for (uint64_t i = 0; i < n - in_l0; i++) put_key(r, i, 1);
  assert_ok(par_flush(r));
  for (uint64_t i = n - in_l0; i < n; i++) put_key(r, i, 1);
  par_stats st;
  assert_ok(par_region_stats(r, &st));
  assert_true(st.levels >= 3);
  assert_true(st.l0_entries > 0);
  assert_int_equal(st.estimated_keys, n);
  uint64_t all_bytes = st.l0_bytes;
  for (int i = 1; i <= PAR_MAX_LEVELS; i++) all_bytes += st.level[i].live_bytes;

  /* The whole range is exact, in entries and bytes. */
  uint64_t bytes;
  assert_int_equal(estimate(r, NULL, NULL, &bytes), n);
  assert_true(bytes + 1 >= all_bytes && bytes <= all_bytes + 1);
  uint8_t lo[8], hi[8];
  memset(lo, 0, 8);
  memset(hi, 0xff, 8);
  assert_int_equal(scan_count(r, lo, NULL), n); /* no key is all zeros */
  assert_int_equal(estimate(r, lo, NULL, NULL), n);
  assert_int_equal(estimate(r, NULL, hi, NULL), n);
  /* Empty ranges are 0: a bound twice, before the first key, after the last. */
  uint8_t k[8];
  key_of(7, k);
  assert_int_equal(estimate(r, k, k, NULL), 0);
  assert_int_equal(estimate(r, hi, NULL, NULL), 0);
  assert_int_equal(estimate(r, NULL, lo, NULL), 0);
  assert_int_equal(estimate(r, lo, lo, NULL), 0);

  /* Random ranges holding 5% of the keys or more: within 25% of a scan. */
  double worst = 0;
  int checked = 0;
  for (int t = 0; checked < 40 && t < 400; t++) {
    uint8_t a[8], b[8];
    tu_rand_bytes(&rng, a, 8);
    tu_rand_bytes(&rng, b, 8);
    if (memcmp(a, b, 8) > 0) {
      uint8_t x[8];
      memcpy(x, a, 8);
      memcpy(a, b, 8);
      memcpy(b, x, 8);
    }
    uint64_t exact = scan_count(r, a, b);
    if (exact < n / 20) continue;
    uint64_t est = estimate(r, a, b, NULL);
    double err = ((double)est - (double)exact) / (double)exact;
    if (err < 0) err = -err;
    if (err > worst) worst = err;
    if (err > 0.25)
      fail_msg("range of %llu keys estimated at %llu (%.1f%% off)", (unsigned long long)exact,
               (unsigned long long)est, 100 * err);
    checked++;
  }
  assert_true(checked >= 20);
  fprintf(stderr, "test_estimate: %d ranges over %llu keys, worst error %.2f%%\n", checked,
          (unsigned long long)n, 100 * worst);
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  tu_rm_rf(dir);
  free(path);
  free(dir);
}

/* Overwritten and deleted keys count once per version until a merge drops
 * the old ones: after par_compact the estimates are the live count. */
static void test_after_compact(void **state) {
  (void)state;
  uint64_t n = 20000;
  char *dir = tu_make_dir("estimate_compact");
  char *path = tu_path(dir, "vol");
  par_options o = tu_options(1u << 20, 2);
  par_volume *v;
  par_region *r;
  assert_ok(par_open(path, &o, &v));
  assert_ok(par_region_open(v, "r", 1, &r));
  for (uint64_t i = 0; i < n; i++) put_key(r, i, 1);
  assert_ok(par_flush(r));
  for (uint64_t i = 0; i < n; i += 2) put_key(r, i, 2);
  uint64_t deleted = 0;
  for (uint64_t i = 1; i < n; i += 4, deleted++) {
    uint8_t k[8];
    key_of(i, k);
    assert_ok(par_delete(r, k, sizeof k, 0));
  }
  par_stats st;
  assert_ok(par_region_stats(r, &st));
  assert_true(st.estimated_keys >= n); /* versions and tombstones too */
  assert_ok(par_compact(r));
  assert_ok(par_region_stats(r, &st));
  assert_int_equal(st.estimated_keys, n - deleted);
  assert_int_equal(st.pending_compaction_bytes, 0);
  assert_int_equal(estimate(r, NULL, NULL, NULL), n - deleted);
  assert_int_equal(scan_count(r, NULL, NULL), n - deleted);
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  tu_rm_rf(dir);
  free(path);
  free(dir);
}

/* compaction_pending_bytes on views made by hand: L0 1 MiB and growth 2 give
 * level i a capacity of 2^i MiB. */
static void test_pending_bytes(void **state) {
  (void)state;
  const uint64_t MB = 1u << 20;
  char *dir = tu_make_dir("estimate_pending");
  char *path = tu_path(dir, "vol");
  par_options o = tu_options(MB, 2);
  par_volume *v;
  par_region *r;
  assert_ok(par_open(path, &o, &v));
  assert_ok(par_region_open(v, "r", 1, &r));
  view w;
  dtree t[4];
  memset(&w, 0, sizeof w);
  memset(t, 0, sizeof t);
  assert_int_equal(compaction_pending_bytes(r, &w), 0);
  t[0].d.bytes = MB; /* L1 under its 2 MiB */
  w.tree[1][0] = &t[0];
  assert_int_equal(compaction_pending_bytes(r, &w), 0);
  t[0].d.medium_bytes = 2 * MB; /* over it with its medium values: spills into L2 */
  t[1].d.bytes = MB;
  w.tree[2][0] = &t[1];
  assert_int_equal(compaction_pending_bytes(r, &w), 3 * MB + MB);
  t[1].d.bytes = 2 * MB; /* L2 then holds 5 MiB, over its 4: it spills too, into L3 */
  t[2].d.bytes = MB;
  w.tree[3][0] = &t[2];
  assert_int_equal(compaction_pending_bytes(r, &w), (3 * MB + 2 * MB) + (5 * MB + MB));
  /* A spill under way: L1's spilling tree and L2; L1's small active tree waits. */
  memset(&w, 0, sizeof w);
  t[0].d.bytes = MB / 2;
  t[0].d.medium_bytes = 0;
  t[1].d.bytes = MB;
  t[3].d.bytes = MB / 4;
  w.tree[1][0] = &t[3];
  w.tree[1][1] = &t[0];
  w.tree[2][0] = &t[1];
  assert_int_equal(compaction_pending_bytes(r, &w), MB / 2 + MB);
  /* A frozen L0: its memory and L1's active tree. */
  memset(&w, 0, sizeof w);
  memtable *m = memtable_create();
  assert_non_null(m);
  assert_ok(memtable_insert(m, 1, WAL_PUT, "k", 1, "v", 1));
  w.frozen = m;
  w.tree[1][0] = &t[1];
  assert_int_equal(compaction_pending_bytes(r, &w), atomic_load(&m->bytes) + MB);
  memtable_unref(m);
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  tu_rm_rf(dir);
  free(path);
  free(dir);
}

/* compaction_next_merge, the choice pick() makes, on views made by hand (L0
 * 1 MiB, growth 2: level i holds 2^i MiB). A flush goes first, except
 * before a spill that waits in a level's slot while the level's new tree is
 * over capacity too; a merge into a busy level waits. Returns 1 for a
 * flush, i + 1 for level i's spill, 0 for none. */
static void test_next_merge(void **state) {
  (void)state;
  const uint64_t MB = 1u << 20;
  int busy[PAR_MAX_LEVELS + 1] = {0};
  view w;
  dtree t[4];
  memtable m;
  memset(&w, 0, sizeof w);
  memset(t, 0, sizeof t);
  assert_int_equal(compaction_next_merge(&w, busy, MB, 2), 0);
  w.frozen = &m;
  assert_int_equal(compaction_next_merge(&w, busy, MB, 2), 1);
  busy[1] = 1; /* a flush runs already */
  assert_int_equal(compaction_next_merge(&w, busy, MB, 2), 0);
  busy[1] = 0;
  t[0].d.bytes = 3 * MB; /* L1 over its 2 MiB, its spill not started: the flush */
  w.tree[1][0] = &t[0];
  assert_int_equal(compaction_next_merge(&w, busy, MB, 2), 1);
  w.tree[1][1] = &t[0]; /* it waits to spill; the new L1 tree holds 1 MiB */
  t[1].d.bytes = MB;
  w.tree[1][0] = &t[1];
  assert_int_equal(compaction_next_merge(&w, busy, MB, 2), 1);
  w.frozen = NULL;
  assert_int_equal(compaction_next_merge(&w, busy, MB, 2), 2);
  w.frozen = &m;
  t[1].d.medium_bytes = MB + 1; /* over 2 MiB with its medium values: the spill first */
  assert_int_equal(compaction_next_merge(&w, busy, MB, 2), 2);
  busy[2] = 1; /* L2 is being merged into: the spill cannot run, the flush can */
  assert_int_equal(compaction_next_merge(&w, busy, MB, 2), 1);
  busy[1] = 1;
  assert_int_equal(compaction_next_merge(&w, busy, MB, 2), 0);
  busy[1] = busy[2] = 0;
  memset(&w, 0, sizeof w); /* a deeper level: L2 holds 4 MiB */
  w.frozen = &m;
  t[2].d.bytes = 3 * MB;
  t[3].d.bytes = 5 * MB;
  w.tree[2][0] = &t[2];
  w.tree[2][1] = &t[3];
  assert_int_equal(compaction_next_merge(&w, busy, MB, 2), 1);
  t[2].d.bytes = 4 * MB + 1;
  assert_int_equal(compaction_next_merge(&w, busy, MB, 2), 3);
  w.frozen = NULL; /* two spills waiting: the upper level's first, unless its destination is busy */
  w.tree[1][1] = &t[0];
  assert_int_equal(compaction_next_merge(&w, busy, MB, 2), 2);
  busy[2] = 1;
  assert_int_equal(compaction_next_merge(&w, busy, MB, 2), 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_next_merge),
      cmocka_unit_test(test_accuracy),
      cmocka_unit_test(test_after_compact),
      cmocka_unit_test(test_pending_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
