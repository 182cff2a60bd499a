/*
 * test_foreground.c — a write that did not ask for durability never waits on
 * an fdatasync itself. Growing a log by a segment records the segment in the
 * region's description, a synced redo record; that sync belongs to the
 * background (the WAL's writer thread lists a segment before its first write
 * into it), not to the put that happened to fill the previous segment,
 * which would hold write_mu, and so every writer of the region, across it.
 *
 * The check counts the fdatasync calls made on the writing thread
 * (file_syncs_on_this_thread): zero across many segment switches.
 *  wal_segments    small puts fill several WAL segments;
 *  large_log_segments
 *                  values bound for the large log fill several of its
 *                  segments;
 *  counter_counts  creating a region syncs on the calling thread: the count
 *                  moves, so the zero above means something.
 *  commits_release_locks
 *                  compactions (flushes, spills, their starts and commits)
 *                  and GC (its segment drops) sync their redo records
 *                  holding neither view_mu, which a writer freezing a full
 *                  L0 needs, nor meta_mu, which the WAL's writer thread
 *                  needs to list a segment: every fdatasync during
 *                  par_compact finds both free.
 *  last_reference_drops_no_pages
 *                  a reader holding the last reference to a tree a merge
 *                  replaced frees its segments when it lets go; their
 *                  pages leave the page cache on the volume's forgetter
 *                  thread, not the reader's: a drop costs about 0.1 ms
 *                  per cached 2 MiB segment, tens of ms for a large level
 *                  (file_forgets_on_this_thread stays where it was).
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <stdatomic.h>
#include <unistd.h>

#include "api/internal.h"
#include "io/fault.h"
#include "io/file.h"

typedef struct fx {
  char *dir, *path;
  par_volume *vol;
  par_region *reg;
} fx;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->dir = tu_make_dir("foreground");
  f->path = tu_path(f->dir, "volume.px");
  par_options o = tu_options(64u << 20, 4); /* no freeze: only the logs grow */
  if (par_open(f->path, &o, &f->vol) || par_region_open(f->vol, "main", 1, &f->reg)) return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  par_region_close(f->reg);
  par_close(f->vol);
  tu_rm_rf(f->dir);
  free(f->dir);
  free(f->path);
  free(f);
  return 0;
}

/* Puts n pairs with value_len-byte values without PAR_SYNC; returns the
 * fdatasyncs this thread made. */
static uint64_t unsynced_puts(par_region *r, const char *prefix, uint32_t n, size_t value_len) {
  uint64_t before = file_syncs_on_this_thread();
  char key[32];
  uint8_t *val = malloc(value_len);
  assert_non_null(val);
  memset(val, 'v', value_len);
  for (uint32_t i = 0; i < n; i++) {
    snprintf(key, sizeof key, "%s%09u", prefix, i);
    assert_ok(par_put(r, key, strlen(key), val, value_len, 0));
  }
  free(val);
  return file_syncs_on_this_thread() - before;
}

static void test_wal_segments(void **state) {
  fx *f = *state;
  par_stats st;
  /* About 240 bytes of WAL a put: 40,000 puts fill four or five 2 MiB segments. */
  uint64_t syncs = unsynced_puts(f->reg, "small", 40000, 200);
  assert_ok(par_region_stats(f->reg, &st));
  assert_true(st.wal_segments >= 4);
  if (syncs)
    fail_msg("40,000 puts without PAR_SYNC made %llu fdatasyncs on the writing thread while the WAL grew "
             "to %llu segments", (unsigned long long)syncs, (unsigned long long)st.wal_segments);
}

static void test_large_log_segments(void **state) {
  fx *f = *state;
  par_stats st;
  /* 16 KiB values: 1,000 puts fill seven or eight 2 MiB large-log segments. */
  uint64_t syncs = unsynced_puts(f->reg, "large", 1000, 16384);
  assert_ok(par_sync(f->reg));
  assert_ok(par_region_stats(f->reg, &st));
  assert_true(st.large_puts == 1000);
  assert_true(st.large_log_segments >= 7);
  if (syncs)
    fail_msg("1,000 large puts without PAR_SYNC made %llu fdatasyncs on the writing thread while the large "
             "log grew to %llu segments", (unsigned long long)syncs, (unsigned long long)st.large_log_segments);
}

/* The count is real: creating a region records it with a synced redo
 * record on the calling thread. */
static void test_counter_counts(void **state) {
  fx *f = *state;
  uint64_t before = file_syncs_on_this_thread();
  par_region *other;
  assert_ok(par_region_open(f->vol, "other", 1, &other));
  assert_true(file_syncs_on_this_thread() > before);
  assert_ok(par_region_close(other));
}

typedef struct held_at_sync {
  par_region *r;
  atomic_int syncs, under_view_mu, under_meta_mu;
} held_at_sync;

/* Whether the calling thread holds mu: glibc records the owner's thread id
 * in the mutex (a trylock would also see par_compact's own brief holds). */
static int held_here(pthread_mutex_t *mu) {
#ifdef __GLIBC__
  return mu->__data.__owner == (int)gettid();
#else
  (void)mu;
  return 0;
#endif
}

/* On the syncing thread, before its fdatasync. */
static void note_locks(void *arg) {
  held_at_sync *h = arg;
  atomic_fetch_add(&h->syncs, 1);
  if (held_here(&h->r->view_mu)) atomic_fetch_add(&h->under_view_mu, 1);
  if (held_here(&h->r->vol->meta_mu)) atomic_fetch_add(&h->under_meta_mu, 1);
}

static void test_last_reference_drops_no_pages(void **state) {
  fx *f = *state;
  unsynced_puts(f->reg, "tree", 20000, 200);
  assert_ok(par_compact(f->reg));
  uint64_t lsn;
  view *w = region_acquire_view(f->reg, &lsn);
  assert_non_null(w->tree[1][0]);
  seg_list segs = {0};
  for (uint32_t i = 0; i < w->tree[1][0]->d.segs.n; i++) assert_ok(seg_list_push(&segs, w->tree[1][0]->d.segs.v[i]));
  assert_true(segs.n >= 2);

  unsynced_puts(f->reg, "tree", 20000, 200);
  assert_ok(par_compact(f->reg)); /* a new L1 replaces the tree this view holds */
  for (uint32_t i = 0; i < segs.n; i++) assert_true(segalloc_in_use(&f->vol->alloc, segs.v[i]));
  uint64_t before = file_forgets_on_this_thread();
  view_unref(w);
  for (uint32_t i = 0; i < segs.n; i++) assert_false(segalloc_in_use(&f->vol->alloc, segs.v[i]));
  if (file_forgets_on_this_thread() != before)
    fail_msg("the reader that let go of a merged tree's %u segments dropped their pages itself (%llu drops)", segs.n,
             (unsigned long long)(file_forgets_on_this_thread() - before));
  seg_list_free(&segs);
}

static void test_commits_release_locks(void **state) {
  (void)state;
#ifndef __GLIBC__
  skip(); /* held_here needs glibc's mutex layout */
#endif
  char *dir = tu_make_dir("foreground_commits");
  char *path = tu_path(dir, "volume.px");
  par_options o = tu_options(256u << 10, 4);
  o.compaction_threads = 1;
  o.gc_threshold_pct = 10;
  par_volume *v;
  par_region *r;
  assert_ok(par_open(path, &o, &v));
  assert_ok(par_region_open(v, "main", 1, &r));
  /* About 12 MiB of small pairs: flushes of a 256 KiB L0 and spills down
   * to L3 (growth factor 4), many of them while the puts go on. */
  unsynced_puts(r, "commit", 60000, 200);
  /* Large values written three times over: two thirds of their large-log
   * segments are garbage once the merges find it, for GC to collect. */
  for (int round = 0; round < 3; round++) unsynced_puts(r, "garbage", 300, 16384);
  assert_ok(par_sync(r));
  par_stats before, after;
  assert_ok(par_region_stats(r, &before));
  held_at_sync h = {.r = r};
  fault_observe_syncs(note_locks, &h);
  assert_ok(par_compact(r));
  fault_observe_syncs(NULL, NULL);
  assert_ok(par_region_stats(r, &after));
  assert_true(after.gc_segments_freed > before.gc_segments_freed);
  /* Redo records of the flush and the spills down to the last level. */
  assert_true(atomic_load(&h.syncs) >= 3);
  if (atomic_load(&h.under_view_mu) || atomic_load(&h.under_meta_mu))
    fail_msg("of %d fdatasyncs during par_compact, %d held view_mu and %d meta_mu", atomic_load(&h.syncs),
             atomic_load(&h.under_view_mu), atomic_load(&h.under_meta_mu));
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  tu_rm_rf(dir);
  free(dir);
  free(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_wal_segments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_large_log_segments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_counter_counts, setup, teardown),
      cmocka_unit_test_setup_teardown(test_last_reference_drops_no_pages, setup, teardown),
      cmocka_unit_test(test_commits_release_locks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
