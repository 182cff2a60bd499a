/*
 * test_medium.c — medium pairs travel in the transient log and are merged
 * in place (Parallax §3.3).
 *
 * Loading enough medium pairs (120..1023 bytes) with a small L0 puts their
 * values in transient medium-log segments owned by the upper levels (seen
 * while loading). After a full compaction everything is in the last level;
 * a few more L0s of updates then sit in L1 as pointers into a transient
 * segment. Merging every level into the last one again (par_compact) moves
 * the values into the leaves and frees the transient segments — the
 * counter and the volume's used segments both show it — and every value
 * still reads back, also after a reopen. Run with the merge at the last
 * level and at the last but one.
 */
#define _GNU_SOURCE
#include "testutil.h"

static size_t medium_value(uint32_t k, uint32_t round, uint8_t *out) {
  size_t len = 150 + tu_mix64(k * 31ull + round) % 800; /* with a 19-byte key: medium */
  tu_fill_pattern(out, len, (uint64_t)k << 8 | round);
  return len;
}

/* Longer than the 12-byte prefix leaves keep, which all keys share. */
static size_t medium_key(uint32_t k, char *out) { return (size_t)snprintf(out, 32, "medium.key.%08u", k); }

/* Keys below `updated` hold round + 1, the others round. */
static void check_all(par_region *r, uint32_t keys, uint32_t round, uint32_t updated) {
  uint8_t want[1024], got[1024];
  char key[32];
  for (uint32_t k = 0; k < keys; k++) {
    size_t len, wl = medium_value(k, k < updated ? round + 1 : round, want);
    int rc = par_get(r, NULL, key, medium_key(k, key), got, sizeof got, &len);
    if (rc != PAR_OK) fail_msg("key %u: %s (%s)", k, par_strerror(rc), par_last_error());
    if (len != wl || memcmp(got, want, wl) != 0) fail_msg("key %u: value differs", k);
  }
}

static void run(uint32_t merge_level) {
  char *dir = tu_make_dir("medium");
  char *path = tu_path(dir, "medium.px");
  par_options o = tu_options(256u << 10, 4);
  o.medium_merge_level = merge_level;
  par_volume *v;
  par_region *r;
  assert_ok(par_open(path, &o, &v));
  assert_ok(par_region_open(v, "m", 1, &r));
  enum { KEYS = 40000 };
  uint8_t val[1024];
  char key[32];
  uint64_t max_medium = 0;
  uint32_t max_levels = 0;
  for (uint32_t round = 1; round <= 2; round++)
    for (uint32_t j = 0; j < KEYS; j++) {
      uint32_t k = (uint32_t)((j * 7919ull) % KEYS); /* random order: 7919 is prime */
      assert_ok(par_put(r, key, medium_key(k, key), val, medium_value(k, round, val), 0));
      if (j % 2000 == 0) {
        par_stats st;
        assert_ok(par_region_stats(r, &st));
        if (st.medium_log_segments > max_medium) max_medium = st.medium_log_segments;
        if (st.levels > max_levels) max_levels = st.levels;
      }
    }
  assert_ok(par_compact(r));
  check_all(r, KEYS, 2, 0);
  /* With everything in the last level, a third round over some keys (a few
   * L0s, less than L1 holds) lands in L1, above the merge level: its medium
   * values are in the transient log. */
  enum { UPDATED = 1200 };
  for (uint32_t k = 0; k < UPDATED; k++)
    assert_ok(par_put(r, key, medium_key(k, key), val, medium_value(k, 3, val), 0));
  assert_ok(par_flush(r));
  /* Key-only scans, both ways, over keys whose 12-byte prefixes all tie
   * (whole keys come from the log records) read no value; the gets of the
   * updated keys read theirs from the transient log. */
  par_stats st0, st1;
  assert_ok(par_region_stats(r, &st0));
  par_scanner *s;
  assert_ok(par_scanner_open(r, NULL, &s));
  uint32_t n = 0;
  assert_ok(par_scanner_seek(s, NULL, 0, PAR_SEEK_FIRST));
  for (; par_scanner_valid(s); n++) assert_ok(par_scanner_next(s));
  assert_ok(par_scanner_seek(s, NULL, 0, PAR_SEEK_LAST));
  for (; par_scanner_valid(s); n++) assert_ok(par_scanner_prev(s));
  par_scanner_close(s);
  assert_int_equal(n, 2 * KEYS);
  assert_ok(par_region_stats(r, &st1));
  assert_int_equal(st1.medium_log_value_reads, st0.medium_log_value_reads);
  check_all(r, KEYS, 2, UPDATED);
  assert_ok(par_region_stats(r, &st1));
  assert_true(st1.medium_log_value_reads - st0.medium_log_value_reads >= UPDATED);
  par_stats before;
  par_volume_stats vbefore;
  assert_ok(par_region_stats(r, &before));
  assert_ok(par_volume_stats_get(v, &vbefore));
  if (before.medium_log_segments > max_medium) max_medium = before.medium_log_segments;
  if (before.levels > max_levels) max_levels = before.levels;
  fprintf(stderr,
          "medium (merge level %u): up to %llu transient segments and %u levels while loading; %llu "
          "transient segments, %llu volume segments after the flush\n",
          merge_level, (unsigned long long)max_medium, max_levels,
          (unsigned long long)before.medium_log_segments, (unsigned long long)vbefore.segments_used);
  assert_true(max_levels >= 2);
  assert_true(max_medium > 0);
  assert_true(before.medium_log_segments > 0);
  assert_true(before.medium_log_bytes_written > 0);
  /* Only medium pairs were written: the leaves of L1 got medium entries only. */
  assert_true(before.level_medium_bytes[1] > 0);
  assert_int_equal(before.level_small_bytes[1] + before.level_large_bytes[1], 0);

  assert_ok(par_compact(r));
  par_stats after;
  par_volume_stats vafter;
  assert_ok(par_region_stats(r, &after));
  assert_ok(par_volume_stats_get(v, &vafter));
  fprintf(stderr, "medium: after par_compact %llu transient segments, %llu volume segments, %u levels\n",
          (unsigned long long)after.medium_log_segments, (unsigned long long)vafter.segments_used, after.levels);
  assert_int_equal(after.medium_log_segments, 0);
  /* One level is left; the transient segments went back to the volume. */
  for (uint32_t l = 1; l < after.levels; l++) assert_int_equal(after.level[l].entries, 0);
  assert_true(after.level_medium_bytes[after.levels] > before.level_medium_bytes[after.levels]);
  if (vafter.segments_used >= vbefore.segments_used)
    fail_msg("volume still uses %llu segments (was %llu with %llu transient ones)",
             (unsigned long long)vafter.segments_used, (unsigned long long)vbefore.segments_used,
             (unsigned long long)before.medium_log_segments);
  check_all(r, KEYS, 2, UPDATED);
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  assert_ok(par_open(path, &o, &v));
  assert_ok(par_region_open(v, "m", 0, &r));
  check_all(r, KEYS, 2, UPDATED);
  assert_ok(par_region_stats(r, &after));
  assert_int_equal(after.medium_log_segments, 0);
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  tu_rm_rf(dir);
  free(dir);
  free(path);
}

static void test_medium_merge_last(void **state) {
  (void)state;
  run(0);
}

static void test_medium_merge_last_but_one(void **state) {
  (void)state;
  run(1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_medium_merge_last),
      cmocka_unit_test(test_medium_merge_last_but_one),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
