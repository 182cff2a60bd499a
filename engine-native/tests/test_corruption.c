/*
 * test_corruption.c — a closed volume damaged in each of its areas: random
 * byte flips in the superblock copies, the redo log (catalog), the WAL, the
 * large log and the index segments, and truncations inside each area. Every
 * key is read by get and by two scans, one of them as for data larger than
 * memory (reads waiting, the scan's length told: its readahead asks ahead
 * for the damaged records too). Every case must end in a clear status on
 * open or on the read that meets the damage — never a crash (this test runs under ASan/UBSan too, and a read
 * through the map past the end of a truncated file would be SIGBUS), and
 * never bytes that are not one of the key's versions where a checksum
 * covers them (index nodes are checked the first time a reader reaches
 * them). Environment: PAR_SEED, PAR_CORRUPTION_TRIALS (default 12).
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/internal.h"
#include "kvgen.h"

#define NKEYS 3000u

typedef struct area {
  const char *name;
  uint64_t off[64], len[64]; /* byte ranges that hold data */
  int n;
} area;

typedef struct vol_image {
  char *dir, *pristine, *work;
  uint32_t ver[NKEYS];   /* the version of each key at close */
  area sb, redo, wal, vlog, index;
} vol_image;

static vol_image g;

static void add_range(area *a, uint64_t off, uint64_t len) {
  assert_true(a->n < 64);
  a->off[a->n] = off;
  a->len[a->n++] = len;
}

static void add_segs(area *a, const uint32_t *segs, uint32_t n) {
  for (uint32_t i = 0; i < n && a->n < 64; i++) add_range(a, seg_offset(segs[i]), PAR_SEGMENT_SIZE);
}

/* Builds a volume with levels, a large log and a WAL tail, and maps its areas. */
static int build(void **state) {
  (void)state;
  g.dir = tu_make_dir("corruption");
  g.pristine = tu_path(g.dir, "pristine.px");
  g.work = tu_path(g.dir, "work.px");
  g.sb.name = "superblock";
  g.redo.name = "redo log";
  g.wal.name = "WAL";
  g.vlog.name = "large log";
  g.index.name = "index";
  par_options o = tu_options(256u << 10, 4);
  par_volume *v;
  par_region *r;
  if (par_open(g.pristine, &o, &v) || par_region_open(v, "main", 1, &r)) return -1;
  for (uint32_t i = 0; i < NKEYS; i++)
    if (kv_put(r, i, g.ver[i] = 1, 0)) return -1;
  if (par_flush(r)) return -1;
  for (uint32_t i = 0; i < NKEYS; i += 7) /* newer versions, some left in the WAL */
    if (kv_put(r, i, ++g.ver[i], 0)) return -1;
  if (par_sync(r)) return -1;
  pthread_mutex_lock(&v->meta_mu);
  const region_desc *d = catalog_find(&v->cat, "main");
  for (uint32_t i = 0; i < d->nwal; i++) add_range(&g.wal, seg_offset(d->wal[i].seg), PAR_SEGMENT_SIZE);
  for (uint32_t i = 0; i < d->nvlog; i++) add_range(&g.vlog, seg_offset(d->vlog[i].seg), PAR_SEGMENT_SIZE);
  for (int l = 1; l <= PAR_MAX_LEVELS; l++)
    for (int j = 0; j < LEVEL_TREES; j++) add_segs(&g.index, d->level[l][j].segs.v, d->level[l][j].segs.n);
  pthread_mutex_unlock(&v->meta_mu);
  if (par_region_close(r) || par_close(v)) return -1;
  /* The redo stream of the close's checkpoint, as the superblock names it. */
  int fd = open(g.pristine, O_RDONLY);
  uint8_t sb[64];
  if (fd < 0 || pread(fd, sb, sizeof sb, 0) != (ssize_t)sizeof sb) return -1;
  close(fd);
  uint32_t head;
  memcpy(&head, sb + 32, 4);
  add_range(&g.redo, seg_offset(head), 3 * PAR_BLOCK); /* NEXT_ID and REGION records */
  add_range(&g.sb, 0, PAR_BLOCK);
  add_range(&g.sb, PAR_BLOCK, PAR_BLOCK);
  if (!g.wal.n || !g.vlog.n || !g.index.n) return -1;
  return 0;
}

static int destroy(void **state) {
  (void)state;
  tu_rm_rf(g.dir);
  free(g.dir);
  free(g.pristine);
  free(g.work);
  return 0;
}

static void copy_pristine(void) {
  int in = open(g.pristine, O_RDONLY), out = open(g.work, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(in >= 0 && out >= 0);
  struct stat st;
  assert_int_equal(fstat(in, &st), 0);
  assert_int_equal(copy_file_range(in, NULL, out, NULL, (size_t)st.st_size, 0), st.st_size);
  close(in);
  close(out);
}

static void flip(uint64_t off, uint8_t mask) {
  int fd = open(g.work, O_RDWR);
  assert_true(fd >= 0);
  uint8_t b;
  assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
  b ^= mask;
  assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
  close(fd);
}

typedef struct outcome {
  int open_failed, region_failed;
  uint32_t ok, lost, corrupt, wrong; /* per key read */
  char wrong_first[160];
} outcome;

static void note_wrong(outcome *o, const char *fmt, uint64_t a, uint64_t b) {
  if (!o->wrong++) snprintf(o->wrong_first, sizeof o->wrong_first, fmt, (unsigned long long)a, (unsigned long long)b);
}

/* Scans every key into o, with the scan's length told when together: as
 * for data not in memory, the span is then asked for ahead and each log
 * value read with pread into a copy (region_read_value_copy), so damaged
 * records meet that path's checks too. */
static void scan_all(par_region *r, outcome *o, int together) {
  uint64_t saved = read_wait_ns;
  if (together) read_wait_ns = 0; /* reads as for data not in memory */
  par_scanner *s;
  assert_ok(par_scanner_open(r, NULL, &s));
  if (together) assert_ok(par_scanner_set_readahead(s, NKEYS));
  int rc = par_scanner_seek(s, NULL, 0, PAR_SEEK_FIRST);
  while (rc == PAR_OK && par_scanner_valid(s)) {
    const void *k, *val;
    size_t kl, vl;
    unsigned long long i;
    uint32_t ver;
    char tmp[40];
    assert_ok(par_scanner_key(s, &k, &kl));
    rc = par_scanner_value(s, &val, &vl);
    if (rc) break;
    snprintf(tmp, sizeof tmp, "%.*s", (int)(kl < 30 ? kl : 30), (const char *)k);
    if (sscanf(tmp, "kv%llu", &i) != 1 || i >= NKEYS) note_wrong(o, "scan met a foreign key%.0llu%.0llu", 0, 0);
    else if (kv_parse(i, val, vl, &ver) || ver > g.ver[i]) note_wrong(o, "scan: key %llu holds wrong bytes%.0llu", i, 0);
    rc = par_scanner_next(s);
  }
  read_wait_ns = saved;
  if (rc && rc != PAR_ECORRUPT) fail_msg("scan: %s (%s)", par_strerror(rc), par_last_error());
  par_scanner_close(s);
}

/* Opens the damaged copy and reads every key by get (every other one as
 * for data not in memory) and by two scans. */
static outcome examine(void) {
  outcome o = {0};
  par_options opt = tu_options(256u << 10, 4);
  opt.create_if_missing = 0;
  par_volume *v = NULL;
  par_region *r = NULL;
  int rc = par_open(g.work, &opt, &v);
  if (rc) {
    if (rc != PAR_ECORRUPT && rc != PAR_ENOTVOLUME) fail_msg("open: %s (%s)", par_strerror(rc), par_last_error());
    o.open_failed = 1;
    return o;
  }
  rc = par_region_open(v, "main", 0, &r);
  if (rc) {
    if (rc != PAR_ECORRUPT && rc != PAR_ENOENT) fail_msg("region open: %s (%s)", par_strerror(rc), par_last_error());
    o.region_failed = 1;
    assert_ok(par_close(v));
    return o;
  }
  /* Every other get as for data not in memory: its leaf and log value are
   * read with pread into copies, so damaged nodes and records meet that
   * path's checks too. */
  uint64_t saved = read_wait_ns;
  for (uint32_t i = 0; i < NKEYS; i++) {
    uint32_t ver;
    read_wait_ns = i % 2 ? 0 : UINT64_MAX;
    rc = kv_read(r, i, &ver);
    read_wait_ns = saved;
    if (rc == PAR_ECORRUPT) o.corrupt++;
    else if (rc == KV_WRONG) note_wrong(&o, "key %llu read back wrong bytes%.0llu", i, 0);
    else if (rc == PAR_NOT_FOUND) o.lost++;
    else if (rc != PAR_OK) fail_msg("get: %s (%s)", par_strerror(rc), par_last_error());
    else if (ver == g.ver[i]) o.ok++;
    else if (ver < g.ver[i]) o.lost++; /* an older version: the WAL ended early */
    else note_wrong(&o, "key %llu read version %llu", i, ver);
  }
  scan_all(r, &o, 0);
  scan_all(r, &o, 1);
  par_region_close(r);
  par_close(v);
  return o;
}

static uint64_t pick_offset(const area *a, uint64_t *rng) {
  int k = (int)tu_rand_range(rng, (uint64_t)a->n);
  return a->off[k] + tu_rand_range(rng, a->len[k]);
}

/* Flips in area a; returns how many trials read wrong data (listed on stderr). */
static uint32_t flip_trials(const area *a, int flips_per_trial) {
  uint64_t rng = tu_seed(a->name);
  int trials = (int)tu_env_u64("PAR_CORRUPTION_TRIALS", 12);
  uint32_t wrong = 0;
  for (int t = 0; t < trials; t++) {
    copy_pristine();
    uint64_t first = 0;
    for (int f = 0; f < flips_per_trial; f++) {
      uint64_t off = pick_offset(a, &rng);
      if (!f) first = off;
      flip(off, (uint8_t)(1u << tu_rand_range(&rng, 8)));
    }
    outcome o = examine();
    fprintf(stderr, "%-10s flip at %10llu: %s; %u ok, %u lost, %u ECORRUPT, %u wrong%s%s\n", a->name,
            (unsigned long long)first,
            o.open_failed ? "open refused" : o.region_failed ? "region refused" : "opened", o.ok, o.lost,
            o.corrupt, o.wrong, o.wrong ? ": " : "", o.wrong_first);
    wrong += o.wrong > 0;
  }
  return wrong;
}

static void test_superblock_flips(void **state) {
  (void)state;
  /* One copy damaged: the other, identical one serves, with all data. */
  for (int copy = 0; copy < 2; copy++) {
    copy_pristine();
    for (int i = 0; i < 8; i++) flip((uint64_t)copy * PAR_BLOCK + 8 + (uint64_t)i * 501, 0x10);
    outcome o = examine();
    if (o.open_failed || o.region_failed || o.ok != NKEYS)
      fail_msg("superblock copy %d damaged: %u of %u keys intact", copy, o.ok, NKEYS);
  }
  /* Both damaged: refused. */
  copy_pristine();
  flip(20, 0x01);
  flip(PAR_BLOCK + 20, 0x01);
  assert_true(examine().open_failed);
}

static void test_redo_flips(void **state) {
  (void)state;
  assert_int_equal(flip_trials(&g.redo, 1), 0);
}

static void test_wal_flips(void **state) {
  (void)state;
  assert_int_equal(flip_trials(&g.wal, 4), 0);
}

static void test_large_log_flips(void **state) {
  (void)state;
  assert_int_equal(flip_trials(&g.vlog, 4), 0);
}

static void test_index_flips(void **state) {
  (void)state;
  assert_int_equal(flip_trials(&g.index, 4), 0);
}

/* A truncated file is refused at open when the cut reaches a segment the
 * catalog uses (segalloc_mark), before anything is read through the map. */
static void test_truncation(void **state) {
  (void)state;
  const area *areas[] = {&g.redo, &g.wal, &g.vlog, &g.index};
  uint64_t rng = tu_seed("truncation");
  for (size_t a = 0; a < sizeof areas / sizeof *areas; a++)
    for (int t = 0; t < 3; t++) {
      copy_pristine();
      uint64_t cut = pick_offset(areas[a], &rng);
      assert_int_equal(truncate(g.work, (off_t)cut), 0);
      outcome o = examine();
      fprintf(stderr, "%-10s cut at %10llu: %s\n", areas[a]->name, (unsigned long long)cut,
              o.open_failed ? "open refused" : "opened");
      if (!o.open_failed) fail_msg("a volume cut inside its %s opened", areas[a]->name);
    }
  /* Cut to a few bytes, and to just the superblocks. */
  const uint64_t cuts[] = {100, 2 * PAR_BLOCK, PAR_SEGMENT_SIZE};
  for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
    copy_pristine();
    assert_int_equal(truncate(g.work, (off_t)cuts[i]), 0);
    assert_true(examine().open_failed);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_superblock_flips), cmocka_unit_test(test_redo_flips),
      cmocka_unit_test(test_wal_flips),        cmocka_unit_test(test_large_log_flips),
      cmocka_unit_test(test_index_flips),      cmocka_unit_test(test_truncation),
  };
  return cmocka_run_group_tests(tests, build, destroy);
}
