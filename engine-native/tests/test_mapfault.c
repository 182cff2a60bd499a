/*
 * test_mapfault.c — the volume's memory map (src/io/file.c, io/mapguard.h).
 *
 * test_truncated_under_readers: another process truncates the volume file
 * while readers run gets, multi-gets, scans and range estimates and a
 * compaction runs: reads of the pages past the new end raise SIGBUS, which
 * used to kill the process. Now the process lives, the reads fail with
 * PAR_EIO (or PAR_ECORRUPT where a pread finds the file shorter), and the
 * volume closes.
 *
 * test_many_volumes: 320 volumes open in one process. Each used to map
 * 512 GiB of address space, so about 250 exhausted a 47-bit address space.
 *
 * test_map_grows_under_readers: a volume whose file grows far past its
 * first map while readers run keeps every value readable (the maps it
 * outgrew stay valid for readers holding pointers into them).
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "io/file.h"

#define NKEYS 3000u

static size_t key_of(uint32_t i, char *out) { return (size_t)snprintf(out, 32, "k%06u", i); }
/* Small, medium and large values, so every read path goes to the map. */
static size_t value_len(uint32_t i) { return i % 3 == 0 ? 40 : i % 3 == 1 ? 600 : 9000; }

static void load(par_region *r, uint32_t n) {
  uint8_t v[9000];
  char k[32];
  for (uint32_t i = 0; i < n; i++) {
    size_t vl = value_len(i);
    tu_fill_pattern(v, vl, i);
    assert_ok(par_put(r, k, key_of(i, k), v, vl, 0));
  }
}

typedef struct reader {
  par_region *reg;
  atomic_int *stop;
  uint64_t ok, eio, corrupt, other, calls;
  int other_status;
} reader;

static void count(reader *rd, int rc) {
  rd->calls++;
  if (rc == PAR_OK || rc == PAR_NOT_FOUND) rd->ok++;
  else if (rc == PAR_EIO) rd->eio++;
  else if (rc == PAR_ECORRUPT) rd->corrupt++;
  else {
    rd->other++;
    rd->other_status = rc;
  }
}

static void *read_loop(void *arg) {
  reader *rd = arg;
  uint8_t buf[9000];
  char k[32];
  uint64_t rng = 1;
  while (!atomic_load(rd->stop)) {
    uint32_t i = (uint32_t)tu_rand_range(&rng, NKEYS);
    size_t vl = 0;
    int rc = par_get(rd->reg, NULL, k, key_of(i, k), buf, sizeof buf, &vl);
    count(rd, rc);
    if (rc == PAR_OK) assert_true(vl == value_len(i) && tu_check_pattern(buf, vl, i));

    par_snapshot *s = NULL;
    assert_ok(par_snapshot_create(rd->reg, &s));
    char keys[8][32];
    const void *kp[8], *vals[8];
    size_t kl[8], vls[8];
    int st[8];
    for (int j = 0; j < 8; j++) {
      uint32_t x = (uint32_t)tu_rand_range(&rng, NKEYS);
      kl[j] = key_of(x, keys[j]);
      kp[j] = keys[j];
    }
    count(rd, par_multi_get(s, 8, kp, kl, vals, vls, st));
    for (int j = 0; j < 8; j++) count(rd, st[j]);

    par_scanner *sc = NULL;
    assert_ok(par_scanner_open(rd->reg, s, &sc));
    rc = par_scanner_seek(sc, k, key_of(i, k), PAR_SEEK_GE);
    for (int n = 0; rc == PAR_OK && par_scanner_valid(sc) && n < 50; n++) {
      const void *v;
      size_t l;
      rc = par_scanner_value(sc, &v, &l);
      if (rc == PAR_OK) rc = par_scanner_next(sc);
    }
    count(rd, rc);
    par_scanner_close(sc);
    par_snapshot_release(s);

    par_range_estimate est;
    count(rd, par_estimate_range(rd->reg, "k000100", 7, "k002000", 7, &est));
  }
  return NULL;
}

static void test_truncated_under_readers(void **state) {
  (void)state;
  char *dir = tu_make_dir("mapfault");
  char *path = tu_path(dir, "volume.px");
  par_options o = tu_options(1u << 20, 4);
  par_volume *vol = NULL;
  par_region *reg = NULL;
  assert_ok(par_open(path, &o, &vol));
  assert_ok(par_region_open(vol, "main", 1, &reg));
  load(reg, NKEYS);
  assert_ok(par_compact(reg)); /* every pair on the device: reads go through the map */
  assert_ok(par_region_close(reg));
  assert_ok(par_close(vol));
  o.create_if_missing = 0;
  assert_ok(par_open(path, &o, &vol));
  assert_ok(par_region_open(vol, "main", 0, &reg));

  atomic_int stop = 0;
  enum { NR = 2 };
  reader rd[NR];
  pthread_t th[NR];
  for (int i = 0; i < NR; i++) {
    rd[i] = (reader){.reg = reg, .stop = &stop};
    assert_int_equal(pthread_create(&th[i], NULL, read_loop, &rd[i]), 0);
  }
  usleep(100 * 1000);
  /* Another handle (as another process would) cuts the file to its first
   * segment: the superblock stays, every level and log page is gone. */
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, PAR_SEGMENT_SIZE), 0);
  close(fd);
  usleep(300 * 1000);
  /* A compaction over the cut file fails with an error; it does not crash. */
  load(reg, 300);
  int crc = par_compact(reg);
  atomic_store(&stop, 1);
  uint64_t ok = 0, eio = 0, corrupt = 0, calls = 0;
  for (int i = 0; i < NR; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    if (rd[i].other) fail_msg("reader %d: unexpected status %s", i, par_strerror(rd[i].other_status));
    ok += rd[i].ok;
    eio += rd[i].eio;
    corrupt += rd[i].corrupt;
    calls += rd[i].calls;
  }
  fprintf(stderr, "truncated under readers: %llu reads, %llu ok, %llu PAR_EIO, %llu PAR_ECORRUPT; "
          "compaction after the cut: %s (%s)\n", (unsigned long long)calls, (unsigned long long)ok,
          (unsigned long long)eio, (unsigned long long)corrupt, par_strerror(crc),
          crc ? par_last_error() : "");
  assert_true(eio > 0);
  assert_true(crc != PAR_OK);
  /* The region closes (its errors are expected: the volume is damaged). */
  (void)par_region_close(reg);
  (void)par_close(vol);
  tu_rm_rf(dir);
  free(dir);
  free(path);
}

static void test_many_volumes(void **state) {
  (void)state;
  enum { NV = 320 };
  char *dir = tu_make_dir("manyvols");
  par_options o = tu_options(256u << 10, 0);
  o.compaction_threads = 1;
  par_volume **vols = calloc(NV, sizeof *vols);
  par_region **regs = calloc(NV, sizeof *regs);
  assert_non_null(vols);
  assert_non_null(regs);
  char name[32];
  for (int i = 0; i < NV; i++) {
    snprintf(name, sizeof name, "v%03d.px", i);
    char *p = tu_path(dir, name);
    int rc = par_open(p, &o, &vols[i]);
    if (rc) fail_msg("volume %d: %s (%s)", i, par_strerror(rc), par_last_error());
    assert_ok(par_region_open(vols[i], "r", 1, &regs[i]));
    assert_ok(par_put(regs[i], "key", 3, name, strlen(name), 0));
    free(p);
  }
  for (int i = 0; i < NV; i++) {
    char v[32];
    size_t vl = 0;
    snprintf(name, sizeof name, "v%03d.px", i);
    assert_ok(par_get(regs[i], NULL, "key", 3, v, sizeof v, &vl));
    assert_true(vl == strlen(name) && memcmp(v, name, vl) == 0);
    assert_ok(par_region_close(regs[i]));
    assert_ok(par_close(vols[i]));
  }
  free(vols);
  free(regs);
  tu_rm_rf(dir);
  free(dir);
}

typedef struct grow_reader {
  par_region *reg;
  atomic_int *stop;
  uint32_t n;
  uint64_t reads;
} grow_reader;

static void *grow_read_loop(void *arg) {
  grow_reader *g = arg;
  uint8_t buf[9000];
  char k[32];
  uint64_t rng = 7;
  while (!atomic_load(g->stop)) {
    uint32_t i = (uint32_t)tu_rand_range(&rng, g->n);
    size_t vl = 0;
    assert_ok(par_get(g->reg, NULL, k, key_of(i, k), buf, sizeof buf, &vl));
    assert_true(vl == value_len(i) && tu_check_pattern(buf, vl, i));
    g->reads++;
  }
  return NULL;
}

static void test_map_grows_under_readers(void **state) {
  (void)state;
  char *dir = tu_make_dir("mapgrow");
  char *path = tu_path(dir, "volume.px");
  par_options o = tu_options(1u << 20, 4);
  par_volume *vol = NULL;
  par_region *reg = NULL;
  assert_ok(par_open(path, &o, &vol));
  assert_ok(par_region_open(vol, "main", 1, &reg));
  load(reg, 300);
  assert_ok(par_flush(reg));
  atomic_int stop = 0;
  grow_reader g = {.reg = reg, .stop = &stop, .n = 300};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, grow_read_loop, &g), 0);
  /* About 200 MiB of values: the file grows past its 64 MiB first map. */
  uint8_t *v = malloc(1u << 20);
  assert_non_null(v);
  char k[32];
  for (uint32_t i = 0; i < 200; i++) {
    tu_fill_pattern(v, 1u << 20, i);
    assert_ok(par_put(reg, k, (size_t)snprintf(k, sizeof k, "big%04u", i), v, 1u << 20, 0));
  }
  atomic_store(&stop, 1);
  assert_int_equal(pthread_join(th, NULL), 0);
  par_volume_stats vs;
  assert_ok(par_volume_stats_get(vol, &vs));
  fprintf(stderr, "map growth: file of %llu MiB, %llu reads while it grew\n",
          (unsigned long long)(vs.volume_bytes >> 20), (unsigned long long)g.reads);
  assert_true(vs.volume_bytes > 2 * PAR_MAP_MIN);
  for (uint32_t i = 0; i < 200; i += 17) {
    size_t vl = 0;
    assert_ok(par_get(reg, NULL, k, (size_t)snprintf(k, sizeof k, "big%04u", i), v, 1u << 20, &vl));
    assert_true(vl == 1u << 20 && tu_check_pattern(v, vl, i));
  }
  free(v);
  assert_ok(par_region_close(reg));
  assert_ok(par_close(vol));
  tu_rm_rf(dir);
  free(dir);
  free(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_truncated_under_readers),
      cmocka_unit_test(test_many_volumes),
      cmocka_unit_test(test_map_grows_under_readers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
