/*
 * test_disk_full.c — the volume file on a file system that really fills up:
 * writes fail with PAR_ENOSPC (a clear status and message), every
 * acknowledged synced write survives, and once space is freed the volume
 * reopens with its data and takes writes again.
 *
 * Two ways to get a small file system, each in a forked child so that
 * nothing outlives the test:
 *  - a 24 MiB tmpfs mounted in a private mount namespace (needs root or
 *    CAP_SYS_ADMIN; skipped with a message elsewhere);
 *  - RLIMIT_FSIZE of 24 MiB with SIGXFSZ ignored: growing the file past it
 *    fails with EFBIG, as a full disk would (always available).
 * The engine's own max_volume_size limit is covered by test_bad_input.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kvgen.h"

#define FS_BYTES (24u << 20)
#define FILLER_BYTES (12u << 20)
#define MAX_KEYS 200000u
#define EXIT_SKIP 77

static void write_filler(const char *path) {
  FILE *fp = fopen(path, "w");
  TU_CHECK(fp != NULL, "cannot create %s", path);
  if (!fp) return;
  static char block[1 << 16];
  for (unsigned i = 0; i < FILLER_BYTES / sizeof block; i++) fwrite(block, 1, sizeof block, fp);
  TU_CHECK(fclose(fp) == 0, "filler %s", path);
}

/* Keys 0..n-1 must read back version 1 (at least the first must ones). */
static uint32_t count_present(par_region *r, uint32_t n, uint32_t must) {
  uint32_t present = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t ver;
    int rc = kv_read(r, i, &ver);
    TU_CHECK(rc == PAR_OK || (rc == PAR_NOT_FOUND && i >= must), "key %u: status %d", i, rc);
    present += rc == PAR_OK;
  }
  return present;
}

/* Fills the file system through the engine, then frees the filler (when
 * there is one) and checks the reopened volume. Runs in the child. */
static void workload(const char *dir, int has_filler) {
  char *vol_path = tu_path(dir, "volume.px"), *filler = tu_path(dir, "filler");
  if (has_filler) write_filler(filler);
  par_options o = tu_options(256u << 10, 4);
  par_volume *v = NULL;
  par_region *r = NULL;
  int rc = par_open(vol_path, &o, &v);
  if (!rc) rc = par_region_open(v, "fill", 1, &r);
  TU_CHECK(rc == PAR_OK, "open: %s", par_strerror(rc));
  if (rc) return;
  uint32_t acked = 0, synced = 0;
  for (; acked < MAX_KEYS; acked++) {
    unsigned flags = acked % 16 == 15 ? PAR_SYNC : 0;
    rc = kv_put(r, acked, 1, flags);
    if (rc) break;
    if (flags) synced = acked + 1;
  }
  fprintf(stderr, "file system full after %u writes (%u synced): %s (%s)\n", acked, synced, par_strerror(rc),
          par_last_error());
  TU_CHECK(rc == PAR_ENOSPC, "a full file system gave %s", par_strerror(rc));
  TU_CHECK(*par_last_error() != 0, "no message");
  TU_CHECK(acked > 1000, "only %u writes fit", acked);
  TU_CHECK(count_present(r, acked, acked) == acked, "acknowledged writes unreadable in the session");
  rc = par_put(r, "more", 4, "x", 1, PAR_SYNC);
  TU_CHECK(rc == PAR_OK || rc == PAR_ENOSPC || rc == PAR_EFAILED, "write to a full volume: %s", par_strerror(rc));
  int rc1 = par_region_close(r), rc2 = par_close(v);
  TU_CHECK(rc1 == PAR_OK || rc1 == PAR_ENOSPC || rc1 == PAR_EFAILED, "region close: %s", par_strerror(rc1));
  TU_CHECK(rc2 == PAR_OK || rc2 == PAR_ENOSPC || rc2 == PAR_EFAILED, "close: %s", par_strerror(rc2));
  uint32_t must = rc1 == PAR_OK && rc2 == PAR_OK ? acked : synced;

  if (has_filler) TU_CHECK(unlink(filler) == 0, "unlink filler");
  else {
    struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
    TU_CHECK(setrlimit(RLIMIT_FSIZE, &unlimited) == 0, "raise RLIMIT_FSIZE");
  }
  o.create_if_missing = 0;
  rc = par_open(vol_path, &o, &v);
  if (!rc) rc = par_region_open(v, "fill", 0, &r);
  TU_CHECK(rc == PAR_OK, "reopen after freeing space: %s (%s)", par_strerror(rc), par_last_error());
  if (rc) return;
  uint32_t present = count_present(r, acked, must);
  fprintf(stderr, "reopened: %u of %u acknowledged writes present (%u must be)\n", present, acked, must);
  for (uint32_t i = 0; i < 200; i++) TU_CHECK(kv_put(r, MAX_KEYS + i, 1, 0) == PAR_OK, "write after reopen");
  TU_CHECK(par_flush(r) == PAR_OK, "flush after reopen: %s", par_last_error());
  TU_CHECK(par_region_close(r) == PAR_OK && par_close(v) == PAR_OK, "final close");
  free(vol_path);
  free(filler);
}

/* Runs fn in a child; returns its exit status (EXIT_SKIP: unavailable). */
static int in_child(int (*fn)(const char *dir), const char *dir) {
  pid_t pid = tu_fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(fn(dir));
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status)) fail_msg("child died (status 0x%x)", status);
  return WEXITSTATUS(status);
}

static int tmpfs_child(const char *dir) {
  if (unshare(CLONE_NEWNS) != 0) {
    fprintf(stderr, "cannot create a mount namespace: %s\n", strerror(errno));
    return EXIT_SKIP;
  }
  char opts[64];
  snprintf(opts, sizeof opts, "size=%u", FS_BYTES);
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 || mount("tmpfs", dir, "tmpfs", 0, opts) != 0) {
    fprintf(stderr, "cannot mount a tmpfs: %s\n", strerror(errno));
    return EXIT_SKIP;
  }
  workload(dir, 1);
  return tu_failures() ? 1 : 0;
}

static int rlimit_child(const char *dir) {
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = {FS_BYTES, RLIM_INFINITY};
  if (setrlimit(RLIMIT_FSIZE, &lim) != 0) return EXIT_SKIP;
  workload(dir, 0);
  return tu_failures() ? 1 : 0;
}

static void run(const char *name, int (*fn)(const char *dir)) {
  char *dir = tu_make_dir(name);
  int rc = in_child(fn, dir);
  tu_rm_rf(dir);
  free(dir);
  if (rc == EXIT_SKIP) {
    fprintf(stderr, "%s: mechanism unavailable on this machine: skipped\n", name);
    skip();
  }
  if (rc) fail_msg("%s: the child reported failures (see above)", name);
}

static void test_tmpfs_full(void **state) {
  (void)state;
  run("disk_full_tmpfs", tmpfs_child);
}

static void test_rlimit_fsize(void **state) {
  (void)state;
  run("disk_full_rlimit", rlimit_child);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tmpfs_full),
      cmocka_unit_test(test_rlimit_fsize),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
