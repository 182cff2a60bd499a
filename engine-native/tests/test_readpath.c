/*
 * test_readpath.c — point reads when the data is larger than memory (label
 * "memory"; registered for Release builds only: a memory-limited run under
 * the sanitizers measures their shadow memory, not the engine).
 *
 * Loads an SD-mix dataset (24-byte keys; 60/20/20 of 9/104/1004-byte
 * values) several times larger than a memory limit, closes the volume and
 * drops its pages from the page cache, then moves this process into a fresh
 * memory cgroup with that limit (heap, engine and page cache alike), reopens
 * the volume and does random gets. It fails when the device bytes read per
 * get (read_bytes of /proc/self/io: reads that reached the device, whatever
 * the timing) exceed what a lookup needs: the leaves of the levels it
 * visits, the value, and a share of index nodes. With the map's default
 * advice every cold fault read the device's readahead window (8 MiB on the
 * CI disks), which the limit evicts before use. The gets run twice: through
 * the map, and as gets whose reads wait do, leaves and values read with
 * pread, which must take fewer major faults than the log values they read.
 *
 * Needs a writable memory cgroup (v1: /sys/fs/cgroup/memory; v2: a
 * delegated memory controller) and a file system whose reads reach a block
 * device; otherwise it exits with 77, which ctest reports as skipped.
 *
 * Then scans (test_scans_read_what_they_need): the same short scans three
 * times, the file's pages dropped before each pass: with the scanners'
 * readahead off, with it on for every scanner (scan/readahead.h), and on
 * with the scan's length told (par_scanner_set_readahead). Readahead must
 * turn most of the scans' waits for the device (major faults) into
 * requests made ahead, and must not make a scan read more than it uses:
 * the device bytes of the other passes stay within a bound of the first's.
 * And a scan that tells its length must not read more than one that does
 * not: asking each of the two device levels for the span's length of its
 * own entries read about a fifth more than the windows did (2 203 against
 * 1 842 bytes per entry); the span ends where the levels' merge reaches
 * its length now (scan/scanner.c, merged_span_end). Each scan reads its
 * entries and stops on the last, as a caller that knows its length does
 * (a step past it would ask ahead for what is not read).
 * The passes' times are printed, not checked (docs/benchmarks.md has the
 * measured numbers).
 *
 * Environment: PAR_READPATH_KEYS (pairs loaded, default 4000000: about
 * 1.1 GiB of volume), PAR_READPATH_LIMIT_MIB (default 256),
 * PAR_READPATH_GETS (default 20000), PAR_READPATH_SCANS (default 2000),
 * PAR_SEED.
 */
#define _GNU_SOURCE
#include "testutil.h"
#include "api/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define KEY_LEN 24
#define SKIP_STATUS 77
/* Device bytes one get may read: a leaf (8 KiB) in each of up to three
 * device levels, a large value (1 KiB, two pages when it straddles one),
 * and index nodes (12 KiB, about one per 300 leaves, so nearly all of them
 * stay resident). What a lookup needs, with room for the page-granular
 * faults; one readahead window of the broken path is 8 MiB. */
#define MAX_BYTES_PER_GET (3 * 8192 + 2 * 4096 + 8192)

/* Scans: SCAN_LEN entries each, every value read. A scan of 50 SD entries
 * reads a leaf or two per level, about 10 large values and, in the upper
 * level, about 10 medium records: some 2.5 KB per entry. */
#define SCAN_LEN 50
#define MAX_BYTES_PER_SCANNED (8 * 1024)
/* Readahead may ask for a little past a scan's end: at most this more per scan. */
#define MAX_READAHEAD_WASTE_PER_SCAN (32 * 1024)

static uint64_t keys_n, gets_n, scans_n, limit_bytes, seed;

static size_t key_of(uint64_t i, char *out) {
  snprintf(out, KEY_LEN + 1, "user%020llu", (unsigned long long)tu_mix64(i));
  return KEY_LEN;
}

/* The SD mix: the value's size is a function of the key number. */
static size_t value_len_of(uint64_t i) {
  uint64_t h = tu_mix64(i ^ 0x5d5d5d5dull) % 100;
  return h < 60 ? 9 : h < 80 ? 104 : 1004;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- scratch state, undone by every exit ------------------------------ */

/* The memory cgroup: a child of this process's own group. */
static char cg_parent[512], cg_group[600];
static int cg_created, cg_joined;
static char *scratch_dir, *volume_path;

static int write_file(const char *dir, const char *file, const char *text) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  int e = errno;
  close(fd);
  errno = e;
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Leaves and removes the cgroup, removes the scratch directory (a 1 GiB
 * volume is not worth keeping after a failure: a rerun rebuilds it). */
static void cleanup(void) {
  char pid[32];
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  if (cg_joined && write_file(cg_parent, "cgroup.procs", pid) != 0)
    fprintf(stderr, "test_readpath: cannot leave memory cgroup %s: %s\n", cg_group, strerror(errno));
  if (cg_created && rmdir(cg_group) != 0)
    fprintf(stderr, "test_readpath: cannot remove memory cgroup %s: %s\n", cg_group, strerror(errno));
  cg_joined = cg_created = 0;
  tu_rm_rf(scratch_dir);
  free(volume_path);
  free(scratch_dir);
  volume_path = scratch_dir = NULL;
}

static void skip_test(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void skip_test(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "test_readpath: SKIPPED: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  cleanup();
  exit(SKIP_STATUS);
}

/* Bytes this process (all threads) has caused to be read from a device. */
static uint64_t device_read_bytes(void) {
  uint64_t v = tu_device_read_bytes();
  if (v == UINT64_MAX) skip_test("no read_bytes in /proc/self/io (kernel without task I/O accounting)");
  return v;
}

/* ---- the memory cgroup ------------------------------------------------- */

/* This process's group in the hierarchy named by the line of /proc/self/cgroup
 * whose controller list is ctrl ("memory" for v1, "" for the v2 line "0::"). */
static int own_group(const char *ctrl, char *out, size_t cap) {
  FILE *fp = fopen("/proc/self/cgroup", "r");
  if (!fp) return -1;
  char line[1024];
  int found = -1;
  while (found && fgets(line, sizeof line, fp)) {
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    *c2 = 0;
    if (strcmp(c1 + 1, ctrl) != 0) continue;
    char *group = c2 + 1;
    group[strcspn(group, "\n")] = 0;
    snprintf(out, cap, "%s", group);
    found = 0;
  }
  fclose(fp);
  return found;
}

/* Creates a child of this process's memory group with the limit (v1, or v2
 * where the memory controller is delegated); skips the test when that is
 * not possible here. */
static void cgroup_create(uint64_t limit) {
  const char *root, *limit_file;
  char own[256];
  struct stat st;
  if (stat("/sys/fs/cgroup/memory/memory.limit_in_bytes", &st) == 0) {
    root = "/sys/fs/cgroup/memory";
    limit_file = "memory.limit_in_bytes";
    if (own_group("memory", own, sizeof own)) skip_test("no memory line in /proc/self/cgroup");
  } else if (stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0) {
    root = "/sys/fs/cgroup";
    limit_file = "memory.max";
    if (own_group("", own, sizeof own)) skip_test("no cgroup v2 line in /proc/self/cgroup");
  } else {
    skip_test("no memory cgroup hierarchy at /sys/fs/cgroup");
  }
  snprintf(cg_parent, sizeof cg_parent, "%s%s", root, strcmp(own, "/") ? own : "");
  snprintf(cg_group, sizeof cg_group, "%s/par-readpath-%ld", cg_parent, (long)getpid());
  if (mkdir(cg_group, 0755) != 0)
    skip_test("cannot create memory cgroup %s: %s", cg_group, strerror(errno));
  cg_created = 1;
  char text[32];
  snprintf(text, sizeof text, "%llu", (unsigned long long)limit);
  if (write_file(cg_group, limit_file, text) != 0)
    skip_test("cannot set %s/%s (no delegated memory controller?): %s", cg_group, limit_file,
              strerror(errno));
}

/* Moves the whole process into the group: from here on its heap, the
 * engine's memory and the page cache it faults in count against the limit. */
static void cgroup_join(void) {
  char pid[32];
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  if (write_file(cg_group, "cgroup.procs", pid) != 0)
    skip_test("cannot join memory cgroup %s: %s", cg_group, strerror(errno));
  cg_joined = 1;
  fprintf(stderr, "test_readpath: in memory cgroup %s, limit %llu MiB\n", cg_group,
          (unsigned long long)(limit_bytes >> 20));
}

/* ---- the test ------------------------------------------------------------- */

static void load(const char *path) {
  par_volume *v;
  par_region *r;
  /* A 16 MiB L0 (growth factor 8) makes two device levels of this
   * dataset, so gets of keys in L2 also search L1, as they do at scale. */
  par_options o = tu_options(16ull << 20, 8);
  assert_ok(par_open(path, &o, &v));
  assert_ok(par_region_open(v, "sd", 1, &r));
  double t0 = now_s();
  char key[KEY_LEN + 1];
  uint8_t val[1024];
  for (uint64_t i = 0; i < keys_n; i++) {
    size_t vl = value_len_of(i);
    tu_fill_pattern(val, vl, i);
    assert_ok(par_put(r, key, key_of(i, key), val, vl, 0));
  }
  assert_ok(par_region_close(r));
  par_volume_stats vs;
  assert_ok(par_volume_stats_get(v, &vs));
  assert_ok(par_close(v));
  fprintf(stderr, "test_readpath: loaded %llu pairs in %.1f s, volume %llu MiB\n",
          (unsigned long long)keys_n, now_s() - t0, (unsigned long long)(vs.volume_bytes >> 20));
  assert_true(vs.volume_bytes >= 3 * limit_bytes); /* else the test proves nothing */
}

/* Drops the volume's pages from the page cache: the reads below must come
 * from the device whatever this machine cached before. */
static void drop_cache(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  assert_int_equal(fdatasync(fd), 0);
  assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  close(fd);
}

static int group_setup(void **state) {
  (void)state;
  device_read_bytes(); /* skips now, not after the load, without I/O accounting */
  cgroup_create(limit_bytes);
  scratch_dir = tu_make_dir("readpath");
  volume_path = tu_path(scratch_dir, "vol");
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  cleanup();
  return 0;
}

/* Loads the volume once, drops its pages, and moves into the group. */
static void prepare(void) {
  static int done;
  if (done) return;
  load(volume_path);
  drop_cache(volume_path);
  cgroup_join();
  done = 1;
}

/* Page faults of this process that waited for a read from the device. */
static uint64_t major_faults(void) {
  struct rusage ru;
  assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
  return (uint64_t)ru.ru_majflt;
}

/* One pass of random gets, on the volume reopened after its pages were
 * dropped (pages still mapped would survive the drop). Stops once the
 * device bytes exceed the whole pass's budget: no number of further gets
 * could bring the average back under the bound. Returns the device bytes
 * read; sets *done (gets done), *secs, *faults (major faults) and *values
 * (values the gets read from the logs). */
static uint64_t get_pass(uint64_t *done, double *secs, uint64_t *faults, uint64_t *values, uint32_t *levels) {
  drop_cache(volume_path);
  par_volume *v;
  par_region *r;
  par_options o;
  par_options_init(&o);
  o.warm_mib = 0; /* what one lookup reads; test_warm covers the warm-up */
  assert_ok(par_open(volume_path, &o, &v));
  assert_ok(par_region_open(v, "sd", 0, &r));
  par_stats st;
  assert_ok(par_region_stats(r, &st));
  *levels = st.levels;
  const uint64_t values0 = st.large_log_value_reads + st.medium_log_value_reads;
  const uint64_t budget = gets_n * MAX_BYTES_PER_GET, before = device_read_bytes(), faults0 = major_faults();
  uint64_t g, read = 0;
  double t0 = now_s();
  char key[KEY_LEN + 1];
  uint8_t buf[1024];
  uint64_t rng = seed;
  for (g = 0; g < gets_n && read <= budget; g++) {
    uint64_t i = tu_rand_range(&rng, keys_n);
    size_t len = 0;
    assert_ok(par_get(r, NULL, key, key_of(i, key), buf, sizeof buf, &len));
    assert_int_equal(len, value_len_of(i));
    assert_true(tu_check_pattern(buf, len, i));
    if (g % 100 == 99) read = device_read_bytes() - before;
  }
  *secs = now_s() - t0;
  *faults = major_faults() - faults0;
  *done = g;
  read = device_read_bytes() - before;
  assert_ok(par_region_stats(r, &st));
  *values = st.large_log_value_reads + st.medium_log_value_reads - values0;
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  return read;
}

/* The same gets twice: leaves and values through the map, then read with
 * pread (what gets do once the region's reads wait on the device). */
static void test_gets_read_what_they_need(void **state) {
  (void)state;
  prepare();
  uint64_t saved = read_wait_ns, g[2], f[2], b[2], vals[2];
  double secs[2];
  uint32_t levels;
  const char *how[2] = {"leaves and values through the map", "leaves and values read with pread"};
  for (int p = 0; p < 2; p++) {
    read_wait_ns = p ? 0 : UINT64_MAX;
    b[p] = get_pass(&g[p], &secs[p], &f[p], &vals[p], &levels);
    read_wait_ns = saved;
    fprintf(stderr,
            "test_readpath: %llu random gets over %u device levels, %s, in %.2f s: %.0f device "
            "bytes, %.2f major faults and %.2f log values read per get (bound %u bytes)\n",
            (unsigned long long)g[p], levels, how[p], secs[p], (double)b[p] / (double)g[p],
            (double)f[p] / (double)g[p], (double)vals[p] / (double)g[p], MAX_BYTES_PER_GET);
    if (b[p] == 0) skip_test("no device reads counted: is %s on a block device?", scratch_dir);
    if (b[p] > gets_n * MAX_BYTES_PER_GET)
      fail_msg("gets (%s) read %.0f bytes each from the device, over the %u a lookup needs "
               "(stopped after %llu of %llu gets, when the whole run's budget was spent)",
               how[p], (double)b[p] / (double)g[p], MAX_BYTES_PER_GET, (unsigned long long)g[p],
               (unsigned long long)gets_n);
  }
  /* Gets whose reads wait read their values with pread too, so their pages
   * keep the recency the MADV_RANDOM map's lack: such a get takes a major
   * fault only for an index node. A value read through the map is one
   * fault for nearly every value read (the data is several times the
   * limit): 0.36 faults per get against 0.11 with pread, 0.29 values read. */
  if (f[1] >= vals[1])
    fail_msg("gets whose reads wait took %llu major faults for %llu values read from the logs: "
             "they read values through the map, not with pread",
             (unsigned long long)f[1], (unsigned long long)vals[1]);
}

/* One pass of scans_n scans from random keys, on the volume reopened after
 * its pages were dropped (pages still mapped would survive the drop);
 * returns the device bytes read and sets *secs, *faults (major faults: the
 * scans' waits for the device) and *entries. */
static uint64_t scan_pass(uint32_t span, double *secs, uint64_t *faults, uint64_t *entries) {
  drop_cache(volume_path);
  par_volume *v;
  par_region *r;
  par_options o;
  par_options_init(&o);
  o.warm_mib = 0; /* what one lookup reads; test_warm covers the warm-up */
  assert_ok(par_open(volume_path, &o, &v));
  assert_ok(par_region_open(v, "sd", 0, &r));
  const uint64_t before = device_read_bytes(), faults0 = major_faults();
  double t0 = now_s();
  char key[KEY_LEN + 1];
  uint64_t rng = seed ^ 0x5ca9ull;
  *entries = 0;
  for (uint64_t n = 0; n < scans_n; n++) {
    par_scanner *sc;
    assert_ok(par_scanner_open(r, NULL, &sc));
    assert_ok(par_scanner_set_readahead(sc, span));
    assert_ok(par_scanner_seek(sc, key, key_of(tu_rand_range(&rng, keys_n), key), PAR_SEEK_GE));
    for (int i = 0; i < SCAN_LEN && par_scanner_valid(sc); i++) {
      const void *k, *val;
      size_t kl, vl;
      assert_ok(par_scanner_key(sc, &k, &kl));
      assert_ok(par_scanner_value(sc, &val, &vl));
      assert_int_equal(kl, KEY_LEN);
      (*entries)++;
      if (i + 1 < SCAN_LEN) assert_ok(par_scanner_next(sc)); /* no step past the last entry read */
    }
    par_scanner_close(sc);
  }
  *secs = now_s() - t0;
  *faults = major_faults() - faults0;
  uint64_t read = device_read_bytes() - before;
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  return read;
}

static void test_scans_read_what_they_need(void **state) {
  (void)state;
  prepare();
  uint64_t saved = read_wait_ns, n0, n1, n2, f0, f1, f2;
  double s0, s1, s2;
  read_wait_ns = UINT64_MAX;
  uint64_t b0 = scan_pass(0, &s0, &f0, &n0);
  read_wait_ns = 0;
  uint64_t b1 = scan_pass(0, &s1, &f1, &n1);
  uint64_t b2 = scan_pass(SCAN_LEN, &s2, &f2, &n2);
  read_wait_ns = saved;
  assert_int_equal(n0, n1);
  assert_int_equal(n0, n2);
  fprintf(stderr,
          "test_readpath: %llu scans of up to %d entries (%llu entries), device bytes per entry, "
          "major faults per scan and time: readahead off %.0f B, %.2f, %.2f s; on %.0f B, %.2f, "
          "%.2f s; on with the scan's length %.0f B, %.2f, %.2f s\n",
          (unsigned long long)scans_n, SCAN_LEN, (unsigned long long)n0, (double)b0 / (double)n0,
          (double)f0 / (double)scans_n, s0, (double)b1 / (double)n1, (double)f1 / (double)scans_n, s1,
          (double)b2 / (double)n2, (double)f2 / (double)scans_n, s2);
  if (b0 == 0) skip_test("no device reads counted: is %s on a block device?", scratch_dir);
  assert_true(b0 <= n0 * MAX_BYTES_PER_SCANNED);
  assert_true(b1 <= n1 * MAX_BYTES_PER_SCANNED);
  assert_true(b2 <= n2 * MAX_BYTES_PER_SCANNED);
  /* Readahead turns the scans' waits for single pages into requests made
   * ahead (about 19 major faults per scan without it, under 1 with it). */
  const uint64_t with[] = {f1, f2}, with_bytes[] = {b1, b2};
  const char *how[] = {"readahead", "readahead over the scan's length"};
  for (int i = 0; i < 2; i++) {
    if (with[i] * 4 > f0)
      fail_msg("scans with %s waited for the device %llu times (major faults) against %llu "
               "without: it does not ask ahead for what scans read",
               how[i], (unsigned long long)with[i], (unsigned long long)f0);
    if (with_bytes[i] > b0 + (b0 >> 3) + scans_n * MAX_READAHEAD_WASTE_PER_SCAN)
      fail_msg("scans with %s read %llu device bytes against %llu without: it asks for what scans "
               "do not read",
               how[i], (unsigned long long)with_bytes[i], (unsigned long long)b0);
  }
  if (b2 > b1 + (b1 >> 4))
    fail_msg("scans told their length read %llu device bytes against %llu with readahead alone: "
             "the span asks the levels for entries past the scan's end",
             (unsigned long long)b2, (unsigned long long)b1);
}

int main(void) {
  keys_n = tu_env_u64("PAR_READPATH_KEYS", 4000000);
  scans_n = tu_env_u64("PAR_READPATH_SCANS", 2000);
  gets_n = tu_env_u64("PAR_READPATH_GETS", 20000);
  limit_bytes = tu_env_u64("PAR_READPATH_LIMIT_MIB", 256) << 20;
  seed = tu_seed("test_readpath");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gets_read_what_they_need),
      cmocka_unit_test(test_scans_read_what_they_need)};
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
