/*
 * test_api_basic.c — the basic promises of parallax.h, one at a time:
 * volume and region lifecycle (create/open/list/drop), put/get/delete/exists,
 * par_get's "full length with a short buffer" rule, overwrites and empty
 * values, atomic batches, snapshots that ignore later writes (also across a
 * compaction), scanner seek modes and key order, durability across
 * close/reopen (with and without par_flush), counters that move, and space
 * freed by a region drop given back to the file system.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fx {
  char *dir;
  char *path;
  par_options opts;
  par_volume *vol;
  par_region *reg;
} fx;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  f->dir = tu_make_dir("api_basic");
  f->path = tu_path(f->dir, "volume.px");
  f->opts = tu_options(1u << 20, 4);
  int rc = par_open(f->path, &f->opts, &f->vol);
  if (rc != PAR_OK) {
    fprintf(stderr, "setup: par_open: %s (%s)\n", par_strerror(rc), par_last_error());
    return -1;
  }
  rc = par_region_open(f->vol, "main", 1, &f->reg);
  if (rc != PAR_OK) {
    fprintf(stderr, "setup: par_region_open: %s (%s)\n", par_strerror(rc), par_last_error());
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  if (f == NULL) return 0;
  if (f->reg) par_region_close(f->reg);
  if (f->vol) par_close(f->vol);
  tu_rm_rf(f->dir);
  free(f->dir);
  free(f->path);
  free(f);
  return 0;
}

/* Closes and reopens the fixture's volume and its "main" region. */
static void reopen(fx *f, int flush_first) {
  if (flush_first) assert_ok(par_flush(f->reg));
  assert_ok(par_region_close(f->reg));
  f->reg = NULL;
  assert_ok(par_close(f->vol));
  f->vol = NULL;
  f->opts.create_if_missing = 0;
  assert_ok(par_open(f->path, &f->opts, &f->vol));
  assert_ok(par_region_open(f->vol, "main", 0, &f->reg));
}

static int put_s(par_region *r, const char *k, const char *v) {
  return par_put(r, k, strlen(k), v, strlen(v), 0);
}

/* Asserts that key k holds the string value v (or is absent when v is NULL). */
static void expect_s(par_region *r, const par_snapshot *snap, const char *k, const char *v) {
  char buf[4096];
  size_t len = 12345;
  int rc = par_get(r, snap, k, strlen(k), buf, sizeof buf, &len);
  if (v == NULL) {
    if (rc != PAR_NOT_FOUND)
      fail_msg("key %s: expected absent, got %s (len %zu)", k, par_strerror(rc), len);
    assert_par(par_exists(r, snap, k, strlen(k)), PAR_NOT_FOUND);
    return;
  }
  if (rc != PAR_OK) fail_msg("key %s: expected '%s', got %s (%s)", k, v, par_strerror(rc),
                             par_last_error());
  if (len != strlen(v) || memcmp(buf, v, len) != 0)
    fail_msg("key %s: expected '%s', got '%.*s'", k, v, (int)(len < 200 ? len : 200), buf);
  assert_ok(par_exists(r, snap, k, strlen(k)));
}

/* ---- options and volumes ------------------------------------------------- */

static void test_options_defaults(void **state) {
  (void)state;
  par_options o;
  memset(&o, 0xab, sizeof o);
  par_options_init(&o);
  assert_int_equal(o.l0_size, 64ull << 20);
  assert_int_equal(o.growth_factor, 8);
  assert_int_equal(o.durability_interval_ms, 100);
  assert_int_equal(o.compaction_threads, 1);
  assert_int_equal(o.use_direct_io, 1);
  assert_int_equal(o.max_volume_size, 0);
  assert_int_equal(o.create_if_missing, 1);
}

static void test_volume_create_if_missing(void **state) {
  (void)state;
  char *dir = tu_make_dir("api_create");
  char *path = tu_path(dir, "v.px");
  par_options o = tu_options(1u << 20, 4);
  par_volume *v = NULL;
  o.create_if_missing = 0;
  assert_par(par_open(path, &o, &v), PAR_ENOENT);
  assert_non_null(par_last_error());
  assert_true(strlen(par_last_error()) > 0);
  o.create_if_missing = 1;
  assert_ok(par_open(path, &o, &v));
  assert_non_null(v);
  assert_ok(par_close(v));
  v = NULL;
  o.create_if_missing = 0;
  assert_ok(par_open(path, &o, &v));
  /* A fresh volume has no regions. */
  assert_par(par_region_open(v, "nope", 0, &(par_region *){NULL}), PAR_ENOENT);
  assert_ok(par_close(v));
  tu_rm_rf(dir);
  free(path);
  free(dir);
}

/* ---- regions -------------------------------------------------------------- */

typedef struct names {
  char n[16][PAR_MAX_REGION_NAME + 1];
  int count;
} names;

static void collect_name(const char *name, void *arg) {
  names *ns = arg;
  if (ns->count < 16) snprintf(ns->n[ns->count], sizeof ns->n[0], "%s", name);
  ns->count++;
}

static void expect_regions(par_volume *v, const char *const *want, int n) {
  names ns = {.count = 0};
  assert_ok(par_region_list(v, collect_name, &ns));
  if (ns.count != n) fail_msg("par_region_list: %d regions, expected %d", ns.count, n);
  for (int i = 0; i < n; i++) assert_string_equal(ns.n[i], want[i]);
}

static void test_regions_lifecycle(void **state) {
  fx *f = *state;
  par_region *a = NULL, *b = NULL, *c = NULL, *x = NULL;

  assert_ok(par_region_create(f->vol, "alpha"));
  assert_ok(par_region_create(f->vol, "beta"));
  assert_par(par_region_create(f->vol, "beta"), PAR_EEXIST);
  assert_par(par_region_create(f->vol, "main"), PAR_EEXIST);
  assert_ok(par_region_open(f->vol, "gamma", 1, &c)); /* create through open */
  expect_regions(f->vol, (const char *const[]){"main", "alpha", "beta", "gamma"}, 4);

  assert_par(par_region_open(f->vol, "delta", 0, &x), PAR_ENOENT);

  /* Regions are independent key spaces. */
  assert_ok(par_region_open(f->vol, "alpha", 0, &a));
  assert_ok(par_region_open(f->vol, "beta", 0, &b));
  assert_ok(put_s(a, "k", "in-alpha"));
  assert_ok(put_s(b, "k", "in-beta"));
  expect_s(a, NULL, "k", "in-alpha");
  expect_s(b, NULL, "k", "in-beta");
  expect_s(c, NULL, "k", NULL);
  expect_s(f->reg, NULL, "k", NULL);

  /* Only a closed region can be dropped. */
  assert_par(par_region_drop(f->vol, "alpha"), PAR_EBUSY);
  assert_ok(par_region_close(a));
  a = NULL;
  assert_ok(par_region_drop(f->vol, "alpha"));
  assert_par(par_region_drop(f->vol, "alpha"), PAR_ENOENT);
  assert_par(par_region_open(f->vol, "alpha", 0, &a), PAR_ENOENT);
  expect_regions(f->vol, (const char *const[]){"main", "beta", "gamma"}, 3);

  /* A re-created region starts empty. */
  assert_ok(par_region_open(f->vol, "alpha", 1, &a));
  expect_s(a, NULL, "k", NULL);
  expect_regions(f->vol, (const char *const[]){"main", "beta", "gamma", "alpha"}, 4);

  /* The catalog survives a reopen. */
  assert_ok(par_region_close(a));
  assert_ok(par_region_close(b));
  assert_ok(par_region_close(c));
  reopen(f, 0);
  expect_regions(f->vol, (const char *const[]){"main", "beta", "gamma", "alpha"}, 4);
  assert_ok(par_region_open(f->vol, "beta", 0, &b));
  expect_s(b, NULL, "k", "in-beta");
  assert_ok(par_region_close(b));
  assert_ok(par_region_open(f->vol, "alpha", 0, &a));
  expect_s(a, NULL, "k", NULL);
  assert_ok(par_region_close(a));
}

static void test_region_drop_frees_space(void **state) {
  fx *f = *state;
  par_region *r = NULL;
  par_volume_stats vs0, vs1, vs2;
  assert_ok(par_volume_stats_get(f->vol, &vs0));
  assert_ok(par_region_open(f->vol, "big", 1, &r));
  char key[32], val[1000];
  for (int i = 0; i < 20000; i++) {
    snprintf(key, sizeof key, "big%08d", i);
    tu_fill_pattern(val, sizeof val, (uint64_t)i);
    assert_ok(par_put(r, key, strlen(key), val, sizeof val, 0));
  }
  assert_ok(par_flush(r));
  assert_ok(par_volume_stats_get(f->vol, &vs1));
  assert_true(vs1.segments_used > vs0.segments_used);
  assert_ok(par_region_close(r));
  assert_ok(par_region_drop(f->vol, "big"));
  assert_ok(par_volume_stats_get(f->vol, &vs2));
  if (vs2.segments_used >= vs1.segments_used)
    fail_msg("drop freed nothing: segments_used %llu before, %llu after",
             (unsigned long long)vs1.segments_used, (unsigned long long)vs2.segments_used);
}

static uint64_t blocks_on_disk(const char *path) {
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  return (uint64_t)st.st_blocks * 512;
}

/* Whether the file system under dir can punch holes (ext4, xfs and tmpfs can). */
static int can_punch_holes(const char *dir) {
  char *probe = tu_path(dir, "punch-probe");
  int fd = open(probe, O_RDWR | O_CREAT, 0600);
  int ok = fd >= 0 && posix_fallocate(fd, 0, 1 << 20) == 0 &&
           fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1 << 20) == 0;
  if (fd >= 0) close(fd);
  unlink(probe);
  free(probe);
  return ok;
}

/* What a dropped region held goes back to the file system (holes in the
 * volume file): at the latest once the volume closes, the file keeps only
 * the segments in use and a reserve of 32 free ones (64 MiB) with their
 * blocks. Released segments are used again, and what is written there
 * survives a reopen. */
static void test_space_goes_back_to_the_file_system(void **state) {
  fx *f = *state;
  if (!can_punch_holes(f->dir)) {
    print_message("skipped: the file system under PAR_TEST_DIR cannot punch holes\n");
    skip();
  }
  par_region *r = NULL;
  assert_ok(par_region_open(f->vol, "big", 1, &r));
  char key[32], val[1000];
  for (int i = 0; i < 200000; i++) { /* 200 MB: the volume grows past 100 segments */
    snprintf(key, sizeof key, "big%08d", i);
    tu_fill_pattern(val, sizeof val, (uint64_t)i);
    assert_ok(par_put(r, key, strlen(key), val, sizeof val, 0));
  }
  assert_ok(par_flush(r));
  assert_ok(par_region_close(r));
  assert_ok(par_region_drop(f->vol, "big"));
  reopen(f, 0);

  par_volume_stats vs;
  assert_ok(par_volume_stats_get(f->vol, &vs));
  uint64_t held = blocks_on_disk(f->path);
  /* At rest the volume keeps a 64th of its segments in use free with their
   * blocks, at least 4 (segalloc_rest_floor): 4 here. */
  if (vs.segments_released == 0 || held > (vs.segments_used + 4) * PAR_SEGMENT_SIZE + (1u << 20))
    fail_msg("the file holds %llu bytes on disk for %llu segments in use (%llu released, volume %llu bytes)",
             (unsigned long long)held, (unsigned long long)vs.segments_used,
             (unsigned long long)vs.segments_released, (unsigned long long)vs.volume_bytes);
  if (held + vs.segments_released * PAR_SEGMENT_SIZE > vs.volume_bytes + (1u << 20))
    fail_msg("%llu bytes on disk and %llu segments released exceed the volume's %llu bytes",
             (unsigned long long)held, (unsigned long long)vs.segments_released,
             (unsigned long long)vs.volume_bytes);

  /* Written again where the holes are, and read back after a reopen. */
  for (int i = 0; i < 100000; i++) {
    snprintf(key, sizeof key, "again%08d", i);
    tu_fill_pattern(val, sizeof val, (uint64_t)i + 7);
    assert_ok(par_put(f->reg, key, strlen(key), val, sizeof val, 0));
  }
  par_volume_stats after;
  assert_ok(par_flush(f->reg));
  assert_ok(par_volume_stats_get(f->vol, &after));
  if (after.segments_released >= vs.segments_released || after.volume_bytes != vs.volume_bytes)
    fail_msg("released segments were not used again: %llu released before, %llu after; volume %llu then %llu bytes",
             (unsigned long long)vs.segments_released, (unsigned long long)after.segments_released,
             (unsigned long long)vs.volume_bytes, (unsigned long long)after.volume_bytes);
  reopen(f, 0);
  for (int i = 0; i < 100000; i += 7) {
    snprintf(key, sizeof key, "again%08d", i);
    char got[1000];
    size_t len = 0;
    assert_ok(par_get(f->reg, NULL, key, strlen(key), got, sizeof got, &len));
    assert_int_equal(len, sizeof got);
    assert_true(tu_check_pattern(got, len, (uint64_t)i + 7));
  }
}

/* ---- point operations ----------------------------------------------------- */

static void test_put_get_delete_exists(void **state) {
  fx *f = *state;
  expect_s(f->reg, NULL, "apple", NULL);
  assert_ok(put_s(f->reg, "apple", "red"));
  assert_ok(put_s(f->reg, "banana", "yellow"));
  expect_s(f->reg, NULL, "apple", "red");
  expect_s(f->reg, NULL, "banana", "yellow");
  expect_s(f->reg, NULL, "appl", NULL);   /* a prefix is another key */
  assert_par(par_exists(f->reg, NULL, "apple\0", 6), PAR_NOT_FOUND);
  expect_s(f->reg, NULL, "apples", NULL);

  /* Keys are bytes: an embedded NUL makes a distinct key. */
  assert_ok(par_put(f->reg, "a\0b", 3, "nul", 3, 0));
  char buf[16];
  size_t len = 0;
  assert_ok(par_get(f->reg, NULL, "a\0b", 3, buf, sizeof buf, &len));
  assert_int_equal(len, 3);
  assert_memory_equal(buf, "nul", 3);
  assert_par(par_get(f->reg, NULL, "a", 1, buf, sizeof buf, &len), PAR_NOT_FOUND);

  assert_ok(par_delete(f->reg, "apple", 5, 0));
  expect_s(f->reg, NULL, "apple", NULL);
  expect_s(f->reg, NULL, "banana", "yellow");
  /* Deleting an absent key is harmless. */
  assert_par2(par_delete(f->reg, "never", 5, 0), PAR_OK, PAR_NOT_FOUND);
  expect_s(f->reg, NULL, "never", NULL);
  /* Put after delete resurrects. */
  assert_ok(put_s(f->reg, "apple", "green"));
  expect_s(f->reg, NULL, "apple", "green");

  /* The same holds once the data is on the device levels. */
  assert_ok(par_flush(f->reg));
  expect_s(f->reg, NULL, "apple", "green");
  expect_s(f->reg, NULL, "banana", "yellow");
  assert_ok(par_delete(f->reg, "banana", 6, PAR_SYNC));
  expect_s(f->reg, NULL, "banana", NULL); /* tombstone in L0 hides L1 */
  assert_ok(par_flush(f->reg));
  expect_s(f->reg, NULL, "banana", NULL);
  expect_s(f->reg, NULL, "apple", "green");
}

static void test_get_small_buffer(void **state) {
  fx *f = *state;
  uint8_t val[3000];
  tu_fill_pattern(val, sizeof val, 7);
  assert_ok(par_put(f->reg, "k", 1, val, sizeof val, 0));
  for (int round = 0; round < 2; round++) {
    uint8_t buf[64];
    memset(buf, 0xee, sizeof buf);
    size_t len = 0;
    assert_ok(par_get(f->reg, NULL, "k", 1, buf, 10, &len));
    assert_int_equal(len, sizeof val); /* the full length */
    assert_memory_equal(buf, val, 10); /* and the first cap bytes */
    for (size_t i = 10; i < sizeof buf; i++) assert_int_equal(buf[i], 0xee);

    len = 0;
    assert_ok(par_get(f->reg, NULL, "k", 1, buf, 0, &len));
    assert_int_equal(len, sizeof val);
    assert_int_equal(buf[0], val[0]); /* from the call above: nothing written */

    uint8_t big[3000];
    len = 0;
    assert_ok(par_get(f->reg, NULL, "k", 1, big, sizeof big, &len)); /* exact fit */
    assert_int_equal(len, sizeof val);
    assert_memory_equal(big, val, sizeof val);
    assert_ok(par_flush(f->reg)); /* second round reads from a device level */
  }
}

static void test_overwrite_and_empty_value(void **state) {
  fx *f = *state;
  static const size_t sizes[] = {5, 100, 0, 1500, 9, 200000, 0, 700, 1};
  uint8_t *buf = malloc(PAR_MAX_VALUE_SIZE);
  uint8_t *val = malloc(PAR_MAX_VALUE_SIZE);
  assert_non_null(buf);
  assert_non_null(val);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    tu_fill_pattern(val, sizes[i], i);
    assert_ok(par_put(f->reg, "ow", 2, val, sizes[i], 0));
    if (i % 3 == 2) assert_ok(par_flush(f->reg));
    size_t len = 999999;
    assert_ok(par_get(f->reg, NULL, "ow", 2, buf, PAR_MAX_VALUE_SIZE, &len));
    assert_int_equal(len, sizes[i]);
    assert_true(tu_check_pattern(buf, len, i));
    assert_ok(par_exists(f->reg, NULL, "ow", 2));
  }
  /* An empty value is present, not deleted, also in a scan. */
  assert_ok(par_put(f->reg, "empty", 5, "", 0, 0));
  size_t len = 1;
  assert_ok(par_get(f->reg, NULL, "empty", 5, buf, 16, &len));
  assert_int_equal(len, 0);
  par_scanner *s = NULL;
  assert_ok(par_scanner_open(f->reg, NULL, &s));
  assert_ok(par_scanner_seek(s, "empty", 5, PAR_SEEK_GE));
  assert_true(par_scanner_valid(s));
  const void *k, *v;
  size_t kl, vl = 1;
  assert_ok(par_scanner_key(s, &k, &kl));
  assert_int_equal(kl, 5);
  assert_memory_equal(k, "empty", 5);
  assert_ok(par_scanner_value(s, &v, &vl));
  assert_int_equal(vl, 0);
  par_scanner_close(s);
  reopen(f, 0);
  len = 1;
  assert_ok(par_get(f->reg, NULL, "empty", 5, buf, 16, &len));
  assert_int_equal(len, 0);
  len = 0;
  assert_ok(par_get(f->reg, NULL, "ow", 2, buf, PAR_MAX_VALUE_SIZE, &len));
  assert_int_equal(len, 1);
  free(buf);
  free(val);
}

/* ---- batches -------------------------------------------------------------- */

static void test_batch_basic(void **state) {
  fx *f = *state;
  par_batch *b = NULL;
  assert_ok(par_batch_create(&b));
  assert_non_null(b);
  assert_int_equal(par_batch_count(b), 0);

  assert_ok(put_s(f->reg, "old", "x"));
  assert_ok(par_batch_put(b, "b1", 2, "v1", 2));
  assert_ok(par_batch_put(b, "b2", 2, "v2", 2));
  assert_ok(par_batch_delete(b, "old", 3));
  assert_ok(par_batch_put(b, "b3", 2, "first", 5));
  assert_ok(par_batch_put(b, "b3", 2, "second", 6)); /* later op wins */
  assert_ok(par_batch_put(b, "b4", 2, "gone", 4));
  assert_ok(par_batch_delete(b, "b4", 2)); /* put then delete: absent */
  assert_ok(par_batch_delete(b, "b5", 2));
  assert_ok(par_batch_put(b, "b5", 2, "back", 4)); /* delete then put: present */
  assert_int_equal(par_batch_count(b), 9);

  /* Nothing is visible before par_write; the batch copied the caller's bytes. */
  expect_s(f->reg, NULL, "b1", NULL);
  expect_s(f->reg, NULL, "old", "x");
  assert_ok(par_write(f->reg, b, 0));
  expect_s(f->reg, NULL, "b1", "v1");
  expect_s(f->reg, NULL, "b2", "v2");
  expect_s(f->reg, NULL, "old", NULL);
  expect_s(f->reg, NULL, "b3", "second");
  expect_s(f->reg, NULL, "b4", NULL);
  expect_s(f->reg, NULL, "b5", "back");

  /* Clear and reuse; writing the same batch twice is fine. */
  par_batch_clear(b);
  assert_int_equal(par_batch_count(b), 0);
  assert_ok(par_write(f->reg, b, 0)); /* an empty batch is a no-op */
  assert_ok(par_batch_put(b, "c1", 2, "z", 1));
  assert_int_equal(par_batch_count(b), 1);
  assert_ok(par_write(f->reg, b, PAR_SYNC));
  assert_ok(par_write(f->reg, b, 0));
  expect_s(f->reg, NULL, "c1", "z");
  expect_s(f->reg, NULL, "b1", "v1");
  par_batch_destroy(b);

  reopen(f, 0);
  expect_s(f->reg, NULL, "b3", "second");
  expect_s(f->reg, NULL, "b4", NULL);
  expect_s(f->reg, NULL, "b5", "back");
  expect_s(f->reg, NULL, "old", NULL);
  expect_s(f->reg, NULL, "c1", "z");
}

#define ATOM_KEYS 40
#define ATOM_DEL_KEYS 10
#define ATOM_ROUNDS 400

typedef struct atom_ctx {
  par_region *reg;
  atomic_int done;
  atomic_long checks;
} atom_ctx;

static void *atom_writer(void *arg) {
  atom_ctx *c = arg;
  par_batch *b = NULL;
  if (par_batch_create(&b) != PAR_OK) {
    TU_CHECK(0, "par_batch_create failed");
    atomic_store(&c->done, 1);
    return NULL;
  }
  char key[32], val[200];
  for (uint64_t v = 1; v <= ATOM_ROUNDS; v++) {
    par_batch_clear(b);
    for (int i = 0; i < ATOM_KEYS; i++) {
      snprintf(key, sizeof key, "atom%03d", i);
      size_t vl = 8 + (size_t)((v * 31 + (uint64_t)i) % 150);
      memcpy(val, &v, 8);
      tu_fill_pattern(val + 8, vl - 8, v * 1000 + (uint64_t)i);
      TU_CHECK(par_batch_put(b, key, strlen(key), val, vl) == PAR_OK, "batch_put");
    }
    for (int i = 0; i < ATOM_DEL_KEYS; i++) {
      snprintf(key, sizeof key, "atomx%03d", i);
      if (v % 2)
        TU_CHECK(par_batch_delete(b, key, strlen(key)) == PAR_OK, "batch_delete");
      else
        TU_CHECK(par_batch_put(b, key, strlen(key), &v, 8) == PAR_OK, "batch_put");
    }
    int rc = par_write(c->reg, b, v % 50 == 0 ? PAR_SYNC : 0);
    TU_CHECK(rc == PAR_OK, "par_write: %s", par_strerror(rc));
  }
  par_batch_destroy(b);
  atomic_store(&c->done, 1);
  return NULL;
}

/* Reads every batch key through one snapshot: all must carry one version. */
static void atom_check_snapshot(atom_ctx *c, const par_snapshot *snap) {
  char key[32];
  uint8_t buf[256];
  int64_t seen = -1;
  for (int i = 0; i < ATOM_KEYS; i++) {
    snprintf(key, sizeof key, "atom%03d", i);
    size_t len = 0;
    int rc = par_get(c->reg, snap, key, strlen(key), buf, sizeof buf, &len);
    uint64_t v = 0;
    if (rc == PAR_OK) {
      TU_CHECK(len >= 8 && len <= sizeof buf, "len %zu", len);
      memcpy(&v, buf, 8);
      TU_CHECK(tu_check_pattern(buf + 8, len - 8, v * 1000 + (uint64_t)i),
               "torn value for %s version %llu", key, (unsigned long long)v);
    } else {
      TU_CHECK(rc == PAR_NOT_FOUND, "par_get: %s", par_strerror(rc));
    }
    if (seen < 0) seen = (int64_t)v;
    TU_CHECK((uint64_t)seen == v, "batch seen partially: key %s version %llu, key 0 %lld", key,
             (unsigned long long)v, (long long)seen);
  }
  for (int i = 0; i < ATOM_DEL_KEYS; i++) {
    snprintf(key, sizeof key, "atomx%03d", i);
    int rc = par_exists(c->reg, snap, key, strlen(key));
    int want_present = seen > 0 && seen % 2 == 0;
    TU_CHECK(rc == (want_present ? PAR_OK : PAR_NOT_FOUND),
             "delete half of batch %lld seen partially (key %s: %s)", (long long)seen, key,
             par_strerror(rc));
  }
  atomic_fetch_add(&c->checks, 1);
}

/* Reads the batch keys through a scanner (implicit snapshot). */
static void atom_check_scanner(atom_ctx *c) {
  par_scanner *s = NULL;
  int rc = par_scanner_open(c->reg, NULL, &s);
  TU_CHECK(rc == PAR_OK, "scanner_open: %s", par_strerror(rc));
  if (rc != PAR_OK) return;
  rc = par_scanner_seek(s, "atom", 4, PAR_SEEK_GE);
  TU_CHECK(rc == PAR_OK, "seek: %s", par_strerror(rc));
  int n = 0, nx = 0;
  int64_t seen = -1;
  while (rc == PAR_OK && par_scanner_valid(s)) {
    const void *k, *v;
    size_t kl, vl;
    par_scanner_key(s, &k, &kl);
    par_scanner_value(s, &v, &vl);
    if (kl >= 5 && memcmp(k, "atomx", 5) == 0) {
      nx++;
    } else if (kl >= 4 && memcmp(k, "atom", 4) == 0) {
      uint64_t ver = 0;
      TU_CHECK(vl >= 8, "short value");
      if (vl >= 8) memcpy(&ver, v, 8);
      if (seen < 0) seen = (int64_t)ver;
      TU_CHECK((uint64_t)seen == ver, "scanner saw batch partially: %llu vs %lld",
               (unsigned long long)ver, (long long)seen);
      n++;
    } else {
      break;
    }
    rc = par_scanner_next(s);
  }
  par_scanner_close(s);
  TU_CHECK(n == 0 || n == ATOM_KEYS, "scanner saw %d of %d batch keys", n, ATOM_KEYS);
  int want_x = seen > 0 && seen % 2 == 0 ? ATOM_DEL_KEYS : 0;
  TU_CHECK(nx == want_x, "scanner saw %d deletable keys at version %lld", nx, (long long)seen);
}

static void test_batch_atomic_visibility(void **state) {
  fx *f = *state;
  atom_ctx c = {.reg = f->reg};
  atomic_init(&c.done, 0);
  atomic_init(&c.checks, 0);
  pthread_t w;
  assert_int_equal(pthread_create(&w, NULL, atom_writer, &c), 0);
  while (!atomic_load(&c.done)) {
    par_snapshot *snap = NULL;
    int rc = par_snapshot_create(f->reg, &snap);
    TU_CHECK(rc == PAR_OK, "snapshot_create: %s", par_strerror(rc));
    if (rc != PAR_OK) break;
    atom_check_snapshot(&c, snap);
    par_snapshot_release(snap);
    atom_check_scanner(&c);
  }
  pthread_join(w, NULL);
  atom_check_scanner(&c);
  fprintf(stderr, "batch atomicity: %ld snapshot checks\n", (long)atomic_load(&c.checks));
  assert_int_equal(tu_failures(), 0);
}

/* ---- snapshots ------------------------------------------------------------ */

static void test_snapshot_isolation(void **state) {
  fx *f = *state;
  assert_ok(put_s(f->reg, "s1", "one"));
  assert_ok(put_s(f->reg, "s2", "two"));
  assert_ok(put_s(f->reg, "s3", "three"));
  par_snapshot *snap = NULL;
  assert_ok(par_snapshot_create(f->reg, &snap));
  assert_non_null(snap);

  assert_ok(put_s(f->reg, "s1", "ONE"));
  assert_ok(par_delete(f->reg, "s2", 2, 0));
  assert_ok(put_s(f->reg, "s4", "four"));
  par_batch *b = NULL;
  assert_ok(par_batch_create(&b));
  assert_ok(par_batch_put(b, "s3", 2, "THREE", 5));
  assert_ok(par_write(f->reg, b, 0));
  par_batch_destroy(b);

  for (int round = 0; round < 3; round++) {
    expect_s(f->reg, snap, "s1", "one");
    expect_s(f->reg, snap, "s2", "two");
    expect_s(f->reg, snap, "s3", "three");
    expect_s(f->reg, snap, "s4", NULL);
    expect_s(f->reg, NULL, "s1", "ONE");
    expect_s(f->reg, NULL, "s2", NULL);
    expect_s(f->reg, NULL, "s3", "THREE");
    expect_s(f->reg, NULL, "s4", "four");

    tu_map m;
    tu_map_init(&m);
    tu_map_put(&m, "s1", 2, "one", 3);
    tu_map_put(&m, "s2", 2, "two", 3);
    tu_map_put(&m, "s3", 2, "three", 5);
    char err[512];
    if (tu_verify_region(f->reg, snap, &m, err, sizeof err) != 0) fail_msg("round %d: %s", round, err);
    tu_map_free(&m);

    /* Compactions must not drop versions a live snapshot needs. */
    if (round == 0) assert_ok(par_flush(f->reg));
    if (round == 1) {
      for (int i = 0; i < 3000; i++) {
        char v[64];
        snprintf(v, sizeof v, "gen-%d", i);
        assert_ok(put_s(f->reg, "s1", v));
        assert_ok(par_delete(f->reg, "s2", 2, 0));
      }
      assert_ok(par_flush(f->reg));
      assert_ok(put_s(f->reg, "s1", "ONE"));
    }
  }
  par_snapshot_release(snap);

  /* Two snapshots at different times see different states. */
  par_snapshot *a = NULL, *bb = NULL;
  assert_ok(par_snapshot_create(f->reg, &a));
  assert_ok(put_s(f->reg, "s5", "five"));
  assert_ok(par_snapshot_create(f->reg, &bb));
  expect_s(f->reg, a, "s5", NULL);
  expect_s(f->reg, bb, "s5", "five");
  par_snapshot_release(bb);
  par_snapshot_release(a);
}

/* ---- scanners ------------------------------------------------------------- */

/* Expects the scanner to yield exactly keys want[0..n) then end. */
static void expect_scan(par_scanner *s, const char *const *want, int n) {
  for (int i = 0; i < n; i++) {
    if (!par_scanner_valid(s)) fail_msg("scan ended after %d keys, expected %s next", i, want[i]);
    const void *k;
    size_t kl;
    assert_ok(par_scanner_key(s, &k, &kl));
    if (kl != strlen(want[i]) || memcmp(k, want[i], kl) != 0)
      fail_msg("scan position %d: got %s, expected %s", i, tu_key_str(k, kl), want[i]);
    assert_ok(par_scanner_next(s));
  }
  if (par_scanner_valid(s)) {
    const void *k;
    size_t kl;
    par_scanner_key(s, &k, &kl);
    fail_msg("scan continued after %d keys with %s", n, tu_key_str(k, kl));
  }
}

static void test_scanner_seek_modes(void **state) {
  fx *f = *state;
  par_scanner *s = NULL;

  /* Empty region. */
  assert_ok(par_scanner_open(f->reg, NULL, &s));
  assert_ok(par_scanner_seek(s, NULL, 0, PAR_SEEK_FIRST));
  assert_false(par_scanner_valid(s));
  const void *k;
  size_t kl;
  assert_true(par_scanner_key(s, &k, &kl) != PAR_OK);
  assert_ok(par_scanner_seek(s, "a", 1, PAR_SEEK_GE));
  assert_false(par_scanner_valid(s));
  par_scanner_close(s);

  /* Insertion order differs from key order; bytes compare unsigned; a
   * prefix sorts before its extensions. */
  const char *ins[] = {"b", "ab", "a", "\xff", "abc", "b\x01", "aa", "B", "\x7f", "\x80"};
  for (size_t i = 0; i < sizeof ins / sizeof ins[0]; i++)
    assert_ok(put_s(f->reg, ins[i], ins[i]));
  const char *const sorted[] = {"B", "a", "aa", "ab", "abc", "b", "b\x01", "\x7f", "\x80", "\xff"};
  const int n = 10;

  for (int round = 0; round < 2; round++) {
    assert_ok(par_scanner_open(f->reg, NULL, &s));
    assert_ok(par_scanner_seek(s, "zzz", 3, PAR_SEEK_FIRST)); /* key ignored */
    expect_scan(s, sorted, n);
    assert_ok(par_scanner_seek(s, "ab", 2, PAR_SEEK_GE)); /* re-seek a finished scanner */
    expect_scan(s, sorted + 3, n - 3);
    assert_ok(par_scanner_seek(s, "ab", 2, PAR_SEEK_GT));
    expect_scan(s, sorted + 4, n - 4);
    assert_ok(par_scanner_seek(s, "aba", 3, PAR_SEEK_GE)); /* between keys */
    expect_scan(s, sorted + 4, n - 4);
    assert_ok(par_scanner_seek(s, "aba", 3, PAR_SEEK_GT));
    expect_scan(s, sorted + 4, n - 4);
    assert_ok(par_scanner_seek(s, "A", 1, PAR_SEEK_GE)); /* before the first */
    expect_scan(s, sorted, n);
    assert_ok(par_scanner_seek(s, "\xff", 1, PAR_SEEK_GE));
    expect_scan(s, sorted + 9, 1);
    assert_ok(par_scanner_seek(s, "\xff", 1, PAR_SEEK_GT)); /* after the last */
    expect_scan(s, NULL, 0);
    assert_ok(par_scanner_seek(s, "\xff\x00", 2, PAR_SEEK_GE));
    expect_scan(s, NULL, 0);
    assert_ok(par_scanner_seek(s, "b", 1, PAR_SEEK_GT));
    expect_scan(s, sorted + 6, n - 6);
    par_scanner_close(s);
    assert_ok(par_flush(f->reg)); /* round two: from a device level */
  }

  /* Merge across levels: L1 holds everything, L0 deletes and overwrites. */
  assert_ok(par_delete(f->reg, "ab", 2, 0));
  assert_ok(par_delete(f->reg, "\xff", 1, 0));
  assert_ok(put_s(f->reg, "aa", "new"));
  assert_ok(put_s(f->reg, "ac", "ac"));
  const char *const merged[] = {"B", "a", "aa", "abc", "ac", "b", "b\x01", "\x7f", "\x80"};
  assert_ok(par_scanner_open(f->reg, NULL, &s));
  assert_ok(par_scanner_seek(s, NULL, 0, PAR_SEEK_FIRST));
  expect_scan(s, merged, 9);
  assert_ok(par_scanner_seek(s, "aa", 2, PAR_SEEK_GT));
  expect_scan(s, merged + 3, 6);
  assert_ok(par_scanner_seek(s, "aa", 2, PAR_SEEK_GE));
  assert_true(par_scanner_valid(s));
  const void *v;
  size_t vl;
  assert_ok(par_scanner_value(s, &v, &vl));
  assert_int_equal(vl, 3);
  assert_memory_equal(v, "new", 3);
  par_scanner_close(s);
}

/* Expects the scanner on want[n-1], then prev through want[0], then no entry. */
static void expect_rscan(par_scanner *s, const char *const *want, int n) {
  for (int i = n - 1; i >= 0; i--) {
    if (!par_scanner_valid(s)) fail_msg("reverse scan ended early, expected %s", want[i]);
    const void *k;
    size_t kl;
    assert_ok(par_scanner_key(s, &k, &kl));
    if (kl != strlen(want[i]) || memcmp(k, want[i], kl) != 0)
      fail_msg("reverse scan position %d: got %s, expected %s", i, tu_key_str(k, kl), want[i]);
    assert_ok(par_scanner_prev(s));
  }
  if (par_scanner_valid(s)) {
    const void *k;
    size_t kl;
    par_scanner_key(s, &k, &kl);
    fail_msg("reverse scan continued after %d keys with %s", n, tu_key_str(k, kl));
  }
}

static void expect_key(par_scanner *s, const char *want) {
  const void *k;
  size_t kl;
  assert_true(par_scanner_valid(s));
  assert_ok(par_scanner_key(s, &k, &kl));
  if (kl != strlen(want) || memcmp(k, want, kl) != 0)
    fail_msg("scanner on %s, expected %s", tu_key_str(k, kl), want);
}

/* PAR_SEEK_LAST/LE/LT and prev, in L0 and in a device level, merged over
 * levels where a newer delete must hide an older put; direction changes. */
static void test_scanner_reverse(void **state) {
  fx *f = *state;
  par_scanner *s = NULL;
  assert_ok(par_scanner_open(f->reg, NULL, &s));
  assert_ok(par_scanner_seek(s, NULL, 0, PAR_SEEK_LAST));
  assert_false(par_scanner_valid(s));
  assert_ok(par_scanner_seek(s, "a", 1, PAR_SEEK_LE));
  assert_false(par_scanner_valid(s));
  assert_ok(par_scanner_prev(s)); /* on no entry: nothing happens */
  assert_false(par_scanner_valid(s));
  assert_int_equal(par_scanner_seek(s, NULL, 0, PAR_SEEK_LE), PAR_EINVAL);
  assert_int_equal(par_scanner_seek(s, "a", 1, (par_seek_mode)6), PAR_EINVAL);
  assert_int_equal(par_scanner_prev(NULL), PAR_EINVAL);
  par_scanner_close(s);

  const char *ins[] = {"b", "ab", "a", "\xff", "abc", "b\x01", "aa", "B", "\x7f", "\x80"};
  for (size_t i = 0; i < sizeof ins / sizeof ins[0]; i++)
    assert_ok(put_s(f->reg, ins[i], ins[i]));
  const char *const sorted[] = {"B", "a", "aa", "ab", "abc", "b", "b\x01", "\x7f", "\x80", "\xff"};
  const int n = 10;
  for (int round = 0; round < 2; round++) {
    assert_ok(par_scanner_open(f->reg, NULL, &s));
    assert_ok(par_scanner_seek(s, "zzz", 3, PAR_SEEK_LAST)); /* key ignored */
    expect_rscan(s, sorted, n);
    assert_ok(par_scanner_seek(s, "ab", 2, PAR_SEEK_LE));
    expect_rscan(s, sorted, 4);
    assert_ok(par_scanner_seek(s, "ab", 2, PAR_SEEK_LT));
    expect_rscan(s, sorted, 3);
    assert_ok(par_scanner_seek(s, "aba", 3, PAR_SEEK_LE)); /* between keys */
    expect_rscan(s, sorted, 4);
    assert_ok(par_scanner_seek(s, "aba", 3, PAR_SEEK_LT));
    expect_rscan(s, sorted, 4);
    assert_ok(par_scanner_seek(s, "A", 1, PAR_SEEK_LE)); /* before the first */
    expect_rscan(s, NULL, 0);
    assert_ok(par_scanner_seek(s, "B", 1, PAR_SEEK_LE));
    expect_rscan(s, sorted, 1);
    assert_ok(par_scanner_seek(s, "\xff\xff", 2, PAR_SEEK_LT)); /* after the last */
    expect_rscan(s, sorted, n);
    /* Direction changes: next after prev and prev after next. */
    assert_ok(par_scanner_seek(s, "abc", 3, PAR_SEEK_GE));
    assert_ok(par_scanner_prev(s));
    expect_key(s, "ab");
    assert_ok(par_scanner_next(s));
    expect_key(s, "abc");
    assert_ok(par_scanner_next(s));
    expect_key(s, "b");
    assert_ok(par_scanner_prev(s));
    assert_ok(par_scanner_prev(s));
    expect_key(s, "ab");
    assert_ok(par_scanner_seek(s, "B", 1, PAR_SEEK_GE));
    assert_ok(par_scanner_prev(s)); /* off the front */
    assert_false(par_scanner_valid(s));
    assert_ok(par_scanner_next(s)); /* stays off until a seek */
    assert_false(par_scanner_valid(s));
    par_scanner_close(s);
    assert_ok(par_flush(f->reg));
  }

  /* L1 holds everything; L0 deletes the ends and a middle key, overwrites
   * one and adds one. */
  assert_ok(par_delete(f->reg, "ab", 2, 0));
  assert_ok(par_delete(f->reg, "\xff", 1, 0));
  assert_ok(par_delete(f->reg, "B", 1, 0));
  assert_ok(put_s(f->reg, "aa", "new"));
  assert_ok(put_s(f->reg, "ac", "ac"));
  const char *const merged[] = {"a", "aa", "abc", "ac", "b", "b\x01", "\x7f", "\x80"};
  assert_ok(par_scanner_open(f->reg, NULL, &s));
  assert_ok(par_scanner_seek(s, NULL, 0, PAR_SEEK_LAST));
  expect_rscan(s, merged, 8);
  assert_ok(par_scanner_seek(s, "ab", 2, PAR_SEEK_LE)); /* deleted: the one before */
  expect_key(s, "aa");
  const void *v;
  size_t vl;
  assert_ok(par_scanner_value(s, &v, &vl));
  assert_int_equal(vl, 3);
  assert_memory_equal(v, "new", 3);
  assert_ok(par_scanner_next(s)); /* over the deleted key */
  expect_key(s, "abc");
  assert_ok(par_scanner_prev(s));
  assert_ok(par_scanner_prev(s));
  expect_key(s, "a");
  assert_ok(par_scanner_prev(s)); /* "B" is deleted */
  assert_false(par_scanner_valid(s));
  par_scanner_close(s);
}

/* Scanners read values out of the logs only when asked: a key-only scan,
 * forward and reverse, over large and medium pairs (in L0, then in L1)
 * reads none, which the read counters show. (test_medium checks the
 * medium counter where values sit in the transient log.) */
static void test_scanner_values_lazy(void **state) {
  fx *f = *state;
  uint8_t big[5000], mid[400];
  char key[16];
  for (int i = 0; i < 20; i++) {
    snprintf(key, sizeof key, "lazy%02d", i);
    tu_fill_pattern(big, sizeof big, (uint64_t)i);
    tu_fill_pattern(mid, sizeof mid, (uint64_t)i);
    if (i % 2) assert_ok(par_put(f->reg, key, strlen(key), big, sizeof big, 0));
    else assert_ok(par_put(f->reg, key, strlen(key), mid, sizeof mid, 0));
  }
  for (int round = 0; round < 2; round++) {
    par_stats st;
    assert_ok(par_region_stats(f->reg, &st));
    uint64_t large0 = st.large_log_value_reads, medium0 = st.medium_log_value_reads;
    par_scanner *s;
    assert_ok(par_scanner_open(f->reg, NULL, &s));
    int n = 0;
    assert_ok(par_scanner_seek(s, NULL, 0, PAR_SEEK_FIRST));
    for (; par_scanner_valid(s); n++) assert_ok(par_scanner_next(s));
    assert_ok(par_scanner_seek(s, NULL, 0, PAR_SEEK_LAST));
    for (; par_scanner_valid(s); n++) assert_ok(par_scanner_prev(s));
    assert_int_equal(n, 40);
    assert_ok(par_region_stats(f->reg, &st));
    assert_int_equal(st.large_log_value_reads, large0);
    assert_int_equal(st.medium_log_value_reads, medium0);
    /* One large value asked for twice: one read. */
    assert_ok(par_scanner_seek(s, "lazy01", 6, PAR_SEEK_GE));
    const void *v;
    size_t vl;
    assert_ok(par_scanner_value(s, &v, &vl));
    assert_ok(par_scanner_value(s, &v, &vl));
    assert_int_equal(vl, sizeof big);
    assert_true(tu_check_pattern(v, vl, 1));
    assert_ok(par_region_stats(f->reg, &st));
    assert_int_equal(st.large_log_value_reads, large0 + 1);
    assert_ok(par_scanner_prev(s));
    assert_ok(par_scanner_value(s, &v, &vl));
    assert_int_equal(vl, sizeof mid);
    assert_true(tu_check_pattern(v, vl, 0));
    par_scanner_close(s);
    assert_ok(par_flush(f->reg));
  }
}

/* par_multi_get: keys in any order, repeats, bad keys, a newer level's
 * delete over an older put, a large value still in a tail buffer (its copy
 * lives with the snapshot), and the snapshot's isolation from later writes. */
static void test_multi_get(void **state) {
  fx *f = *state;
  uint8_t big[5000];
  tu_fill_pattern(big, sizeof big, 9);
  assert_ok(put_s(f->reg, "a", "va"));
  assert_ok(put_s(f->reg, "b", "vb"));
  assert_ok(put_s(f->reg, "c", "vc"));
  assert_ok(par_flush(f->reg)); /* L1: a, b, c */
  assert_ok(par_delete(f->reg, "b", 1, 0));
  assert_ok(par_put(f->reg, "d", 1, big, sizeof big, 0)); /* in the large log's tail buffer */
  par_snapshot *snap;
  assert_ok(par_snapshot_create(f->reg, &snap));
  assert_ok(put_s(f->reg, "a", "changed"));
  char toolong[PAR_MAX_KEY_SIZE + 1];
  memset(toolong, 'x', sizeof toolong);
  const void *keys[] = {"d", "b", "zz", "a", "", toolong, "c", "a"};
  size_t lens[] = {1, 1, 2, 1, 0, sizeof toolong, 1, 1};
  const void *vals[8];
  size_t vl[8];
  int st[8];
  assert_ok(par_multi_get(snap, 8, keys, lens, vals, vl, st));
  int want[] = {PAR_OK, PAR_NOT_FOUND, PAR_NOT_FOUND, PAR_OK, PAR_EINVAL, PAR_ETOOBIG, PAR_OK, PAR_OK};
  for (int i = 0; i < 8; i++) assert_int_equal(st[i], want[i]);
  assert_int_equal(vl[0], sizeof big);
  assert_true(tu_check_pattern(vals[0], vl[0], 9));
  assert_int_equal(vl[3], 2);
  assert_memory_equal(vals[3], "va", 2);
  assert_ptr_equal(vals[3], vals[7]);
  assert_memory_equal(vals[6], "vc", 2);
  assert_null(vals[1]);
  assert_ok(par_multi_get(snap, 0, NULL, NULL, NULL, NULL, NULL));
  assert_int_equal(par_multi_get(NULL, 1, keys, lens, vals, vl, st), PAR_EINVAL);
  assert_int_equal(par_multi_get(snap, 1, keys, NULL, vals, vl, st), PAR_EINVAL);
  par_snapshot_release(snap);
}

/* A large value still in the log's tail buffer is copied out for the
 * scanner: asking for it twice gives the same bytes, valid until the scanner
 * moves (under ASan a freed first copy would be caught). */
static void test_scanner_value_stable_until_move(void **state) {
  fx *f = *state;
  uint8_t big[5000];
  tu_fill_pattern(big, sizeof big, 42);
  assert_ok(par_put(f->reg, "big", 3, big, sizeof big, 0));
  assert_ok(par_put(f->reg, "next", 4, "n", 1, 0));
  par_scanner *s;
  assert_ok(par_scanner_open(f->reg, NULL, &s));
  assert_ok(par_scanner_seek(s, "big", 3, PAR_SEEK_GE));
  const void *v1, *v2;
  size_t l1, l2;
  assert_ok(par_scanner_value(s, &v1, &l1));
  assert_ok(par_scanner_value(s, &v2, &l2));
  assert_ptr_equal(v1, v2);
  assert_int_equal(l1, sizeof big);
  assert_true(tu_check_pattern(v1, l1, 42));
  assert_ok(par_scanner_next(s));
  assert_ok(par_scanner_value(s, &v2, &l2));
  assert_int_equal(l2, 1);
  par_scanner_close(s);
}

static void test_scanner_implicit_snapshot(void **state) {
  fx *f = *state;
  assert_ok(put_s(f->reg, "k1", "v1"));
  assert_ok(put_s(f->reg, "k3", "v3"));
  par_scanner *s = NULL;
  assert_ok(par_scanner_open(f->reg, NULL, &s)); /* snapshot taken here */
  assert_ok(put_s(f->reg, "k2", "v2"));
  assert_ok(par_delete(f->reg, "k3", 2, 0));
  assert_ok(put_s(f->reg, "k1", "changed"));
  assert_ok(par_scanner_seek(s, NULL, 0, PAR_SEEK_FIRST));
  expect_scan(s, (const char *const[]){"k1", "k3"}, 2);
  assert_ok(par_scanner_seek(s, "k1", 2, PAR_SEEK_GE));
  const void *v;
  size_t vl;
  assert_ok(par_scanner_value(s, &v, &vl));
  assert_int_equal(vl, 2);
  assert_memory_equal(v, "v1", 2);
  par_scanner_close(s);

  /* A scanner over an explicit snapshot. */
  par_snapshot *snap = NULL;
  assert_ok(par_snapshot_create(f->reg, &snap));
  assert_ok(put_s(f->reg, "k0", "v0"));
  assert_ok(par_scanner_open(f->reg, snap, &s));
  assert_ok(par_scanner_seek(s, NULL, 0, PAR_SEEK_FIRST));
  expect_scan(s, (const char *const[]){"k1", "k2"}, 2);
  par_scanner_close(s);
  par_snapshot_release(snap);
}

static void test_scanner_random_against_model(void **state) {
  fx *f = *state;
  uint64_t rng = tu_seed("api_basic/scanner_random");
  tu_map m;
  tu_map_init(&m);
  uint8_t key[64], val[400];
  for (int i = 0; i < 6000; i++) {
    size_t kl = 1 + tu_rand_range(&rng, 12);
    for (size_t j = 0; j < kl; j++) key[j] = (uint8_t)("ab\x00\xff"[tu_rand_range(&rng, 4)] + (tu_rand_range(&rng, 3) == 0));
    size_t vl = tu_rand_range(&rng, sizeof val);
    tu_rand_bytes(&rng, val, vl);
    if (tu_rand_range(&rng, 5) == 0) {
      assert_ok(par_delete(f->reg, key, kl, 0));
      tu_map_del(&m, key, kl);
    } else {
      assert_ok(par_put(f->reg, key, kl, val, vl, 0));
      tu_map_put(&m, key, kl, val, vl);
    }
    if (i == 2000 || i == 4000) assert_ok(par_flush(f->reg));
  }
  char err[512];
  if (tu_verify_region(f->reg, NULL, &m, err, sizeof err) != 0) fail_msg("%s", err);
  par_scanner *s = NULL;
  assert_ok(par_scanner_open(f->reg, NULL, &s));
  for (int i = 0; i < 2000; i++) {
    size_t kl = 1 + tu_rand_range(&rng, 12);
    for (size_t j = 0; j < kl; j++) key[j] = (uint8_t)("ab\x00\xff"[tu_rand_range(&rng, 4)] + (tu_rand_range(&rng, 3) == 0));
    int gt = (int)tu_rand_range(&rng, 2);
    assert_ok(par_scanner_seek(s, key, kl, gt ? PAR_SEEK_GT : PAR_SEEK_GE));
    size_t pos = tu_map_lower_bound(&m, key, kl, gt);
    for (int step = 0; step < 5; step++, pos++) {
      if (pos >= m.n) {
        if (par_scanner_valid(s)) fail_msg("seek %s: expected end", tu_key_str(key, kl));
        break;
      }
      if (!par_scanner_valid(s)) fail_msg("seek %s: ended early at step %d", tu_key_str(key, kl), step);
      const void *k, *v;
      size_t skl, svl;
      assert_ok(par_scanner_key(s, &k, &skl));
      assert_ok(par_scanner_value(s, &v, &svl));
      if (tu_key_cmp(k, skl, m.e[pos].key, m.e[pos].klen) != 0)
        fail_msg("seek %s mode %s step %d: wrong key %s", tu_key_str(key, kl), gt ? "GT" : "GE",
                 step, tu_key_str(k, skl));
      assert_int_equal(svl, m.e[pos].vlen);
      assert_memory_equal(v, m.e[pos].val, svl);
      assert_ok(par_scanner_next(s));
    }
  }
  par_scanner_close(s);
  tu_map_free(&m);
}

/* ---- durability across close/reopen ---------------------------------------- */

static void fill_mixed(fx *f, tu_map *m, uint64_t seed, int n) {
  uint64_t rng = seed;
  static uint8_t val[70000];
  char key[64];
  for (int i = 0; i < n; i++) {
    int id = (int)tu_rand_range(&rng, (uint64_t)n / 2 + 1);
    snprintf(key, sizeof key, "key-%06d", id);
    uint64_t c = tu_rand_range(&rng, 100);
    size_t vl = c < 60 ? tu_rand_range(&rng, 100) : c < 90 ? 120 + tu_rand_range(&rng, 900)
                : c < 99 ? 1024 + tu_rand_range(&rng, 4000) : 65536;
    tu_rand_bytes(&rng, val, vl);
    if (tu_rand_range(&rng, 8) == 0) {
      assert_ok(par_delete(f->reg, key, strlen(key), 0));
      tu_map_del(m, key, strlen(key));
    } else {
      assert_ok(par_put(f->reg, key, strlen(key), val, vl, 0));
      tu_map_put(m, key, strlen(key), val, vl);
    }
  }
}

static void reopen_roundtrip(fx *f, int flush_first) {
  tu_map m;
  tu_map_init(&m);
  fill_mixed(f, &m, 42 + (uint64_t)flush_first, 8000);
  char err[512];
  if (tu_verify_region(f->reg, NULL, &m, err, sizeof err) != 0) fail_msg("before: %s", err);
  reopen(f, flush_first);
  if (tu_verify_region(f->reg, NULL, &m, err, sizeof err) != 0) fail_msg("after reopen: %s", err);
  /* Write more after recovery and reopen again (the log continues correctly). */
  fill_mixed(f, &m, 4242 + (uint64_t)flush_first, 3000);
  reopen(f, 0);
  if (tu_verify_region(f->reg, NULL, &m, err, sizeof err) != 0)
    fail_msg("after second reopen: %s", err);
  /* Closing and reopening only the region replays its log too. */
  fill_mixed(f, &m, 99, 500);
  assert_ok(par_region_close(f->reg));
  f->reg = NULL;
  assert_ok(par_region_open(f->vol, "main", 0, &f->reg));
  if (tu_verify_region(f->reg, NULL, &m, err, sizeof err) != 0)
    fail_msg("after region reopen: %s", err);
  tu_map_free(&m);
}

static void test_reopen_without_flush(void **state) { reopen_roundtrip(*state, 0); }
static void test_reopen_with_flush(void **state) { reopen_roundtrip(*state, 1); }

/* Sessions that write a little and close (or crash) before L0 fills: each
 * one starts a WAL generation in a new 2 MiB segment, and only a flush of
 * L0 frees the old ones. An open that replays more segments than a full L0
 * needs plus a few session starts has the replayed L0 flushed, so the WAL
 * stays bounded (it grew by a segment per session before). */
static void test_short_sessions_bound_the_wal(void **state) {
  fx *f = *state;
  const int sessions = 24;
  const uint64_t bound = 1 + 4 + 1; /* a full 1 MiB L0's segment + the slack + the new session's */
  char key[32];
  for (int s = 0; s < sessions; s++) {
    snprintf(key, sizeof key, "session%03d", s);
    assert_ok(par_put(f->reg, key, strlen(key), "v", 1, PAR_SYNC));
    par_stats st;
    /* The flush an open asked for runs in the background: give it up to 10 s. */
    for (int waited = 0;; waited += 10) {
      assert_ok(par_region_stats(f->reg, &st));
      if (st.wal_segments <= bound || waited >= 10000) break;
      tu_sleep_ms(10);
    }
    if (st.wal_segments > bound)
      fail_msg("session %d: %llu WAL segments held (bound %llu): each short session's segment stays", s,
               (unsigned long long)st.wal_segments, (unsigned long long)bound);
    reopen(f, 0);
  }
  for (int s = 0; s < sessions; s++) {
    snprintf(key, sizeof key, "session%03d", s);
    char v[4];
    size_t len;
    assert_ok(par_get(f->reg, NULL, key, strlen(key), v, sizeof v, &len));
  }
}

/* ---- counters ------------------------------------------------------------- */

static void test_stats(void **state) {
  fx *f = *state;
  par_stats s0, s1, s2;
  assert_ok(par_region_stats(f->reg, &s0));
  uint64_t ub = 0;
  char key[32], val[100];
  for (int i = 0; i < 10; i++) {
    snprintf(key, sizeof key, "st%04d", i);
    memset(val, 'v', sizeof val);
    assert_ok(par_put(f->reg, key, strlen(key), val, 50, 0));
    ub += strlen(key) + 50;
  }
  for (int i = 0; i < 3; i++) {
    snprintf(key, sizeof key, "st%04d", i);
    assert_ok(par_delete(f->reg, key, strlen(key), 0));
    ub += strlen(key);
  }
  char buf[128];
  size_t len;
  for (int i = 0; i < 5; i++) assert_ok(par_get(f->reg, NULL, "st0005", 6, buf, sizeof buf, &len));
  par_scanner *sc;
  for (int i = 0; i < 2; i++) {
    assert_ok(par_scanner_open(f->reg, NULL, &sc));
    assert_ok(par_scanner_seek(sc, NULL, 0, PAR_SEEK_FIRST));
    par_scanner_close(sc);
  }
  assert_ok(par_region_stats(f->reg, &s1));
  assert_int_equal(s1.puts, s0.puts + 10);
  assert_int_equal(s1.deletes, s0.deletes + 3);
  assert_true(s1.gets >= s0.gets + 5);
  assert_true(s1.scans >= s0.scans + 2);
  assert_int_equal(s1.user_bytes_written, s0.user_bytes_written + ub);
  assert_true(s1.wal_bytes_appended >= s0.wal_bytes_appended + ub);
  assert_true(s1.last_lsn >= s0.last_lsn + 13);
  assert_true(s1.l0_entries >= 10);
  assert_true(s1.l0_bytes > 0);
  assert_true(s1.wal_segments >= 1);

  /* Sync writes and par_sync reach fdatasync. */
  assert_ok(par_put(f->reg, "sync", 4, "x", 1, PAR_SYNC));
  assert_ok(par_region_stats(f->reg, &s2));
  assert_true(s2.wal_syncs > s1.wal_syncs);
  assert_ok(par_put(f->reg, "sync2", 5, "x", 1, 0));
  assert_ok(par_sync(f->reg));
  assert_ok(par_region_stats(f->reg, &s1));
  assert_true(s1.wal_syncs > s2.wal_syncs);

  /* A flush moves L0 to L1. */
  assert_ok(par_flush(f->reg));
  assert_ok(par_region_stats(f->reg, &s2));
  assert_true(s2.compactions >= s1.compactions + 1);
  assert_true(s2.levels >= 1);
  assert_int_equal(s2.l0_entries, 0);
  assert_true(s2.level[1].entries >= 9);
  assert_true(s2.level[1].height >= 1);
  assert_true(s2.level[1].live_bytes > 0);
  assert_true(s2.level[1].segments >= 1);
  assert_true(s2.level[1].compaction_bytes_written > 0);
  for (int l = s2.levels + 1; l <= PAR_MAX_LEVELS; l++) {
    assert_int_equal(s2.level[l].entries, 0);
    assert_int_equal(s2.level[l].height, 0);
  }

  par_volume_stats vs;
  assert_ok(par_volume_stats_get(f->vol, &vs));
  assert_true(vs.volume_bytes > 0);
  assert_true(vs.segments_total > 0);
  assert_true(vs.segments_used > 0);
  assert_true(vs.segments_used <= vs.segments_total);

  /* Counters are about the region, and survive a reopen only as far as the
   * engine persists them: last_lsn must not go backwards. */
  reopen(f, 0);
  assert_ok(par_region_stats(f->reg, &s1));
  assert_true(s1.last_lsn >= s2.last_lsn);
  assert_true(s1.levels >= 1);
}


/* par_snapshot_get_view hands out the values themselves: small, medium,
 * large and larger-than-a-segment values, from L0 and from the levels, stay
 * valid and unchanged until the snapshot goes, through overwrites, deletes,
 * flushes and a full compaction. */
/* The engine's threads carry names, so that top -H, /proc/PID/task and the
 * benchmarks' CPU-by-thread reports can tell a region's WAL writer and the
 * compaction workers from the host's threads. */
static int threads_named(const char *name) {
  DIR *d = opendir("/proc/self/task");
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char path[300], comm[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *fp = fopen(path, "r");
    if (fp == NULL) continue; /* the thread ended meanwhile */
    if (fgets(comm, sizeof comm, fp) != NULL) comm[strcspn(comm, "\n")] = 0;
    fclose(fp);
    n += strcmp(comm, name) == 0;
  }
  closedir(d);
  return n;
}

static void test_threads_are_named(void **state) {
  fx *f = *state;
  assert_int_equal(threads_named("par-wal"), 1); /* one per open region */
  assert_int_equal(threads_named("par-compaction"), (int)f->opts.compaction_threads);
  assert_ok(par_region_close(f->reg));
  f->reg = NULL;
  assert_int_equal(threads_named("par-wal"), 0);
}

static void test_snapshot_view(void **state) {
  fx *f = *state;
  static const size_t sizes[] = {10, 300, 5000, 3u << 20};
  enum { N = sizeof sizes / sizeof *sizes };
  uint8_t *vals[N];
  char key[16];
  for (int i = 0; i < N; i++) {
    vals[i] = malloc(sizes[i]);
    tu_fill_pattern(vals[i], sizes[i], (uint64_t)i + 1);
    snprintf(key, sizeof key, "view%d", i);
    assert_ok(par_put(f->reg, key, strlen(key), vals[i], sizes[i], 0)); /* not synced: in tail buffers */
  }
  par_snapshot *snap;
  assert_ok(par_snapshot_create(f->reg, &snap));
  const void *views[N];
  for (int i = 0; i < N; i++) {
    size_t len = 0;
    snprintf(key, sizeof key, "view%d", i);
    assert_ok(par_snapshot_get_view(snap, key, strlen(key), &views[i], &len));
    assert_int_equal(len, sizes[i]);
    assert_memory_equal(views[i], vals[i], sizes[i]);
  }
  const void *v;
  size_t vl;
  assert_par(par_snapshot_get_view(snap, "absent", 6, &v, &vl), PAR_NOT_FOUND);
  assert_par(par_snapshot_get_view(snap, NULL, 1, &v, &vl), PAR_EINVAL);
  /* Change everything underneath: overwrite, delete, move it all into the levels. */
  uint8_t *other = calloc(1, 3u << 20);
  for (int i = 0; i < N; i++) {
    snprintf(key, sizeof key, "view%d", i);
    if (i % 2) assert_ok(par_delete(f->reg, key, strlen(key), 0));
    else assert_ok(par_put(f->reg, key, strlen(key), other, sizes[i], 0));
  }
  for (int k = 0; k < 3000; k++) { /* enough to push L0 down several times */
    snprintf(key, sizeof key, "fill%05d", k);
    assert_ok(par_put(f->reg, key, strlen(key), other, 700, 0));
  }
  assert_ok(par_compact(f->reg));
  for (int i = 0; i < N; i++) {
    assert_memory_equal(views[i], vals[i], sizes[i]); /* the old views */
    size_t len = 0;
    snprintf(key, sizeof key, "view%d", i);
    assert_ok(par_snapshot_get_view(snap, key, strlen(key), &v, &len)); /* and new ones */
    assert_int_equal(len, sizes[i]);
    assert_memory_equal(v, vals[i], sizes[i]);
  }
  par_snapshot_release(snap);
  free(other);
  for (int i = 0; i < N; i++) free(vals[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_defaults),
      cmocka_unit_test(test_volume_create_if_missing),
      cmocka_unit_test_setup_teardown(test_regions_lifecycle, setup, teardown),
      cmocka_unit_test_setup_teardown(test_region_drop_frees_space, setup, teardown),
      cmocka_unit_test_setup_teardown(test_space_goes_back_to_the_file_system, setup, teardown),
      cmocka_unit_test_setup_teardown(test_put_get_delete_exists, setup, teardown),
      cmocka_unit_test_setup_teardown(test_get_small_buffer, setup, teardown),
      cmocka_unit_test_setup_teardown(test_snapshot_view, setup, teardown),
      cmocka_unit_test_setup_teardown(test_overwrite_and_empty_value, setup, teardown),
      cmocka_unit_test_setup_teardown(test_batch_basic, setup, teardown),
      cmocka_unit_test_setup_teardown(test_batch_atomic_visibility, setup, teardown),
      cmocka_unit_test_setup_teardown(test_snapshot_isolation, setup, teardown),
      cmocka_unit_test_setup_teardown(test_scanner_seek_modes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_scanner_reverse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_scanner_values_lazy, setup, teardown),
      cmocka_unit_test_setup_teardown(test_multi_get, setup, teardown),
      cmocka_unit_test_setup_teardown(test_scanner_implicit_snapshot, setup, teardown),
      cmocka_unit_test_setup_teardown(test_scanner_random_against_model, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reopen_without_flush, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reopen_with_flush, setup, teardown),
      cmocka_unit_test_setup_teardown(test_short_sessions_bound_the_wal, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stats, setup, teardown),
      cmocka_unit_test_setup_teardown(test_threads_are_named, setup, teardown),
      cmocka_unit_test_setup_teardown(test_scanner_value_stable_until_move, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
