/*
 * test_bad_input.c — "limits are documented and enforced with clear errors,
 * never a crash": every entry point rejects NULL pointers with PAR_EINVAL,
 * keys must be 1..1024 bytes (empty: PAR_EINVAL, longer: PAR_ETOOBIG), values
 * at most PAR_MAX_VALUE_SIZE, batches at most PAR_MAX_BATCH_SIZE, region names
 * at most PAR_MAX_REGION_NAME bytes, at most PAR_MAX_REGIONS regions; files
 * that are not volumes (or whose superblocks are destroyed) are refused;
 * double opens give PAR_EBUSY (in this process and from another one);
 * par_last_error() explains every error, per thread; and a full volume gives
 * PAR_ENOSPC without losing a single acknowledged synced write.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_self[4096]; /* this executable, for the cross-process lock test */

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
  f->dir = tu_make_dir("bad_input");
  f->path = tu_path(f->dir, "volume.px");
  f->opts = tu_options(1u << 20, 4);
  int rc = par_open(f->path, &f->opts, &f->vol);
  if (rc == PAR_OK) rc = par_region_open(f->vol, "main", 1, &f->reg);
  if (rc != PAR_OK) {
    fprintf(stderr, "setup: %s (%s)\n", par_strerror(rc), par_last_error());
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

static void expect_error_message(void) {
  const char *m = par_last_error();
  assert_non_null(m);
  if (strlen(m) == 0) fail_msg("par_last_error() is empty after an error");
}

/* Asserts expr returns PAR_EINVAL and left an error message. */
#define assert_einval(expr)                                                                 \
  do {                                                                                      \
    assert_par(expr, PAR_EINVAL);                                                           \
    expect_error_message();                                                                 \
  } while (0)

static void ignore_name(const char *name, void *arg) {
  (void)name;
  (void)arg;
}

static void test_null_pointers(void **state) {
  fx *f = *state;
  par_volume *v = NULL;
  par_region *r = NULL;
  par_batch *b = NULL;
  par_snapshot *snap = NULL;
  par_scanner *s = NULL;
  char buf[16];
  size_t len = 0;
  char *other = tu_path(f->dir, "other.px");

  par_options_init(NULL); /* must not crash */
  assert_einval(par_open(NULL, &f->opts, &v));
  assert_ok(par_open(other, NULL, &v)); /* NULL options: the defaults */
  assert_ok(par_close(v));
  assert_einval(par_open(other, &f->opts, NULL));
  assert_einval(par_close(NULL));

  assert_einval(par_region_create(NULL, "x"));
  assert_einval(par_region_create(f->vol, NULL));
  assert_einval(par_region_open(NULL, "x", 1, &r));
  assert_einval(par_region_open(f->vol, NULL, 1, &r));
  assert_einval(par_region_open(f->vol, "x", 1, NULL));
  assert_einval(par_region_close(NULL));
  assert_einval(par_region_drop(NULL, "x"));
  assert_einval(par_region_drop(f->vol, NULL));
  assert_einval(par_region_list(NULL, ignore_name, NULL));
  assert_einval(par_region_list(f->vol, NULL, NULL));

  assert_einval(par_put(NULL, "k", 1, "v", 1, 0));
  assert_einval(par_put(f->reg, NULL, 1, "v", 1, 0));
  assert_einval(par_put(f->reg, "k", 1, NULL, 1, 0));
  assert_einval(par_delete(NULL, "k", 1, 0));
  assert_einval(par_delete(f->reg, NULL, 1, 0));
  assert_einval(par_sync(NULL));
  assert_einval(par_flush(NULL));

  assert_einval(par_batch_create(NULL));
  assert_ok(par_batch_create(&b));
  assert_einval(par_batch_put(NULL, "k", 1, "v", 1));
  assert_einval(par_batch_put(b, NULL, 1, "v", 1));
  assert_einval(par_batch_put(b, "k", 1, NULL, 1));
  assert_einval(par_batch_delete(NULL, "k", 1));
  assert_einval(par_batch_delete(b, NULL, 1));
  assert_int_equal(par_batch_count(b), 0); /* failed calls added nothing */
  assert_int_equal(par_batch_count(NULL), 0);
  par_batch_clear(NULL);
  par_batch_destroy(NULL);
  assert_einval(par_write(NULL, b, 0));
  assert_einval(par_write(f->reg, NULL, 0));
  par_batch_destroy(b);

  assert_einval(par_snapshot_create(NULL, &snap));
  assert_einval(par_snapshot_create(f->reg, NULL));
  par_snapshot_release(NULL);

  assert_ok(par_put(f->reg, "k", 1, "value", 5, 0));
  assert_einval(par_get(NULL, NULL, "k", 1, buf, sizeof buf, &len));
  assert_einval(par_get(f->reg, NULL, NULL, 1, buf, sizeof buf, &len));
  assert_einval(par_get(f->reg, NULL, "k", 1, NULL, sizeof buf, &len));
  assert_einval(par_get(f->reg, NULL, "k", 1, buf, sizeof buf, NULL));
  assert_einval(par_exists(NULL, NULL, "k", 1));
  assert_einval(par_exists(f->reg, NULL, NULL, 1));

  assert_einval(par_scanner_open(NULL, NULL, &s));
  assert_einval(par_scanner_open(f->reg, NULL, NULL));
  assert_einval(par_scanner_seek(NULL, "k", 1, PAR_SEEK_GE));
  assert_int_equal(par_scanner_valid(NULL), 0);
  const void *kp;
  size_t kl;
  assert_einval(par_scanner_key(NULL, &kp, &kl));
  assert_einval(par_scanner_value(NULL, &kp, &kl));
  assert_einval(par_scanner_next(NULL));
  par_scanner_close(NULL);
  assert_ok(par_scanner_open(f->reg, NULL, &s));
  assert_einval(par_scanner_seek(s, NULL, 1, PAR_SEEK_GE));
  assert_einval(par_scanner_seek(s, "k", 1, (par_seek_mode)7));
  assert_ok(par_scanner_seek(s, "k", 1, PAR_SEEK_GE));
  assert_true(par_scanner_valid(s));
  assert_einval(par_scanner_key(s, NULL, &kl));
  assert_einval(par_scanner_key(s, &kp, NULL));
  assert_einval(par_scanner_value(s, NULL, &kl));
  assert_einval(par_scanner_value(s, &kp, NULL));
  par_scanner_close(s);

  par_stats st;
  par_volume_stats vs;
  assert_einval(par_region_stats(NULL, &st));
  assert_einval(par_region_stats(f->reg, NULL));
  assert_einval(par_volume_stats_get(NULL, &vs));
  assert_einval(par_volume_stats_get(f->vol, NULL));

  /* Everything above left the region intact. */
  len = 0;
  assert_ok(par_get(f->reg, NULL, "k", 1, buf, sizeof buf, &len));
  assert_int_equal(len, 5);
  assert_memory_equal(buf, "value", 5);
  free(other);
}

static void test_strerror(void **state) {
  (void)state;
  for (int c = -12; c <= 1; c++) {
    const char *m = par_strerror(c);
    assert_non_null(m);
    assert_true(strlen(m) > 0);
    for (int d = -12; d < c; d++) {
      if (strcmp(par_strerror(d), m) == 0) fail_msg("codes %d and %d share the name %s", d, c, m);
    }
  }
  assert_non_null(strstr(par_strerror(PAR_ENOSPC), "ENOSPC"));
  assert_non_null(par_strerror(12345));
  assert_non_null(par_strerror(-12345));
}

static void test_key_limits(void **state) {
  fx *f = *state;
  static uint8_t key[PAR_MAX_KEY_SIZE + 1];
  char buf[16];
  size_t len;
  memset(key, 'K', sizeof key);

  /* Empty keys: PAR_EINVAL everywhere. */
  assert_einval(par_put(f->reg, "", 0, "v", 1, 0));
  assert_einval(par_delete(f->reg, "", 0, 0));
  assert_einval(par_get(f->reg, NULL, "", 0, buf, sizeof buf, &len));
  assert_einval(par_exists(f->reg, NULL, "", 0));
  par_batch *b = NULL;
  assert_ok(par_batch_create(&b));
  assert_einval(par_batch_put(b, "", 0, "v", 1));
  assert_einval(par_batch_delete(b, "", 0));

  /* 1025 bytes: PAR_ETOOBIG. */
  assert_par(par_put(f->reg, key, PAR_MAX_KEY_SIZE + 1, "v", 1, 0), PAR_ETOOBIG);
  expect_error_message();
  assert_par(par_delete(f->reg, key, PAR_MAX_KEY_SIZE + 1, 0), PAR_ETOOBIG);
  assert_par(par_get(f->reg, NULL, key, PAR_MAX_KEY_SIZE + 1, buf, sizeof buf, &len),
             PAR_ETOOBIG);
  assert_par(par_exists(f->reg, NULL, key, PAR_MAX_KEY_SIZE + 1), PAR_ETOOBIG);
  assert_par(par_batch_put(b, key, PAR_MAX_KEY_SIZE + 1, "v", 1), PAR_ETOOBIG);
  assert_par(par_batch_delete(b, key, PAR_MAX_KEY_SIZE + 1), PAR_ETOOBIG);
  assert_int_equal(par_batch_count(b), 0);
  par_scanner *s = NULL;
  assert_ok(par_scanner_open(f->reg, NULL, &s));
  assert_par2(par_scanner_seek(s, key, PAR_MAX_KEY_SIZE + 1, PAR_SEEK_GE), PAR_ETOOBIG,
              PAR_EINVAL);
  par_scanner_close(s);

  /* 1 and 1024 bytes work, through every level and a reopen. */
  assert_ok(par_put(f->reg, key, PAR_MAX_KEY_SIZE, "max", 3, 0));
  assert_ok(par_put(f->reg, "\x00", 1, "nul", 3, 0));
  assert_ok(par_batch_put(b, key, PAR_MAX_KEY_SIZE - 1, "max-1", 5));
  assert_ok(par_write(f->reg, b, 0));
  par_batch_destroy(b);
  for (int round = 0; round < 3; round++) {
    len = 0;
    assert_ok(par_get(f->reg, NULL, key, PAR_MAX_KEY_SIZE, buf, sizeof buf, &len));
    assert_int_equal(len, 3);
    assert_memory_equal(buf, "max", 3);
    assert_ok(par_get(f->reg, NULL, key, PAR_MAX_KEY_SIZE - 1, buf, sizeof buf, &len));
    assert_int_equal(len, 5);
    assert_ok(par_get(f->reg, NULL, "\x00", 1, buf, sizeof buf, &len));
    assert_int_equal(len, 3);
    assert_ok(par_scanner_open(f->reg, NULL, &s));
    assert_ok(par_scanner_seek(s, key, PAR_MAX_KEY_SIZE, PAR_SEEK_GE));
    assert_true(par_scanner_valid(s));
    const void *k;
    size_t kl;
    assert_ok(par_scanner_key(s, &k, &kl));
    assert_int_equal(kl, PAR_MAX_KEY_SIZE);
    assert_memory_equal(k, key, PAR_MAX_KEY_SIZE);
    par_scanner_close(s);
    if (round == 0) assert_ok(par_flush(f->reg));
    if (round == 1) {
      assert_ok(par_region_close(f->reg));
      f->reg = NULL;
      assert_ok(par_close(f->vol));
      f->vol = NULL;
      assert_ok(par_open(f->path, &f->opts, &f->vol));
      assert_ok(par_region_open(f->vol, "main", 0, &f->reg));
    }
  }
}

static void test_value_limits(void **state) {
  fx *f = *state;
  const size_t max = PAR_MAX_VALUE_SIZE;
  uint8_t *val = malloc(max + 1);
  uint8_t *buf = malloc(max + 16);
  assert_non_null(val);
  assert_non_null(buf);
  tu_fill_pattern(val, max, 1);

  assert_par(par_put(f->reg, "big", 3, val, max + 1, 0), PAR_ETOOBIG);
  expect_error_message();
  assert_par(par_get(f->reg, NULL, "big", 3, buf, max, &(size_t){0}), PAR_NOT_FOUND);
  par_batch *b = NULL;
  assert_ok(par_batch_create(&b));
  assert_par(par_batch_put(b, "big", 3, val, max + 1), PAR_ETOOBIG);
  assert_int_equal(par_batch_count(b), 0);

  assert_ok(par_put(f->reg, "max", 3, val, max, PAR_SYNC));
  tu_fill_pattern(val, max - 1, 2);
  assert_ok(par_batch_put(b, "max-1", 5, val, max - 1));
  assert_ok(par_write(f->reg, b, 0));
  for (int round = 0; round < 3; round++) {
    size_t len = 0;
    memset(buf, 0, max + 16);
    assert_ok(par_get(f->reg, NULL, "max", 3, buf, max + 16, &len));
    assert_int_equal(len, max);
    assert_true(tu_check_pattern(buf, max, 1));
    assert_ok(par_get(f->reg, NULL, "max-1", 5, buf, max + 16, &len));
    assert_int_equal(len, max - 1);
    assert_true(tu_check_pattern(buf, max - 1, 2));
    if (round == 0) assert_ok(par_flush(f->reg));
    if (round == 1) {
      assert_ok(par_region_close(f->reg));
      f->reg = NULL;
      assert_ok(par_close(f->vol));
      f->vol = NULL;
      assert_ok(par_open(f->path, &f->opts, &f->vol));
      assert_ok(par_region_open(f->vol, "main", 0, &f->reg));
    }
  }

  /* A batch whose encoding exceeds PAR_MAX_BATCH_SIZE is refused as a whole,
   * either when it grows past the limit or when it is written. Values up to
   * PAR_MAX_INLINE_VALUE count whole; larger ones as their pointer. */
  par_batch_clear(b);
  tu_fill_pattern(val, max, 3);
  const size_t inl = PAR_MAX_INLINE_VALUE;
  assert_ok(par_batch_put(b, "bt1", 3, "small", 5));
  assert_ok(par_batch_put(b, "bt2", 3, val, inl));
  int rc = par_batch_put(b, "bt3", 3, val, inl);
  if (rc == PAR_OK) {
    assert_par(par_write(f->reg, b, 0), PAR_ETOOBIG);
  } else {
    assert_par(rc, PAR_ETOOBIG);
  }
  expect_error_message();
  assert_par(par_exists(f->reg, NULL, "bt1", 3), PAR_NOT_FOUND);
  assert_par(par_exists(f->reg, NULL, "bt3", 3), PAR_NOT_FOUND);
  /* A batch under the limit (1 MiB + 256 KiB of values, and a 64 MiB one
   * that goes to the large log) is accepted. */
  par_batch_clear(b);
  assert_ok(par_batch_put(b, "bt1", 3, "small", 5));
  assert_ok(par_batch_put(b, "bt2", 3, val, inl));
  assert_ok(par_batch_put(b, "bt3", 3, val, 256 * 1024));
  assert_ok(par_batch_put(b, "bt4", 3, val, max));
  assert_ok(par_write(f->reg, b, PAR_SYNC));
  assert_ok(par_exists(f->reg, NULL, "bt3", 3));
  size_t len = 0;
  assert_ok(par_get(f->reg, NULL, "bt4", 3, buf, max + 16, &len));
  assert_int_equal(len, max);
  assert_true(tu_check_pattern(buf, max, 3));
  par_batch_destroy(b);
  free(val);
  free(buf);
}

static void test_bad_options(void **state) {
  fx *f = *state;
  char *p = tu_path(f->dir, "opts.px");
  par_volume *v = NULL;
  par_options o = tu_options(1u << 20, 4);
  o.growth_factor = 0;
  assert_einval(par_open(p, &o, &v));
  o.growth_factor = 1;
  assert_einval(par_open(p, &o, &v));
  o = tu_options(1u << 20, 4);
  o.l0_size = 0;
  assert_einval(par_open(p, &o, &v));
  free(p);
}

static void test_region_names(void **state) {
  fx *f = *state;
  char name[PAR_MAX_REGION_NAME + 2];
  par_region *r = NULL;

  assert_einval(par_region_create(f->vol, ""));
  assert_einval(par_region_open(f->vol, "", 1, &r));

  memset(name, 'n', sizeof name);
  name[PAR_MAX_REGION_NAME + 1] = 0; /* 128 bytes */
  int rc = par_region_create(f->vol, name);
  if (rc != PAR_ETOOBIG && rc != PAR_EINVAL)
    fail_msg("a %u-byte region name gave %s", PAR_MAX_REGION_NAME + 1, par_strerror(rc));
  expect_error_message();
  rc = par_region_open(f->vol, name, 1, &r);
  if (rc != PAR_ETOOBIG && rc != PAR_EINVAL)
    fail_msg("opening a %u-byte region name gave %s", PAR_MAX_REGION_NAME + 1, par_strerror(rc));

  name[PAR_MAX_REGION_NAME] = 0; /* 127 bytes: fine */
  assert_ok(par_region_create(f->vol, name));
  assert_ok(par_region_open(f->vol, name, 0, &r));
  assert_ok(par_put(r, "k", 1, "v", 1, 0));
  assert_ok(par_region_close(r));
  /* Same name twice: EBUSY on the second open. */
  par_region *r2 = NULL;
  assert_ok(par_region_open(f->vol, name, 0, &r));
  assert_par(par_region_open(f->vol, name, 0, &r2), PAR_EBUSY);
  expect_error_message();
  assert_par(par_region_open(f->vol, "main", 1, &r2), PAR_EBUSY);
  assert_ok(par_region_close(r));
  assert_ok(par_region_open(f->vol, name, 0, &r)); /* after close it opens again */
  assert_ok(par_exists(r, NULL, "k", 1));
  assert_ok(par_region_close(r));
}

typedef struct count_ctx {
  unsigned n;
} count_ctx;

static void count_name(const char *name, void *arg) {
  (void)name;
  ((count_ctx *)arg)->n++;
}

static void test_region_limit(void **state) {
  fx *f = *state;
  char name[32];
  /* The fixture created "main": 1023 more fit. */
  for (unsigned i = 1; i < PAR_MAX_REGIONS; i++) {
    snprintf(name, sizeof name, "r%05u", i);
    assert_ok(par_region_create(f->vol, name));
  }
  assert_par(par_region_create(f->vol, "one-too-many"), PAR_ELIMIT);
  expect_error_message();
  par_region *r = NULL;
  assert_par(par_region_open(f->vol, "one-too-many", 1, &r), PAR_ELIMIT);
  count_ctx c = {0};
  assert_ok(par_region_list(f->vol, count_name, &c));
  assert_int_equal(c.n, PAR_MAX_REGIONS);
  /* Dropping one makes room again, also after a reopen. */
  assert_ok(par_region_drop(f->vol, "r00007"));
  assert_ok(par_region_close(f->reg));
  f->reg = NULL;
  assert_ok(par_close(f->vol));
  f->vol = NULL;
  assert_ok(par_open(f->path, &f->opts, &f->vol));
  c.n = 0;
  assert_ok(par_region_list(f->vol, count_name, &c));
  assert_int_equal(c.n, PAR_MAX_REGIONS - 1);
  assert_ok(par_region_create(f->vol, "one-more"));
  assert_par(par_region_create(f->vol, "one-too-many"), PAR_ELIMIT);
  assert_ok(par_region_open(f->vol, "main", 0, &f->reg));
}

/* ---- files that are not volumes -------------------------------------------- */

static void write_file(const char *path, const void *data, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  const char *p = data;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    assert_true(w > 0);
    p += w;
    n -= (size_t)w;
  }
  close(fd);
}

static void test_not_a_volume(void **state) {
  fx *f = *state;
  par_volume *v = NULL;
  par_options o = tu_options(1u << 20, 4);

  /* A short text file and a long one (bigger than a segment). */
  const char *line = "This is not a Parallax volume, just some text.\n";
  size_t big = 3u << 20;
  char *text = malloc(big);
  assert_non_null(text);
  for (size_t i = 0; i < big; i++) text[i] = line[i % strlen(line)];
  const size_t sizes[] = {100, big};
  for (int i = 0; i < 2; i++) {
    char *p = tu_path(f->dir, i ? "long.txt" : "short.txt");
    write_file(p, text, sizes[i]);
    for (int create = 0; create <= 1; create++) {
      o.create_if_missing = (uint32_t)create;
      assert_par(par_open(p, &o, &v), PAR_ENOTVOLUME);
      expect_error_message();
    }
    /* The refused file was left untouched. */
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal((size_t)st.st_size, sizes[i]);
    char head[64];
    int fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, head, sizeof head), sizeof head);
    close(fd);
    assert_memory_equal(head, text, sizeof head);
    free(p);
  }
  /* A file that is not empty but starts with a segment of zeros (a sparse
   * file, a disk image, someone's data) is not formatted unless asked. */
  {
    char *p = tu_path(f->dir, "zeros-then-data.bin");
    size_t size = 3u << 20;
    char *data = calloc(1, size);
    assert_non_null(data);
    memset(data + (2u << 20), 0xab, 1u << 20);
    write_file(p, data, size);
    o.create_if_missing = 1;
    assert_par(par_open(p, &o, &v), PAR_ENOTVOLUME);
    expect_error_message();
    char *after = malloc(size);
    int fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, after, size), (ssize_t)size);
    close(fd);
    assert_memory_equal(after, data, size);
    o.format_existing = 1;
    assert_ok(par_open(p, &o, &v));
    assert_ok(par_close(v));
    o.format_existing = 0;
    assert_ok(par_open(p, &o, &v)); /* a volume now */
    assert_ok(par_close(v));
    v = NULL;
    free(after);
    free(data);
    free(p);
  }
  /* A directory is not a volume either (whatever the code, no crash). */
  o.create_if_missing = 1;
  int rc = par_open(f->dir, &o, &v);
  if (rc >= 0) fail_msg("opening a directory as a volume gave %s", par_strerror(rc));
  free(text);
}

/* Builds a small volume with data, closes it, and returns its path. */
static char *make_closed_volume(fx *f, const char *file) {
  char *p = tu_path(f->dir, file);
  par_options o = tu_options(1u << 20, 4);
  par_volume *v = NULL;
  par_region *r = NULL;
  assert_ok(par_open(p, &o, &v));
  assert_ok(par_region_open(v, "data", 1, &r));
  char key[32];
  for (int i = 0; i < 5000; i++) {
    snprintf(key, sizeof key, "key%06d", i);
    assert_ok(par_put(r, key, strlen(key), key, strlen(key), 0));
  }
  assert_ok(par_flush(r));
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  return p;
}

static void test_destroyed_superblocks(void **state) {
  fx *f = *state;
  par_volume *v = NULL;
  par_options o = tu_options(1u << 20, 4);
  o.create_if_missing = 0;

  /* Random bytes over the whole first segment (both superblock copies and
   * the catalog live there or beyond recognition). */
  char *p = make_closed_volume(f, "random.px");
  struct stat st;
  assert_int_equal(stat(p, &st), 0);
  size_t n = (size_t)st.st_size < PAR_SEGMENT_SIZE ? (size_t)st.st_size : PAR_SEGMENT_SIZE;
  uint8_t *junk = malloc(n);
  assert_non_null(junk);
  uint64_t rng = 12345;
  tu_rand_bytes(&rng, junk, n);
  int fd = open(p, O_WRONLY);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, junk, n, 0), (ssize_t)n);
  close(fd);
  assert_par2(par_open(p, &o, &v), PAR_ENOTVOLUME, PAR_ECORRUPT);
  expect_error_message();
  o.create_if_missing = 1; /* must not "repair" by reformatting either */
  assert_par2(par_open(p, &o, &v), PAR_ENOTVOLUME, PAR_ECORRUPT);
  o.create_if_missing = 0;
  free(junk);
  free(p);

  /* Only one 4 KiB superblock copy destroyed (each in turn): the engine
   * either recovers from the other one with every key intact, or refuses
   * the volume as corrupt; it never opens it with wrong contents. */
  for (int copy = 0; copy < 2; copy++) {
    p = make_closed_volume(f, copy ? "one-copy-b.px" : "one-copy-a.px");
    uint8_t page[4096];
    tu_rand_bytes(&rng, page, sizeof page);
    fd = open(p, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, page, sizeof page, (off_t)copy * 4096), (ssize_t)sizeof page);
    close(fd);
    int rc1 = par_open(p, &o, &v);
    if (rc1 == PAR_OK) {
      par_region *r = NULL;
      assert_ok(par_region_open(v, "data", 0, &r));
      char key[32], buf[32];
      for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "key%06d", i);
        size_t len = 0;
        assert_ok(par_get(r, NULL, key, strlen(key), buf, sizeof buf, &len));
        assert_int_equal(len, strlen(key));
        assert_memory_equal(buf, key, len);
      }
      assert_ok(par_region_close(r));
      assert_ok(par_close(v));
    } else {
      fprintf(stderr, "superblock copy %d destroyed: %s\n", copy, par_strerror(rc1));
      assert_par(rc1, PAR_ECORRUPT);
    }
    free(p);
  }

  /* A volume truncated to a few bytes. */
  p = make_closed_volume(f, "truncated.px");
  assert_int_equal(truncate(p, 1000), 0);
  assert_par2(par_open(p, &o, &v), PAR_ENOTVOLUME, PAR_ECORRUPT);
  free(p);

  /* An empty file cannot be mistaken for a volume with data. */
  p = tu_path(f->dir, "empty.px");
  write_file(p, "", 0);
  int rc = par_open(p, &o, &v);
  if (rc == PAR_OK) {
    /* Accepted as a fresh volume: then it must work as one. */
    par_region *r = NULL;
    assert_par(par_region_open(v, "data", 0, &r), PAR_ENOENT);
    assert_ok(par_close(v));
  } else {
    assert_par2(rc, PAR_ENOTVOLUME, PAR_ECORRUPT);
  }
  free(p);
}

/* ---- locking --------------------------------------------------------------- */

static void test_volume_busy(void **state) {
  fx *f = *state;
  par_volume *v2 = NULL;
  assert_par(par_open(f->path, &f->opts, &v2), PAR_EBUSY);
  expect_error_message();
  /* The same file through another path name. */
  char *alias = NULL;
  assert_true(asprintf(&alias, "%s/./volume.px", f->dir) > 0);
  assert_par(par_open(alias, &f->opts, &v2), PAR_EBUSY);
  free(alias);

  /* Another process (a fresh exec of this binary) is refused too. */
  pid_t pid = tu_fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execl(g_self, g_self, "--try-open", f->path, (char *)NULL);
    _exit(99);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) != 0)
    fail_msg("second process opening a locked volume: exit %d (0 = got PAR_EBUSY; 10+n = -status n)",
             WEXITSTATUS(status));

  /* After close, both work again. */
  assert_ok(par_region_close(f->reg));
  f->reg = NULL;
  assert_ok(par_close(f->vol));
  f->vol = NULL;
  assert_ok(par_open(f->path, &f->opts, &f->vol));
  assert_ok(par_region_open(f->vol, "main", 0, &f->reg));
}

/* ---- per-thread error messages --------------------------------------------- */

typedef struct err_ctx {
  par_region *reg;
  char msg[512];
  int rc;
} err_ctx;

static void *error_thread(void *arg) {
  err_ctx *c = arg;
  c->rc = par_put(c->reg, "", 0, "v", 1, 0); /* PAR_EINVAL */
  snprintf(c->msg, sizeof c->msg, "%s", par_last_error());
  return NULL;
}

static void test_last_error_per_thread(void **state) {
  fx *f = *state;
  static uint8_t key[PAR_MAX_KEY_SIZE + 1];
  assert_par(par_put(f->reg, key, sizeof key, "v", 1, 0), PAR_ETOOBIG);
  char mine[512];
  snprintf(mine, sizeof mine, "%s", par_last_error());
  assert_true(strlen(mine) > 0);

  err_ctx c = {.reg = f->reg};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, error_thread, &c), 0);
  pthread_join(t, NULL);
  assert_int_equal(c.rc, PAR_EINVAL);
  assert_true(strlen(c.msg) > 0);
  if (strcmp(c.msg, mine) == 0)
    fail_msg("different errors in two threads gave the same message '%s'", mine);
  /* The other thread's error did not overwrite this thread's message. */
  assert_string_equal(par_last_error(), mine);
}

/* ---- out of space ------------------------------------------------------------ */

static size_t nospc_value(uint64_t i, uint8_t *buf) {
  static const size_t sizes[] = {40, 500, 900, 3000};
  size_t n = sizes[i % 4];
  tu_fill_pattern(buf, n, i);
  return n;
}

/* Checks a reopened region after the volume filled up: keys [0, synced) must
 * be present, and the keys present must be a prefix [0, P) of the write
 * sequence with P <= limit. Returns P. */
static uint64_t nospc_verify(par_region *r, uint64_t synced, uint64_t limit) {
  uint8_t *buf = malloc(8192), *want = malloc(8192);
  assert_non_null(buf);
  assert_non_null(want);
  char key[32];
  uint64_t present = 0;
  int gap = 0;
  for (uint64_t i = 0; i < limit + 2; i++) {
    snprintf(key, sizeof key, "nospc%08llu", (unsigned long long)i);
    size_t len = 0;
    int rc = par_get(r, NULL, key, strlen(key), buf, 8192, &len);
    if (rc == PAR_NOT_FOUND) {
      if (i < synced) fail_msg("synced key %s (of %llu synced) lost", key, (unsigned long long)synced);
      gap = 1;
      continue;
    }
    assert_ok(rc);
    if (gap) fail_msg("key %s present after a missing key: not a prefix", key);
    if (i >= limit) fail_msg("key %s present but its write was never acknowledged", key);
    size_t n = nospc_value(i, want);
    if (len != n || memcmp(buf, want, n) != 0) fail_msg("key %s: wrong value", key);
    present = i + 1;
  }
  /* A scan agrees. */
  par_scanner *s = NULL;
  assert_ok(par_scanner_open(r, NULL, &s));
  assert_ok(par_scanner_seek(s, "nospc", 5, PAR_SEEK_GE));
  uint64_t count = 0;
  while (par_scanner_valid(s)) {
    count++;
    assert_ok(par_scanner_next(s));
  }
  par_scanner_close(s);
  assert_int_equal(count, present);
  free(buf);
  free(want);
  return present;
}

static void test_volume_full(void **state) {
  fx *f = *state;
  char *p = tu_path(f->dir, "full.px");
  par_options o = tu_options(256u << 10, 4);
  o.max_volume_size = 16u << 20;
  par_volume *v = NULL;
  par_region *r = NULL;
  assert_ok(par_open(p, &o, &v));
  assert_ok(par_region_open(v, "fill", 1, &r));

  uint8_t val[4096];
  char key[32];
  uint64_t acked = 0, synced = 0;
  int rc = PAR_OK;
  const uint64_t cap = 200000; /* ~400 MB: far beyond 16 MiB */
  for (uint64_t i = 0; i < cap; i++) {
    snprintf(key, sizeof key, "nospc%08llu", (unsigned long long)i);
    size_t n = nospc_value(i, val);
    unsigned flags = (i % 16 == 15) ? PAR_SYNC : 0;
    rc = par_put(r, key, strlen(key), val, n, flags);
    if (rc != PAR_OK) break;
    acked = i + 1;
    if (flags & PAR_SYNC) synced = acked;
  }
  fprintf(stderr, "volume full after %llu acknowledged writes (%llu synced): %s (%s)\n",
          (unsigned long long)acked, (unsigned long long)synced, par_strerror(rc),
          par_last_error());
  if (acked == cap) fail_msg("a 16 MiB volume accepted %llu writes of ~1 KiB", (unsigned long long)cap);
  assert_par(rc, PAR_ENOSPC);
  expect_error_message();
  assert_true(acked > 1000);

  /* In this session every acknowledged write is readable. */
  uint64_t present = nospc_verify(r, acked, acked + 1);
  if (present < acked) fail_msg("only %llu of %llu acknowledged writes readable",
                                (unsigned long long)present, (unsigned long long)acked);
  /* Further writes fail cleanly; reads keep working. */
  rc = par_put(r, "more", 4, val, 3000, PAR_SYNC);
  if (rc == PAR_OK) {
    /* Possible when a compaction freed space meanwhile; not an error. */
    assert_ok(par_delete(r, "more", 4, 0));
  } else if (rc != PAR_ENOSPC && rc != PAR_EFAILED) {
    fail_msg("write to a full volume gave %s", par_strerror(rc));
  }
  int clean = 1;
  rc = par_region_close(r);
  if (rc != PAR_OK && rc != PAR_ENOSPC && rc != PAR_EFAILED)
    fail_msg("par_region_close on a full volume: %s", par_strerror(rc));
  clean &= rc == PAR_OK;
  rc = par_close(v);
  if (rc != PAR_OK && rc != PAR_ENOSPC && rc != PAR_EFAILED)
    fail_msg("par_close on a full volume: %s", par_strerror(rc));
  clean &= rc == PAR_OK;
  /* A close that reported success made every acknowledged write durable. */
  uint64_t must = clean ? acked : synced;

  /* Reopen with the same limit: either it works (and holds the data) or it
   * says ENOSPC, never anything worse. */
  o.create_if_missing = 0;
  v = NULL;
  r = NULL;
  rc = par_open(p, &o, &v);
  if (rc == PAR_OK) {
    rc = par_region_open(v, "fill", 0, &r);
    if (rc == PAR_OK) {
      present = nospc_verify(r, must, acked + 1);
      fprintf(stderr, "same-size reopen: %llu writes present\n", (unsigned long long)present);
      rc = par_region_close(r);
      if (rc != PAR_OK && rc != PAR_ENOSPC) fail_msg("region close: %s", par_strerror(rc));
    } else {
      assert_par(rc, PAR_ENOSPC);
    }
    rc = par_close(v);
    if (rc != PAR_OK && rc != PAR_ENOSPC) fail_msg("close: %s", par_strerror(rc));
  } else {
    assert_par(rc, PAR_ENOSPC);
  }

  /* With room to grow everything acknowledged before the failure is there
   * (a clean close made it durable), and the volume accepts writes again. */
  o.max_volume_size = 64u << 20;
  assert_ok(par_open(p, &o, &v));
  assert_ok(par_region_open(v, "fill", 0, &r));
  present = nospc_verify(r, must, acked + 1);
  fprintf(stderr, "bigger reopen: %llu writes present (%llu acknowledged)\n",
          (unsigned long long)present, (unsigned long long)acked);
  for (int i = 0; i < 2000; i++) {
    snprintf(key, sizeof key, "after%06d", i);
    assert_ok(par_put(r, key, strlen(key), val, 500, 0));
  }
  assert_ok(par_flush(r));
  assert_ok(par_exists(r, NULL, "after001999", 11));
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
  free(p);
}

/* Child mode for test_volume_busy: exit 0 when par_open says PAR_EBUSY. */
static int try_open(const char *path) {
  par_options o = tu_options(1u << 20, 4);
  o.create_if_missing = 0;
  par_volume *v = NULL;
  int rc = par_open(path, &o, &v);
  if (rc == PAR_OK) par_close(v);
  if (rc == PAR_EBUSY) return 0;
  fprintf(stderr, "try-open: %s (%s)\n", par_strerror(rc), par_last_error());
  return rc >= 0 ? 10 : 10 - rc;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--try-open") == 0) return try_open(argv[2]);
  ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
  if (n <= 0) return 2;
  g_self[n] = 0;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_null_pointers, setup, teardown),
      cmocka_unit_test(test_strerror),
      cmocka_unit_test_setup_teardown(test_key_limits, setup, teardown),
      cmocka_unit_test_setup_teardown(test_value_limits, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
      cmocka_unit_test_setup_teardown(test_region_names, setup, teardown),
      cmocka_unit_test_setup_teardown(test_region_limit, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_a_volume, setup, teardown),
      cmocka_unit_test_setup_teardown(test_destroyed_superblocks, setup, teardown),
      cmocka_unit_test_setup_teardown(test_volume_busy, setup, teardown),
      cmocka_unit_test_setup_teardown(test_last_error_per_thread, setup, teardown),
      cmocka_unit_test_setup_teardown(test_volume_full, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
