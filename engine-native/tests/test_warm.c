/*
 * test_warm.c — the warm-up after an open (par_options.warm_mib, api/warm.c)
 * and the memory probe that sizes it by default (util/memavail.h).
 *
 * A volume with two regions, each with device levels and large values, is
 * closed and its file's pages dropped from the page cache. Then, by byte
 * counts (mincore over the file, read_bytes of /proc/self/io), never times:
 *
 *  warm_reads_the_trees   without a residency record (below) and with room
 *                         for all of them, the warm-up reads every
 *                         segment of both regions' trees (warm_bytes_read),
 *                         they are then resident, and the large log's
 *                         segments are not (values are not warmed). Gets of
 *                         the small pairs afterwards read a small fraction of
 *                         the device bytes the same gets read without it.
 *  warm_budget_is_shared  a budget of one segment is read once in all, by
 *                         the region that opens first.
 *  warm_off               warm_mib 0 reads nothing.
 *  warm_follows_the_record
 *                         a close records which of the volume's pages are
 *                         in the page cache (<path>.warm), the next open
 *                         reads and removes it, and its warm-up reads those
 *                         pages first, values included: with a budget much
 *                         smaller than the trees, the gets the last session
 *                         made (leaves all over the key space, large values)
 *                         then read a tenth of the device bytes they read
 *                         after a warm-up in key order with the same budget.
 *  bad_records_are_ignored
 *                         garbage, a flipped byte, a truncated record, one
 *                         of an earlier state of the volume and one of
 *                         another volume are not used (the warm-up reads
 *                         the trees in key order) and are removed.
 *  close_stops_warm       regions closed right after they open, over and
 *                         over: close waits for the warm-up (no use after
 *                         free or leak under the sanitizers).
 *  memavail_parsers       MemAvailable, the memory group of /proc/self/cgroup
 *                         (v1, v2, none) and a group's headroom (limit, no
 *                         limit, usage over it).
 *
 * Where dropping the pages does not take them out of memory (tmpfs), the
 * tests that need it skip and say so.
 */
#define _GNU_SOURCE
#include "testutil.h"
#include "api/internal.h"
#include "util/memavail.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAIRS 100000
#define VALUE_SMALL 40
#define VALUE_LARGE 2000
#define SEG ((uint64_t)PAR_SEGMENT_SIZE)

static char *dir, *path, *record;

/* Keys in an order unlike the pairs' (an odd multiplier is a bijection). */
static void key_of(char *k, int region, int i) { snprintf(k, 32, "r%d-key%08x", region, (uint32_t)i * 2654435761u); }

/* Every fifth pair large, so that the large log holds most of the bytes. */
static size_t value_of(uint8_t *v, int region, int i) {
  size_t n = i % 5 ? VALUE_SMALL : VALUE_LARGE;
  tu_fill_pattern(v, n, (uint64_t)region << 32 | (uint64_t)i);
  return n;
}

static par_volume *open_volume(uint32_t warm_mib) {
  par_options o = tu_options(1u << 20, 4);
  o.warm_mib = warm_mib;
  o.gc_threshold_pct = 100; /* no GC reads in the byte counts */
  par_volume *v;
  assert_ok(par_open(path, &o, &v));
  return v;
}

static void drop_pages(void) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  assert_int_equal(fdatasync(fd), 0);
  assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  close(fd);
}

/* Pages of [off, off + len) of the volume file in memory. */
static uint64_t resident(uint64_t off, uint64_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);
  assert_true(m != MAP_FAILED);
  size_t pages = (len + 4095) / 4096, n = 0;
  unsigned char *vec = malloc(pages);
  assert_int_equal(mincore(m, len, vec), 0);
  for (size_t i = 0; i < pages; i++) n += vec[i] & 1;
  free(vec);
  munmap(m, len);
  close(fd);
  return n;
}

/* Segments of the region's trees, and of its large log, and their
 * resident pages. */
typedef struct layout {
  uint32_t tree_segs, large_segs;
  uint64_t tree_resident, large_resident;
} layout;

static layout layout_of(par_region *r) {
  layout l = {0};
  uint64_t lsn;
  view *w = region_acquire_view(r, &lsn);
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++)
      for (uint32_t k = 0; w->tree[i][j] && k < w->tree[i][j]->d.segs.n; k++) {
        l.tree_segs++;
        l.tree_resident += resident(seg_offset(w->tree[i][j]->d.segs.v[k]), SEG);
      }
  view_unref(w);
  pthread_mutex_lock(&r->vol->meta_mu);
  region_desc *d = catalog_find(&r->vol->cat, r->name);
  for (uint32_t i = 0; i < d->nvlog; i++) {
    l.large_segs++;
    l.large_resident += resident(seg_offset(d->vlog[i].seg), SEG);
  }
  pthread_mutex_unlock(&r->vol->meta_mu);
  return l;
}

static int group_setup(void **state) {
  (void)state;
  dir = tu_make_dir("warm");
  path = tu_path(dir, "vol");
  record = tu_path(dir, "vol.warm");
  par_volume *v = open_volume(0);
  uint8_t val[VALUE_LARGE];
  char key[32];
  for (int g = 0; g < 2; g++) {
    par_region *r;
    assert_ok(par_region_open(v, g ? "b" : "a", 1, &r));
    for (int i = 0; i < PAIRS; i++) {
      key_of(key, g, i);
      size_t n = value_of(val, g, i);
      assert_ok(par_put(r, key, strlen(key), val, n, 0));
    }
    assert_ok(par_flush(r));
    par_stats st;
    assert_ok(par_region_stats(r, &st));
    assert_true(st.levels >= 1);
    assert_ok(par_region_close(r));
  }
  assert_ok(par_close(v));
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  tu_rm_rf(dir);
  free(record);
  free(path);
  free(dir);
  return 0;
}

static int record_exists(void) { return access(record, F_OK) == 0; }

/* Drops the file's pages and the residency record; skips where that leaves
 * the pages in memory. */
static void drop_or_skip(void) {
  (void)unlink(record);
  drop_pages();
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  uint64_t len = (uint64_t)st.st_size & ~(uint64_t)4095;
  if (resident(0, len) > len / 4096 / 10) {
    fprintf(stderr, "skipped: this file system keeps the file's pages after POSIX_FADV_DONTNEED\n");
    skip();
  }
}

/* Device bytes the gets of region g's pairs first, first + step, ... read
 * (only the small ones if small_only), each value checked. */
static uint64_t get_pairs(par_region *r, int g, int first, int step, int small_only) {
  uint64_t before = tu_device_read_bytes();
  uint8_t want[VALUE_LARGE], got[VALUE_LARGE];
  char key[32];
  for (int i = first; i < PAIRS; i += step) {
    if (small_only && i % 5 == 0) continue;
    key_of(key, g, i);
    size_t n = value_of(want, g, i), len = 0;
    assert_ok(par_get(r, NULL, key, strlen(key), got, sizeof got, &len));
    assert_int_equal(len, n);
    assert_memory_equal(got, want, n);
  }
  return tu_device_read_bytes() - before;
}

static uint64_t get_small_pairs(par_region *r, int g) { return get_pairs(r, g, 0, 1, 1); }

/* A session without a warm-up that makes region a's gets: the device bytes
 * they read (its close leaves their pages in the residency record). */
static uint64_t cold_session(uint64_t (*gets)(par_region *, int)) {
  par_volume *v = open_volume(0);
  par_region *r;
  assert_ok(par_region_open(v, "a", 0, &r));
  uint64_t bytes = gets(r, 0);
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  return bytes;
}

static void test_warm_reads_the_trees(void **state) {
  (void)state;
  if (tu_device_read_bytes() == UINT64_MAX) skip(); /* no I/O accounting */
  /* Without: the gets read their leaves from the device. */
  drop_or_skip();
  uint64_t cold = cold_session(get_small_pairs);

  drop_or_skip();
  par_volume *v = open_volume(1024);
  par_region *reg[2];
  for (int g = 0; g < 2; g++) assert_ok(par_region_open(v, g ? "b" : "a", 0, &reg[g]));
  for (int g = 0; g < 2; g++) {
    region_warm_join(reg[g]);
    layout l = layout_of(reg[g]);
    par_stats st;
    assert_ok(par_region_stats(reg[g], &st));
    fprintf(stderr, "region %d: %u tree segments, %llu pages resident; %u large-log segments, %llu resident; "
            "warm_bytes_read %llu\n", g, l.tree_segs, (unsigned long long)l.tree_resident, l.large_segs,
            (unsigned long long)l.large_resident, (unsigned long long)st.warm_bytes_read);
    assert_true(l.tree_segs > 0 && l.large_segs > l.tree_segs);
    assert_int_equal(st.warm_bytes_read, l.tree_segs * SEG);
    /* All of them, but for the odd page reclaim may take back meanwhile
     * (ctest runs other tests beside this one). */
    assert_true(l.tree_resident * 100 >= l.tree_segs * (SEG / 4096) * 99);
    /* Values are not warmed: only what the open itself reads of the log. */
    assert_true(l.large_resident < l.large_segs * (SEG / 4096) / 20);
  }
  uint64_t warm = get_small_pairs(reg[0], 0);
  fprintf(stderr, "gets of the small pairs read %llu device bytes cold, %llu after the warm-up\n",
          (unsigned long long)cold, (unsigned long long)warm);
  assert_true(cold >= SEG);
  assert_true(warm * 10 < cold);
  for (int g = 0; g < 2; g++) assert_ok(par_region_close(reg[g]));
  assert_ok(par_close(v));
}

static void test_warm_budget_is_shared(void **state) {
  (void)state;
  drop_or_skip();
  par_volume *v = open_volume((uint32_t)(SEG >> 20));
  par_region *reg[2];
  uint64_t read = 0;
  for (int g = 0; g < 2; g++) assert_ok(par_region_open(v, g ? "b" : "a", 0, &reg[g]));
  for (int g = 0; g < 2; g++) {
    region_warm_join(reg[g]);
    par_stats st;
    assert_ok(par_region_stats(reg[g], &st));
    assert_int_equal(st.warm_bytes_read, g ? 0 : SEG);
    read += layout_of(reg[g]).tree_resident;
  }
  assert_true(read * 100 >= SEG / 4096 * 99 && read < 2 * SEG / 4096);
  for (int g = 0; g < 2; g++) assert_ok(par_region_close(reg[g]));
  assert_ok(par_close(v));
}

static void test_warm_off(void **state) {
  (void)state;
  drop_or_skip();
  par_volume *v = open_volume(0);
  par_region *r;
  assert_ok(par_region_open(v, "a", 0, &r));
  assert_false(r->warm_running);
  par_stats st;
  assert_ok(par_region_stats(r, &st));
  assert_int_equal(st.warm_bytes_read, 0);
  assert_true(layout_of(r).tree_resident < SEG / 4096);
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
}

static void test_close_stops_warm(void **state) {
  (void)state;
  for (int i = 0; i < 20; i++) {
    drop_pages();
    par_volume *v = open_volume(1024);
    par_region *r;
    assert_ok(par_region_open(v, i % 2 ? "b" : "a", 0, &r));
    assert_ok(par_region_close(r));
    assert_ok(par_close(v));
  }
}

/* Gets of region g's pairs i with i % SCATTER == 3: about a hundred keys all
 * over the key space, a fifth of them large; the device bytes they read. */
#define SCATTER 997
static uint64_t get_scattered(par_region *r, int g) { return get_pairs(r, g, 3, SCATTER, 0); }

/* Opens with a budget of budget_mib, waits for region a's warm-up, and
 * returns the device bytes the scattered gets read after it. */
static uint64_t warmed_gets(uint32_t budget_mib, int expect_record) {
  par_volume *v = open_volume(budget_mib);
  assert_int_equal(v->resident_bits != NULL, expect_record);
  assert_false(record_exists()); /* an open reads it once */
  par_region *r;
  assert_ok(par_region_open(v, "a", 0, &r));
  region_warm_join(r);
  par_stats st;
  assert_ok(par_region_stats(r, &st));
  assert_true(st.warm_bytes_read > 0 && st.warm_bytes_read <= (uint64_t)budget_mib << 20);
  uint64_t bytes = get_scattered(r, 0);
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  return bytes;
}

static void test_warm_follows_the_record(void **state) {
  (void)state;
  if (tu_device_read_bytes() == UINT64_MAX) skip();
  /* The budget: one segment of region a's trees, which are several. */
  const uint32_t budget = (uint32_t)(SEG >> 20);
  drop_or_skip();
  uint64_t cold = cold_session(get_scattered);
  assert_true(record_exists());
  drop_pages();
  uint64_t from_record = warmed_gets(budget, 1);
  drop_or_skip();
  uint64_t key_order = warmed_gets(budget, 0);
  fprintf(stderr, "scattered gets read %llu device bytes cold, %llu after a warm-up in key order, %llu after "
          "one from the record\n", (unsigned long long)cold, (unsigned long long)key_order,
          (unsigned long long)from_record);
  assert_true(cold >= 100 * 4096);
  assert_true(key_order * 3 > cold); /* a segment in key order holds few of them */
  assert_true(from_record * 10 < key_order);
}

/* The record the last close wrote, read into *len bytes (malloc'd). */
static uint8_t *read_record(size_t *len) {
  FILE *f = fopen(record, "rb");
  assert_non_null(f);
  uint8_t *b = malloc(1 << 20);
  *len = fread(b, 1, 1 << 20, f);
  fclose(f);
  assert_true(*len > 0 && *len < (1 << 20));
  return b;
}

static void write_record(const uint8_t *b, size_t len) {
  FILE *f = fopen(record, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b, 1, len, f), len);
  fclose(f);
}

/* Opens with the record in place: whether the open used it, and that it
 * is gone. The close leaves a fresh one. */
static int record_used(void) {
  par_volume *v = open_volume((uint32_t)(SEG >> 20));
  int used = v->resident_bits != NULL;
  assert_false(record_exists());
  par_region *r;
  assert_ok(par_region_open(v, "a", 0, &r));
  region_warm_join(r);
  par_stats st;
  assert_ok(par_region_stats(r, &st));
  if (!used) assert_int_equal(st.warm_bytes_read, SEG); /* key order: the first segment, whole */
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  return used;
}

static void test_bad_records_are_ignored(void **state) {
  (void)state;
  (void)unlink(record);
  (void)cold_session(get_scattered);
  size_t len;
  uint8_t *stale = read_record(&len);
  assert_true(record_used()); /* the control: an intact, current record is used */

  uint8_t *b = read_record(&len);
  for (size_t i = 0; i < 4096; i++) b[i] = (uint8_t)(i * 7 + 1);
  write_record(b, 4096);
  assert_false(record_used()); /* garbage */
  free(b);

  b = read_record(&len);
  b[len / 2] ^= 0x10;
  write_record(b, len);
  assert_false(record_used()); /* a flipped bit */
  free(b);

  b = read_record(&len);
  write_record(b, len - 8);
  assert_false(record_used()); /* truncated */
  free(b);

  write_record(stale, len);
  assert_false(record_used()); /* of an earlier state: the opens since moved the superblock */
  free(stale);

  /* Another volume's, as current as this one's. */
  char *other = tu_path(dir, "other"), *other_record = tu_path(dir, "other.warm");
  par_options o = tu_options(1u << 20, 4);
  par_volume *v;
  assert_ok(par_open(other, &o, &v));
  par_region *r;
  assert_ok(par_region_open(v, "a", 1, &r));
  uint8_t val[VALUE_LARGE];
  char key[32];
  for (int i = 0; i < 1000; i++) {
    key_of(key, 0, i);
    size_t n = value_of(val, 0, i);
    assert_ok(par_put(r, key, strlen(key), val, n, 0));
  }
  assert_ok(par_flush(r));
  for (int i = 1; i < 1000; i += 100) { /* pages in memory for its record */
    size_t n = 0;
    key_of(key, 0, i);
    assert_ok(par_get(r, NULL, key, strlen(key), val, sizeof val, &n));
  }
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  tu_copy_file(other_record, record);
  assert_false(record_used());
  free(other_record);
  free(other);
}

static void test_memavail_parsers(void **state) {
  (void)state;
  assert_int_equal(meminfo_available("MemTotal:       24000000 kB\nMemFree: 1 kB\nMemAvailable:    1024 kB\n"),
                   1u << 20);
  assert_int_equal(meminfo_available("MemTotal: 5 kB\n"), 0);
  char out[256];
  int v2 = -1;
  assert_int_equal(cgroup_memory_dir("12:cpu,cpuacct:/x\n9:blkio,memory:/ycsb-1\n0::/u\n", out, sizeof out, &v2), 0);
  assert_string_equal(out, "/sys/fs/cgroup/memory/ycsb-1");
  assert_int_equal(v2, 0);
  assert_int_equal(cgroup_memory_dir("0::/user.slice/a.scope\n", out, sizeof out, &v2), 0);
  assert_string_equal(out, "/sys/fs/cgroup/user.slice/a.scope");
  assert_int_equal(v2, 1);
  assert_int_equal(cgroup_memory_dir("0::/", out, sizeof out, &v2), 0);
  assert_string_equal(out, "/sys/fs/cgroup/");
  assert_int_equal(cgroup_memory_dir("4:cpu:/a\n5:memoryx:/b\n", out, sizeof out, &v2), -1);
  assert_int_equal(cgroup_memory_dir("", out, sizeof out, &v2), -1);
  assert_true(cgroup_headroom("max\n", "123\n") == UINT64_MAX);
  assert_true(cgroup_headroom("9223372036854771712\n", "5\n") == UINT64_MAX);
  assert_int_equal(cgroup_headroom("1000\n", "400\n"), 600);
  assert_int_equal(cgroup_headroom("1000\n", "1200\n"), 0);
  assert_true(mem_available() > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_memavail_parsers),      cmocka_unit_test(test_warm_reads_the_trees),
      cmocka_unit_test(test_warm_budget_is_shared), cmocka_unit_test(test_warm_off),
      cmocka_unit_test(test_close_stops_warm),      cmocka_unit_test(test_warm_follows_the_record),
      cmocka_unit_test(test_bad_records_are_ignored),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
