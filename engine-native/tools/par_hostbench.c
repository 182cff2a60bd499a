/*
 * par_hostbench — the write paths and snapshots a host chooses between.
 *
 *   par_hostbench DIR PAIRS VALUE_BYTES BATCH REGIONS
 *
 * Into DIR/host.vol, each on a region (or set of regions) of its own, PAIRS
 * pairs of VALUE_BYTES are written: one par_put at a time with the WAL, the
 * same with PAR_NO_WAL, in par_write batches of BATCH ops in one region
 * (without and with PAR_SYNC), and in par_write_volume batches of BATCH ops
 * spread round-robin over REGIONS regions (atomic across them, also across a
 * crash, and so durable when the call returns, like PAR_SYNC). Each load ends
 * with a par_sync (par_flush for the unlogged one), counted in its time. Then it
 * times par_snapshot_create_many over the REGIONS regions against REGIONS
 * par_snapshot_create calls (10 000 of each), and par_compact of the
 * logged region. Page-cache mode unless run in a cgroup.
 */
#include <parallax/parallax.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_REGIONS 64
#define SNAPSHOTS 10000

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void check(int rc, const char *what) {
  if (rc == PAR_OK) return;
  fprintf(stderr, "par_hostbench: %s: %s (%s)\n", what, par_strerror(rc), par_last_error());
  exit(1);
}

static par_region *open_region(par_volume *v, const char *name) {
  par_region *r;
  check(par_region_open(v, name, 1, &r), "region open");
  return r;
}

static int key_of(long i, char *key) { return snprintf(key, 32, "key%012ld", i); }

static void report(const char *label, long pairs, double t) {
  printf("%-34s %7.2f s  %9.0f pairs/s\n", label, t, pairs / t);
}

/* Loads pairs through batches of batch ops over the n regions r[0..n). */
static void load_batches(par_volume *v, par_region **r, int n, long pairs, int batch, unsigned flags,
                         const char *val, size_t vlen) {
  par_batch *b;
  check(par_batch_create(&b), "batch");
  char key[32];
  for (long i = 0; i < pairs; i++) {
    int kl = key_of(i, key);
    check(n == 1 ? par_batch_put(b, key, (size_t)kl, val, vlen)
                 : par_batch_put_in(b, r[i % n], key, (size_t)kl, val, vlen),
          "batch put");
    if ((long)par_batch_count(b) == batch || i == pairs - 1) {
      check(n == 1 ? par_write(r[0], b, flags) : par_write_volume(v, b, flags), "write");
      par_batch_clear(b);
    }
  }
  par_batch_destroy(b);
  for (int i = 0; i < n; i++) check(par_sync(r[i]), "sync");
}

int main(int argc, char **argv) {
  if (argc != 6 || atol(argv[2]) <= 0 || atoi(argv[4]) <= 0 || atoi(argv[5]) < 2 ||
      atoi(argv[5]) > MAX_REGIONS) {
    fprintf(stderr, "usage: par_hostbench DIR PAIRS VALUE_BYTES BATCH REGIONS(2..%d)\n", MAX_REGIONS);
    return 2;
  }
  long pairs = atol(argv[2]);
  size_t vlen = (size_t)strtoul(argv[3], NULL, 10);
  int batch = atoi(argv[4]), nreg = atoi(argv[5]);
  char path[4096], key[32], label[64];
  snprintf(path, sizeof path, "%s/host.vol", argv[1]);
  remove(path);
  char *val = malloc(vlen ? vlen : 1);
  memset(val, 'v', vlen);
  par_volume *v;
  check(par_open(path, NULL, &v), "open");

  par_region *logged = open_region(v, "logged");
  double t = now_s();
  for (long i = 0; i < pairs; i++) check(par_put(logged, key, (size_t)key_of(i, key), val, vlen, 0), "put");
  check(par_sync(logged), "sync");
  report("par_put", pairs, now_s() - t);

  par_region *unlogged = open_region(v, "unlogged");
  t = now_s();
  for (long i = 0; i < pairs; i++)
    check(par_put(unlogged, key, (size_t)key_of(i, key), val, vlen, PAR_NO_WAL), "put");
  check(par_flush(unlogged), "flush");
  report("par_put PAR_NO_WAL (+ par_flush)", pairs, now_s() - t);

  par_region *one = open_region(v, "batched");
  t = now_s();
  load_batches(v, &one, 1, pairs, batch, 0, val, vlen);
  snprintf(label, sizeof label, "par_write, %d ops a batch", batch);
  report(label, pairs, now_s() - t);

  par_region *synced = open_region(v, "synced");
  t = now_s();
  load_batches(v, &synced, 1, pairs, batch, PAR_SYNC, val, vlen);
  snprintf(label, sizeof label, "par_write PAR_SYNC, %d ops a batch", batch);
  report(label, pairs, now_s() - t);

  par_region *many[MAX_REGIONS];
  for (int i = 0; i < nreg; i++) {
    char name[16];
    snprintf(name, sizeof name, "x%d", i);
    many[i] = open_region(v, name);
  }
  t = now_s();
  load_batches(v, many, nreg, pairs, batch, 0, val, vlen);
  snprintf(label, sizeof label, "par_write_volume, %d regions", nreg);
  report(label, pairs, now_s() - t);

  par_snapshot *snaps[MAX_REGIONS];
  t = now_s();
  for (int k = 0; k < SNAPSHOTS; k++) {
    check(par_snapshot_create_many((size_t)nreg, many, snaps), "snapshot many");
    for (int i = 0; i < nreg; i++) par_snapshot_release(snaps[i]);
  }
  double many_us = (now_s() - t) * 1e6 / SNAPSHOTS;
  t = now_s();
  for (int k = 0; k < SNAPSHOTS; k++) {
    for (int i = 0; i < nreg; i++) check(par_snapshot_create(many[i], &snaps[i]), "snapshot");
    for (int i = 0; i < nreg; i++) par_snapshot_release(snaps[i]);
  }
  printf("snapshots of %d regions: par_snapshot_create_many %.2f us, %d x par_snapshot_create %.2f us\n",
         nreg, many_us, nreg, (now_s() - t) * 1e6 / SNAPSHOTS);

  t = now_s();
  check(par_compact(logged), "compact");
  printf("par_compact of the par_put region (%.1f MiB of keys and values): %.2f s\n",
         pairs * (15.0 + (double)vlen) / 1048576.0, now_s() - t);

  par_region *all[] = {logged, unlogged, one, synced};
  for (int i = 0; i < 4; i++) check(par_region_close(all[i]), "region close");
  for (int i = 0; i < nreg; i++) check(par_region_close(many[i]), "region close");
  check(par_close(v), "close");
  remove(path);
  free(val);
  return 0;
}
