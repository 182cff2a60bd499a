/*
 * par_ckptbench — time and bytes of checkpoints, full and incremental.
 *
 *   par_ckptbench DIR PAIRS VALUE_BYTES UPDATE_PCT
 *
 * Loads PAIRS pairs of VALUE_BYTES into four regions of DIR/src.vol and
 * flushes them (the levels are as the load left them: L1 takes every flush,
 * deeper levels change only when one above spills), then: a full checkpoint
 * into DIR/ck.vol; UPDATE_PCT% of the pairs of one region overwritten and
 * flushed, and an incremental checkpoint into DIR/ck.vol; as many again
 * overwritten but not flushed (they are in the WAL and L0 only), and another
 * incremental one; then a full one into DIR/full.vol. Prints, for each, the
 * wall time, the segments it holds and copied, and the bytes written and
 * read (par_checkpoint_stats). Page-cache mode unless run in a cgroup.
 */
#include <parallax/parallax.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NREG 4

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what) {
  fprintf(stderr, "par_ckptbench: %s: %s\n", what, par_last_error());
  exit(1);
}

static void put_range(par_region *r, long from, long to, size_t vlen, char *val, unsigned seed) {
  char key[32];
  for (long i = from; i < to; i++) {
    int kl = snprintf(key, sizeof key, "key%012ld", i);
    memset(val, (int)(i * 131 + seed), vlen);
    if (par_put(r, key, (size_t)kl, val, vlen, 0)) die("put");
  }
}

static void checkpoint(par_volume *v, const char *path, const char *label) {
  par_checkpoint_stats st;
  double t = now_s();
  if (par_checkpoint(v, path, NULL, 0, &st)) die("checkpoint");
  t = now_s() - t;
  printf("%-13s %6.2f s  %6llu segments  %6llu copied  %9.1f MiB written  %9.1f MiB read\n", label, t,
         (unsigned long long)st.segments, (unsigned long long)st.segments_copied, st.bytes_copied / 1048576.0,
         st.bytes_read / 1048576.0);
}

int main(int argc, char **argv) {
  if (argc != 5 || atol(argv[2]) <= 0) {
    fprintf(stderr, "usage: par_ckptbench DIR PAIRS VALUE_BYTES UPDATE_PCT\n");
    return 2;
  }
  long pairs = atol(argv[2]), per = pairs / NREG;
  size_t vlen = (size_t)strtoul(argv[3], NULL, 10);
  long upd = per * atol(argv[4]) / 100;
  char src[4096], ck[4096], full[4096];
  snprintf(src, sizeof src, "%s/src.vol", argv[1]);
  snprintf(ck, sizeof ck, "%s/ck.vol", argv[1]);
  snprintf(full, sizeof full, "%s/full.vol", argv[1]);
  char *val = malloc(vlen ? vlen : 1);
  par_volume *v;
  par_region *r[NREG];
  if (par_open(src, NULL, &v)) die("open");
  for (int i = 0; i < NREG; i++) {
    char name[16];
    snprintf(name, sizeof name, "r%d", i);
    if (par_region_open(v, name, 1, &r[i])) die("region");
    put_range(r[i], 0, per, vlen, val, 1);
    if (par_flush(r[i])) die("flush");
  }
  checkpoint(v, ck, "full");
  put_range(r[0], 0, upd, vlen, val, 2);
  if (par_flush(r[0])) die("flush");
  checkpoint(v, ck, "incr., flush");
  put_range(r[0], 0, upd, vlen, val, 3);
  checkpoint(v, ck, "incr., WAL");
  checkpoint(v, full, "full (fresh)");
  for (int i = 0; i < NREG; i++) par_region_close(r[i]);
  if (par_close(v)) die("close");
  free(val);
  return 0;
}
