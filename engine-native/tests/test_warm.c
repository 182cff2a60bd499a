/*
 * test_warm.c — the warm-up after an open (par_options.warm_mib, api/warm.c)
 * and the memory probe that sizes it by default (util/memavail.h).
 *
 * A volume with two regions, each with device levels and large values, is
 * closed and its file's pages dropped from the page cache. Then, by byte
 * counts (mincore over the file, read_bytes of /proc/self/io), never times:
 *
 *  warm_reads_the_trees   with room for all of them, the warm-up reads every
 *                         segment of both regions' trees (warm_bytes_read),
 *                         they are then resident, and the large log's
 *                         segments are not (values are not warmed). Gets of
 *                         the small pairs afterwards read a small fraction of
 *                         the device bytes the same gets read without it.
 *  warm_budget_is_shared  a budget of one segment is read once in all, by
 *                         the region that opens first.
 *  warm_off               warm_mib 0 reads nothing.
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

static char *dir, *path;

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
  free(path);
  free(dir);
  return 0;
}

/* Drops the file's pages; skips where that leaves them in memory. */
static void drop_or_skip(void) {
  drop_pages();
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  uint64_t len = (uint64_t)st.st_size & ~(uint64_t)4095;
  if (resident(0, len) > len / 4096 / 10) {
    fprintf(stderr, "skipped: this file system keeps the file's pages after POSIX_FADV_DONTNEED\n");
    skip();
  }
}

/* Device bytes the gets of region g's small pairs read. */
static uint64_t get_small_pairs(par_region *r, int g) {
  uint64_t before = tu_device_read_bytes();
  uint8_t want[VALUE_LARGE], got[VALUE_LARGE];
  char key[32];
  for (int i = 0; i < PAIRS; i++) {
    if (i % 5 == 0) continue;
    key_of(key, g, i);
    size_t n = value_of(want, g, i), len = 0;
    assert_ok(par_get(r, NULL, key, strlen(key), got, sizeof got, &len));
    assert_int_equal(len, n);
    assert_memory_equal(got, want, n);
  }
  return tu_device_read_bytes() - before;
}

static void test_warm_reads_the_trees(void **state) {
  (void)state;
  if (tu_device_read_bytes() == UINT64_MAX) skip(); /* no I/O accounting */
  /* Without: the gets read their leaves from the device. */
  drop_or_skip();
  par_volume *v = open_volume(0);
  par_region *r;
  assert_ok(par_region_open(v, "a", 0, &r));
  uint64_t cold = get_small_pairs(r, 0);
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));

  drop_or_skip();
  v = open_volume(1024);
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
      cmocka_unit_test(test_close_stops_warm),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
