/*
 * test_crash.c — "after a crash the region holds every synced write and a
 * prefix, in log order, of the others — never a torn or reordered state".
 *
 * Each cycle forks a child that opens the (cumulative) volume and runs two
 * writer threads until the parent SIGKILLs it at a random moment (10-500 ms
 * after the child signalled it was ready; the small L0 makes compactions
 * likely to be in flight). Thread t writes its sequence s = 1, 2, 3, ... to
 * key (t, s mod K): a put of value (t, s) or, for some s, a delete or a range
 * delete of the next few keys; some
 * writes carry PAR_SYNC and the thread calls par_sync now and then. After a
 * synced write (or par_sync) returns the child appends "t s" to a side file.
 *
 * The parent then reopens the volume and checks, per thread:
 *  (a) the recovered state is the state after some prefix 1..P of the
 *      thread's writes, with P >= every acknowledged synced s;
 *  (b) every value parses and belongs to its key (no torn values);
 *  (c) the prefix property: P >= the largest s found, and every key holds
 *      exactly the last write s' <= P to it;
 *  (d) a full scan returns exactly what the gets returned.
 * The next cycle continues writing at P + 1 on the recovered volume.
 *
 * test_powerloss_recovery runs the same cycles as a power cut instead of a
 * kill: the child journals its writes (io/powerloss.h) and, once it is
 * killed, the parent leaves every write since the last completed fdatasync
 * lost, torn at a sector or reordered before it reopens; the promise checked
 * is the same. Both also check that space is not leaked: the segments in use
 * after each recovery stay under a bound that the live data sets.
 *
 * Every other cycle the child opens the volume with a 2 MiB L0 under a
 * 1 MiB memory budget (par_options.memory_budget_mib), so that the budget,
 * not the L0 size, freezes and flushes L0 while writers wait for it.
 *
 * In the kill cycles a third thread takes checkpoints one after another, so
 * the kill often interrupts one: the target is then refused as incomplete,
 * or it opens and holds a prefix state of each thread's writes, at least
 * what the source held when the child opened it and at most what the
 * source recovered.
 *
 * Environment: PAR_SEED, PAR_CRASH_CYCLES (default 20), PAR_POWERLOSS_CYCLES
 * (default 20).
 */
#define _GNU_SOURCE
#include "testutil.h"

#include "api/internal.h"
#include "io/powerloss.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NT 2      /* writer threads in the child */
#define KEYS 2000 /* keys per thread */
#define HDR 20
#define VBUF 32768

static uint64_t tag_of(int t, uint64_t s) { return ((uint64_t)t << 60) ^ s; }
static uint64_t h_of(int t, uint64_t s) { return tu_mix64(tag_of(t, s) * 0x9e37u + 1); }
static int is_delete(int t, uint64_t s) { return h_of(t, s) % 5 == 0; }

/* ---- range deletes ----
 * About one write in 100 is a range delete of the thread's keys
 * [key_idx(s), key_idx(s) + width) instead of a put; it removes the key it
 * is written to as a delete does. */
#define RANGE_MAX 8
static int is_range(int t, uint64_t s) { return !is_delete(t, s) && h_of(t, s) % 101 == 1; }
static uint32_t range_width(int t, uint64_t s) { return 1 + (uint32_t)((h_of(t, s) >> 40) % RANGE_MAX); }
static int is_put(int t, uint64_t s) { return !is_delete(t, s) && !is_range(t, s); }
/* How often the child syncs: a kill loses nothing the kernel has, so the kill
 * cycles sync often to check acknowledgements densely; a power cut loses what
 * no fdatasync covered, so those cycles sync rarely, to leave much unsynced
 * (set by run_cycles before the fork). */
static unsigned sync_one_in = 16, par_sync_every = 300, durability_ms = 100;
/* The memory budget of the child's next open (0: none; set per cycle). */
static unsigned budget_mib;
static int is_sync(int t, uint64_t s) { return (h_of(t, s) >> 8) % sync_one_in == 0; }
static uint32_t key_idx(uint64_t s) { return (uint32_t)(s % KEYS); }

static size_t key_of(int t, uint32_t k, char *out) {
  return (size_t)snprintf(out, 32, "c%d-%05u", t, k);
}

static size_t value_of(int t, uint64_t s, uint8_t *out) {
  uint64_t h = h_of(t, s) >> 16;
  size_t len = HDR + (h % 200 == 0 ? 20000 : h % 40 == 0 ? 1000 + h % 3000 : h % 200);
  uint32_t t32 = (uint32_t)t, l32 = (uint32_t)len;
  memcpy(out, &t32, 4);
  memcpy(out + 4, &s, 8);
  memcpy(out + 12, &l32, 4);
  memset(out + 16, 0, 4);
  tu_fill_pattern(out + HDR, len - HDR, tag_of(t, s));
  return len;
}

/* The s a value of key (t, k) encodes, or 0 when it is torn or misplaced. */
static uint64_t parse_value(int t, uint32_t k, const uint8_t *p, size_t len) {
  if (len < HDR) return 0;
  uint32_t t32, l32;
  uint64_t s;
  memcpy(&t32, p, 4);
  memcpy(&s, p + 4, 8);
  memcpy(&l32, p + 12, 4);
  if (t32 != (uint32_t)t || l32 != len || s == 0 || key_idx(s) != k || !is_put(t, s)) return 0;
  uint8_t *want = malloc(len);
  if (want == NULL) abort();
  int ok = value_of(t, s, want) == len && memcmp(want, p, len) == 0;
  free(want);
  return ok ? s : 0;
}

/* ---- the child -------------------------------------------------------------- */

typedef struct child_ctx {
  par_region *reg;
  int t;
  uint64_t start;
  int ack_fd;
  par_volume *vol;       /* the checkpoint thread's */
  const char *ckpt_path;
} child_ctx;

static void child_die(const char *what, int rc) {
  fprintf(stderr, "crash child: %s: %s (%s)\n", what, par_strerror(rc), par_last_error());
  _exit(3);
}

static void log_ack(int fd, int t, uint64_t s) {
  char line[64];
  int n = snprintf(line, sizeof line, "%d %llu\n", t, (unsigned long long)s);
  if (write(fd, line, (size_t)n) != n) _exit(4);
}

static void *child_writer(void *arg) {
  child_ctx *c = arg;
  uint8_t *val = malloc(VBUF);
  char key[32];
  for (uint64_t s = c->start;; s++) {
    size_t kl = key_of(c->t, key_idx(s), key);
    unsigned flags = is_sync(c->t, s) ? PAR_SYNC : 0;
    int rc;
    if (is_delete(c->t, s)) {
      rc = par_delete(c->reg, key, kl, flags);
    } else if (is_range(c->t, s)) {
      char end[32];
      size_t el = key_of(c->t, key_idx(s) + range_width(c->t, s), end);
      rc = par_delete_range(c->reg, key, kl, end, el, flags);
    } else {
      size_t vl = value_of(c->t, s, val);
      rc = par_put(c->reg, key, kl, val, vl, flags);
    }
    if (rc != PAR_OK) child_die("write", rc);
    if (flags) log_ack(c->ack_fd, c->t, s);
    if (s % par_sync_every == 0) {
      rc = par_sync(c->reg);
      if (rc != PAR_OK) child_die("par_sync", rc);
      log_ack(c->ack_fd, c->t, s);
    }
  }
  return NULL;
}

/* Kill cycles: checkpoints of the volume follow each other into ckpt_path,
 * so that the kill often lands in one. */
static void *child_checkpoints(void *arg) {
  const child_ctx *c = arg;
  for (;;) {
    int rc = par_checkpoint(c->vol, c->ckpt_path, NULL, 0, NULL);
    if (rc != PAR_OK) child_die("par_checkpoint", rc);
  }
  return NULL;
}

static void child_main(const char *path, const char *ack_path, const char *journal, const char *ckpt_path,
                       const uint64_t *start, int ready_fd) {
  if (journal && powerloss_arm(journal) != 0) _exit(9);
  par_options o = tu_options(budget_mib ? 2u << 20 : 256u << 10, 4);
  o.sort_large_values = 1; /* merges into the last level copy large values */
  o.durability_interval_ms = durability_ms;
  o.memory_budget_mib = budget_mib;
  par_volume *vol = NULL;
  par_region *reg = NULL;
  int rc = par_open(path, &o, &vol);
  if (rc != PAR_OK) child_die("par_open", rc);
  rc = par_region_open(vol, "crash", 1, &reg);
  if (rc != PAR_OK) child_die("par_region_open", rc);
  int ack_fd = open(ack_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (ack_fd < 0) _exit(5);
  child_ctx c[NT];
  pthread_t th[NT];
  for (int t = 0; t < NT; t++) {
    c[t] = (child_ctx){.reg = reg, .t = t, .start = start[t], .ack_fd = ack_fd};
    if (pthread_create(&th[t], NULL, child_writer, &c[t]) != 0) _exit(6);
  }
  pthread_t ct;
  child_ctx cc = {.vol = vol, .ckpt_path = ckpt_path};
  if (ckpt_path && pthread_create(&ct, NULL, child_checkpoints, &cc) != 0) _exit(6);
  if (write(ready_fd, "R", 1) != 1) _exit(7);
  for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
  _exit(8); /* unreachable: writers loop until killed */
}

/* ---- the parent's checks ------------------------------------------------------ */

static void read_acks(const char *ack_path, uint64_t *max_ack) {
  for (int t = 0; t < NT; t++) max_ack[t] = 0;
  FILE *fp = fopen(ack_path, "r");
  if (fp == NULL) return;
  int t;
  unsigned long long s;
  while (fscanf(fp, "%d %llu", &t, &s) == 2) {
    if (t >= 0 && t < NT && s > max_ack[t]) max_ack[t] = s;
  }
  fclose(fp);
}

/* The write s' <= p that key k holds after prefix 1..p (0 if none / deleted). */
static uint64_t expected_after(int t, uint32_t k, uint64_t p) {
  if (p < k) return 0;
  uint64_t s = p - ((p - k) % KEYS);
  if (s == 0 || !is_put(t, s)) return 0;
  /* A later range delete written to key k - j (j < RANGE_MAX) may cover k. */
  for (uint32_t j = 1; j < RANGE_MAX && j <= k; j++) {
    uint64_t r = s + KEYS - j;
    if (r <= p && is_range(t, r) && range_width(t, r) > j) return 0;
  }
  return s;
}

typedef struct cycle_stats {
  uint64_t recovered[NT];
  uint64_t acked[NT];
} cycle_stats;

/* For a value that fails its read: where the key's pointer leads and what
 * the catalog lists for that segment, to tell a lost write (listed with the
 * pointer's incarnation) from a segment dropped (not listed) or reused
 * (another incarnation). */
static void describe_pointer(par_region *r, const char *key, size_t kl, char *out, size_t cap) {
  uint64_t lsn;
  view *w = region_acquire_view(r, &lsn);
  tree_entry e;
  int rc = region_lookup(r, w, lsn, key, kl, NULL, &e);
  vptr p = {0};
  int large = rc == PAR_OK && e.cat == CAT_LARGE && e.value_len == VPTR_SIZE;
  if (large) p = vptr_decode(e.value);
  view_unref(w);
  if (!large) {
    snprintf(out, cap, "not a large-log pointer (lookup: %s)", par_strerror(rc));
    return;
  }
  int n = snprintf(out, cap, "pointer %u:%u inc %u size %u; catalog:", p.seg, p.off, p.inc, p.size);
  pthread_mutex_lock(&r->vol->meta_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  for (uint32_t i = 0; d && i < d->nvlog && n > 0 && (size_t)n < cap; i++) {
    const vlog_seg *v = &d->vlog[i];
    if (p.seg >= v->seg && p.seg < v->seg + v->nsegs)
      n += snprintf(out + n, cap - (size_t)n, " segment %u+%u inc %u garbage %llu open %u;", v->seg, v->nsegs,
                    v->inc, (unsigned long long)v->garbage, v->open);
  }
  if (d && n > 0 && (size_t)n < cap)
    snprintf(out + n, cap - (size_t)n, " next_inc %u, %u large-log entries", d->next_inc, d->nvlog);
  pthread_mutex_unlock(&r->vol->meta_mu);
}

/* Verifies the recovered region; on success sets next[t] = P + 1. */
static void verify_recovered(par_region *r, uint64_t seed, int cycle, uint64_t *next,
                             const uint64_t *max_ack, cycle_stats *cs) {
  static uint64_t got[NT][KEYS];
  uint8_t *buf = malloc(VBUF);
  char key[32];
  for (int t = 0; t < NT; t++) {
    uint64_t max_s = 0;
    for (uint32_t k = 0; k < KEYS; k++) {
      size_t kl = key_of(t, k, key), len = 0;
      int rc = par_get(r, NULL, key, kl, buf, VBUF, &len);
      got[t][k] = 0;
      if (rc == PAR_NOT_FOUND) continue;
      if (rc != PAR_OK) {
        char msg[512], where[512];
        snprintf(msg, sizeof msg, "%s", par_last_error());
        describe_pointer(r, key, kl, where, sizeof where);
        fail_msg("seed %llu cycle %d: get %s: %s (%s); %s", (unsigned long long)seed, cycle, key,
                 par_strerror(rc), msg, where);
      }
      uint64_t s = len <= VBUF ? parse_value(t, k, buf, len) : 0;
      if (s == 0)
        fail_msg("seed %llu cycle %d: key %s holds a torn or foreign %zu-byte value",
                 (unsigned long long)seed, cycle, key, len);
      got[t][k] = s;
      if (s > max_s) max_s = s;
    }
    /* Candidate prefixes: P >= max_s (that write was recovered), P >= every
     * acknowledged sync, P >= next-1 (the previous cycle ended with a clean
     * close). P < the first put after max_s, or that put would be visible
     * (it is only overwritten KEYS writes later, and all puts in between
     * would have to be deleted as well — impossible at this delete rate). */
    uint64_t lo = max_s;
    if (next[t] - 1 > lo) lo = next[t] - 1;
    uint64_t first_put = max_s + 1;
    while (!is_put(t, first_put)) first_put++;
    uint64_t hi = first_put - 1;
    if (max_ack[t] > hi || next[t] - 1 > hi)
      fail_msg("seed %llu cycle %d thread %d: newest recovered write is s=%llu (prefix at most "
               "%llu) but s=%llu was acknowledged as synced and s=%llu was durable before",
               (unsigned long long)seed, cycle, t, (unsigned long long)max_s,
               (unsigned long long)hi, (unsigned long long)max_ack[t],
               (unsigned long long)(next[t] - 1));
    if (max_ack[t] > lo) lo = max_ack[t];
    uint64_t match = 0;
    int found = 0;
    for (uint64_t p = lo; p <= hi; p++) {
      int ok = 1;
      for (uint32_t k = 0; k < KEYS && ok; k++) ok = got[t][k] == expected_after(t, k, p);
      if (ok) {
        match = p;
        found = 1;
      }
    }
    if (!found) {
      /* Describe the first key that contradicts the smallest candidate. */
      for (uint32_t k = 0; k < KEYS; k++) {
        uint64_t want = expected_after(t, k, lo);
        if (got[t][k] != want)
          fail_msg("seed %llu cycle %d thread %d: not a prefix state: key %s holds s=%llu, but "
                   "after writes 1..%llu it should hold s=%llu (0 = absent)",
                   (unsigned long long)seed, cycle, t, (key_of(t, k, key), key),
                   (unsigned long long)got[t][k], (unsigned long long)lo,
                   (unsigned long long)want);
      }
      fail_msg("seed %llu cycle %d thread %d: no prefix matches", (unsigned long long)seed,
               cycle, t);
    }
    cs->recovered[t] = match - (next[t] - 1);
    cs->acked[t] = max_ack[t];
    next[t] = match + 1;
  }

  /* (d) a full scan returns exactly the gets' view. */
  par_scanner *s = NULL;
  assert_ok(par_scanner_open(r, NULL, &s));
  assert_ok(par_scanner_seek(s, NULL, 0, PAR_SEEK_FIRST));
  uint64_t seen = 0, present = 0;
  for (int t = 0; t < NT; t++)
    for (uint32_t k = 0; k < KEYS; k++) present += got[t][k] != 0;
  while (par_scanner_valid(s)) {
    const void *kp, *vp;
    size_t kl, vl;
    assert_ok(par_scanner_key(s, &kp, &kl));
    assert_ok(par_scanner_value(s, &vp, &vl));
    int t;
    unsigned k;
    char tmp[32];
    if (kl >= sizeof tmp) fail_msg("scan: unexpected key %s", tu_key_str(kp, kl));
    memcpy(tmp, kp, kl);
    tmp[kl] = 0;
    if (sscanf(tmp, "c%d-%5u", &t, &k) != 2 || t < 0 || t >= NT || k >= KEYS)
      fail_msg("scan: unexpected key %s", tu_key_str(kp, kl));
    uint64_t sv = parse_value(t, k, vp, vl);
    if (sv != got[t][k])
      fail_msg("seed %llu cycle %d: scan shows %s at s=%llu, get showed s=%llu",
               (unsigned long long)seed, cycle, tmp, (unsigned long long)sv,
               (unsigned long long)got[t][k]);
    seen++;
    assert_ok(par_scanner_next(s));
  }
  par_scanner_close(s);
  if (seen != present)
    fail_msg("seed %llu cycle %d: scan returned %llu keys, gets found %llu",
             (unsigned long long)seed, cycle, (unsigned long long)seen,
             (unsigned long long)present);
  free(buf);
}

typedef struct child_args {
  const char *path, *ack_path, *journal, *ckpt_path;
  const uint64_t *start;
} child_args;

static void run_child(void *arg, int ready_fd) {
  child_args *a = arg;
  child_main(a->path, a->ack_path, a->journal, a->ckpt_path, a->start, ready_fd);
}

/* The checkpoint target a killed child left: absent (none begun), empty or
 * refused as incomplete, or a prefix state of each thread's writes that holds every
 * write the source held when this cycle's child opened it and no more than
 * the source recovered (a checkpoint syncs the source's WAL up to its cut).
 * next: as before this cycle; ckpt_next gets P + 1 of the copy. */
static int verify_checkpoint(const char *ckpt_path, uint64_t seed, int cycle, const uint64_t *next,
                             uint64_t *ckpt_next) {
  par_options o = tu_options(256u << 10, 4);
  o.create_if_missing = 0;
  par_volume *vol = NULL;
  par_region *reg = NULL;
  int rc = par_open(ckpt_path, &o, &vol);
  if (rc == PAR_ENOENT) return 0;
  if (rc == PAR_ENOTVOLUME) {
    /* Killed in its first steps, the checkpoint leaves the file it created
     * empty; after them, marked incomplete. */
    if (!strstr(par_last_error(), "incomplete checkpoint") && !strstr(par_last_error(), "is empty"))
      fail_msg("seed %llu cycle %d: the checkpoint target: %s", (unsigned long long)seed, cycle, par_last_error());
    return 0;
  }
  assert_ok(rc);
  assert_ok(par_region_open(vol, "crash", 0, &reg));
  uint64_t none[NT] = {0};
  cycle_stats cs;
  memcpy(ckpt_next, next, sizeof *next * NT);
  verify_recovered(reg, seed, cycle, ckpt_next, none, &cs);
  assert_ok(par_region_close(reg));
  assert_ok(par_close(vol));
  return 1;
}

/* Kill -9 cycles, or power-cut cycles when powerloss is set. */
static void run_cycles(const char *name, int powerloss, int cycles) {
  uint64_t seed = tu_seed(name);
  uint64_t rng = seed;
  char *dir = tu_make_dir(name);
  char *path = tu_path(dir, "crash.px");
  char *ack_path = tu_path(dir, "acks.log");
  char *journal = powerloss ? tu_path(dir, "powerloss.journal") : NULL;
  uint64_t max_segments = 0;
  sync_one_in = powerloss ? 1024 : 16;
  par_sync_every = powerloss ? 50000 : 300;
  durability_ms = powerloss ? 2000 : 100;
  uint64_t next[NT];
  for (int t = 0; t < NT; t++) next[t] = 1;

  char *ckpt_path = powerloss ? NULL : tu_path(dir, "ckpt.px");
  int ckpt_opened = 0;
  for (int cycle = 0; cycle < cycles; cycle++) {
    uint64_t delay = 10 + tu_rand_range(&rng, 491);
    if (ckpt_path) unlink(ckpt_path); /* a target left by an earlier cycle holds less */
    budget_mib = cycle % 2;
    child_args ca = {path, ack_path, journal, ckpt_path, next};
    powerloss_stats ps;
    tu_kill_cycle(seed, cycle, run_child, &ca, delay, path, journal, tu_mix64(rng++), &ps);
    char cut[160] = "";
    if (powerloss)
      snprintf(cut, sizeof cut, "; power cut over %llu unsynced writes: %llu sectors, %llu back "
               "to durable, %llu newest", (unsigned long long)ps.unsynced_writes,
               (unsigned long long)ps.sectors, (unsigned long long)ps.sectors_durable,
               (unsigned long long)ps.sectors_newest);
    uint64_t max_ack[NT];
    read_acks(ack_path, max_ack);
    par_options o = tu_options(256u << 10, 4);
    o.create_if_missing = 0;
    o.sort_large_values = 1; /* the replay's merges copy too */
    par_volume *vol = NULL;
    par_region *reg = NULL;
    assert_ok(par_open(path, &o, &vol));
    assert_ok(par_region_open(vol, "crash", 0, &reg));
    uint64_t ckpt_next[NT];
    int ckpt = ckpt_path && verify_checkpoint(ckpt_path, seed, cycle, next, ckpt_next);
    cycle_stats cs;
    verify_recovered(reg, seed, cycle, next, max_ack, &cs);
    for (int t = 0; ckpt && t < NT; t++)
      if (ckpt_next[t] > next[t])
        fail_msg("seed %llu cycle %d thread %d: the checkpoint holds writes up to s=%llu, the source only up to %llu",
                 (unsigned long long)seed, cycle, t, (unsigned long long)ckpt_next[t] - 1,
                 (unsigned long long)next[t] - 1);
    ckpt_opened += ckpt;
    par_stats st;
    assert_ok(par_region_stats(reg, &st));
    par_volume_stats vs;
    assert_ok(par_volume_stats_get(vol, &vs));
    fprintf(stderr,
            "cycle %2d: killed after %3llu ms; recovered %llu + %llu new writes (synced up to "
            "s=%llu/%llu); levels %u; %llu segments in use (WAL %llu, large log %llu with %llu KiB "
            "garbage, medium %llu)%s\n",
            cycle, (unsigned long long)delay, (unsigned long long)cs.recovered[0],
            (unsigned long long)cs.recovered[1], (unsigned long long)cs.acked[0],
            (unsigned long long)cs.acked[1], st.levels, (unsigned long long)vs.segments_used,
            (unsigned long long)st.wal_segments, (unsigned long long)st.large_log_segments,
            (unsigned long long)st.large_log_garbage_bytes >> 10, (unsigned long long)st.medium_log_segments,
            cut);
    /* The live data is at most KEYS pairs per thread of < 21 KB: about 80 MiB
     * (40 segments) however long the run. Levels, logs being collected and a
     * compaction's spare copy may take a few times that; a leak grows without
     * bound across cycles. */
    if (vs.segments_used > max_segments) max_segments = vs.segments_used;
    if (vs.segments_used > 48)
      fail_msg("seed %llu cycle %d: %llu segments in use for at most ~40 segments of live data: "
               "space is leaking", (unsigned long long)seed, cycle,
               (unsigned long long)vs.segments_used);
    assert_ok(par_region_close(reg));
    assert_ok(par_close(vol));
  }
  fprintf(stderr, "%s: %d cycles, at most %llu segments in use%s", name, cycles, (unsigned long long)max_segments,
          ckpt_path ? "" : "\n");
  if (ckpt_path) fprintf(stderr, "; %d checkpoint targets opened (the others absent or incomplete)\n", ckpt_opened);
  free(ckpt_path);
  tu_rm_rf(dir);
  free(dir);
  free(path);
  free(ack_path);
  free(journal);
}

static void test_crash_recovery(void **state) {
  (void)state;
  run_cycles("crash", 0, (int)tu_env_u64("PAR_CRASH_CYCLES", 20));
}

static void test_powerloss_recovery(void **state) {
  (void)state;
  run_cycles("powerloss", 1, (int)tu_env_u64("PAR_POWERLOSS_CYCLES", 20));
}

int main(void) {
  /* Small volumes release free segments too (holes punched after merges
   * and GC), so that a live segment released by mistake reads as zeros. */
  segalloc_set_min_floor(0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crash_recovery),
      cmocka_unit_test(test_powerloss_recovery),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
