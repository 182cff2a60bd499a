/*
 * test_gc_kill.c — "after kills at random moments, every byte of the large
 * log is a live value, or counted as garbage, or padding": no space leaks.
 *
 * A kill can cut a write between the large log and its WAL record, a run
 * between its write and its listing, a head between its last value and the
 * WAL block naming it; unless the next open counts what nothing will ever
 * point at, those bytes stay for good, and a segment holding them never
 * reaches the GC threshold. A bound on the volume's size notices such a leak
 * only once it has grown for hundreds of kills (the Java kill loop's final
 * check did, after 2,000); this test checks the accounting exactly, segment
 * by segment, after every kill.
 *
 * Each cycle forks a child that opens the volume and runs the Java kill
 * loop's workload (tests/.../KillWorkload.java: 4 threads, small, medium,
 * large and, one put in a thousand, 2-3 MiB values; deletes; batches of 8;
 * PAR_SYNC on one write in 40; a 1 MiB L0, growth factor 2, two compaction
 * workers, a 5% GC threshold) until the parent kills it: in one cycle in
 * six 0-30 ms after it began to open the volume (often while it recovers),
 * otherwise 0-1.8 s after it started writing. In half the cycles the parent then recovers the
 * volume itself (open and close); in the others the next child does, so that
 * crashes land on crashed volumes.
 *
 * Two values outside the workload's keys, a run among them, stay live
 * throughout, so every audit reads a run.
 *
 * The audit runs on a copy: it opens it (a recovery), merges everything
 * (par_compact: every dead version's garbage is counted), reopens it with GC
 * held back, and reads every closed large-log segment: the bytes of its
 * records that no key points at, plus its unwritten tail, must be counted in
 * its garbage; a run nothing points at must be counted at all.
 *
 * Incarnations are reserved 8 at a time here (1 024 otherwise), so that the
 * kills also land around the reservation's extensions.
 *
 * Environment: PAR_SEED, PAR_GC_KILL_CYCLES (default 10).
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "api/internal.h"
#include "io/file.h"
#include "util/coding.h"

#define NT 4
#define KEYS 4096
#define BLOCK 8
#define SEG PAR_SEGMENT_SIZE
#define REGION "kill"

static uint64_t run_seed;

static par_options kill_options(void) {
  par_options o;
  par_options_init(&o);
  o.l0_size = 1u << 20;
  o.growth_factor = 2;
  o.compaction_threads = 2;
  o.gc_threshold_pct = 5;
  o.durability_interval_ms = 50;
  o.sort_large_values = 1; /* runs' segments, copies and the replay's copies are audited too */
  return o;
}

/* ---- the workload (KillWorkload.java's) ---- */

static int in_batch(int t, uint64_t seq) {
  uint64_t block = (seq - 1) / BLOCK;
  return tu_mix64(run_seed * 31 + (uint64_t)t * 0x51 + block * 0x2545F4914F6CDD1Dull) % 10 == 0;
}

typedef struct op {
  char key[16];
  size_t key_len, value_len;
  int del, sync;
} op;

static void op_of(int t, uint64_t seq, op *o) {
  uint64_t h = tu_mix64(run_seed ^ tu_mix64((uint64_t)t * 0x9E3779B97F4A7C15ull + seq));
  /* A quarter of the ops go to 64 hot keys: updates, deletes and garbage. */
  int k = (h & 3) == 0 ? (int)((h >> 2) & 63) : (int)((h >> 8) % KEYS);
  o->key_len = (size_t)snprintf(o->key, sizeof o->key, "t%d/%04d", t, k);
  int pick = (int)((h >> 20) % 1000);
  uint64_t r = (h >> 32) & 0xffff;
  o->del = pick < 120;
  o->sync = (h >> 52) % 40 == 0;
  if (o->del) o->value_len = 0;
  else if (pick < 450) o->value_len = 24 + r % (119 - o->key_len - 24);    /* small */
  else if (pick < 700) o->value_len = 120 - o->key_len + r % (1023 - 120); /* medium */
  else if (pick < 999 || in_batch(t, seq)) o->value_len = 1024 + r % 12000; /* large */
  else o->value_len = (2u << 20) + r % (1u << 20);                        /* a run */
}

#define VALUE_MAX (3u << 20)

static par_region *child_region;

static void *child_writer(void *arg) {
  int t = (int)(intptr_t)arg;
  uint8_t *val = malloc(VALUE_MAX);
  par_batch *b;
  if (!val || par_batch_create(&b)) _exit(8);
  memset(val, 0x5a, VALUE_MAX);
  /* Any start will do: the audit checks space, not contents. */
  uint64_t seq = 1 + tu_mix64(run_seed + (uint64_t)t + (uint64_t)getpid()) % 1000000;
  for (;; seq++) {
    op o;
    op_of(t, seq, &o);
    int rc;
    if (in_batch(t, seq)) {
      rc = o.del ? par_batch_delete(b, o.key, o.key_len) : par_batch_put(b, o.key, o.key_len, val, o.value_len);
      if (!rc && seq % BLOCK == 0) {
        rc = par_write(child_region, b, o.sync ? PAR_SYNC : 0);
        par_batch_clear(b);
      }
    } else {
      unsigned flags = o.sync ? PAR_SYNC : 0;
      rc = o.del ? par_delete(child_region, o.key, o.key_len, flags)
                 : par_put(child_region, o.key, o.key_len, val, o.value_len, flags);
    }
    if (rc) {
      fprintf(stderr, "gc_kill child: write: %s\n", par_last_error());
      _exit(6);
    }
  }
  return NULL;
}

typedef struct child_arg {
  const char *path;
  int ready_before_open; /* to be killed while it recovers */
} child_arg;

static void child(void *arg, int ready_fd) {
  const child_arg *a = arg;
  par_options o = kill_options();
  par_volume *v;
  if (a->ready_before_open && write(ready_fd, "R", 1) != 1) _exit(5);
  if (par_open(a->path, &o, &v) || par_region_open(v, REGION, 1, &child_region)) {
    fprintf(stderr, "gc_kill child: open: %s\n", par_last_error());
    _exit(3);
  }
  pthread_t th[NT];
  for (int t = 0; t < NT; t++)
    if (pthread_create(&th[t], NULL, child_writer, (void *)(intptr_t)t)) _exit(4);
  if (!a->ready_before_open && write(ready_fd, "R", 1) != 1) _exit(5);
  for (;;) pause();
}

/* Runs a child and kills it; returns 1 if it was killed while recovering. */
static int kill_child(const char *path, uint64_t *rng, int cycle) {
  child_arg a = {path, tu_rand_range(rng, 6) == 0};
  uint64_t delay_ms = a.ready_before_open ? tu_rand_range(rng, 30)
                      : tu_rand_range(rng, 2)  ? tu_rand_range(rng, 600)
                                               : 600 + tu_rand_range(rng, 1200);
  tu_kill_cycle(run_seed, cycle, child, &a, delay_ms, path, NULL, 0, NULL);
  return a.ready_before_open;
}

/* ---- the audit ---- */

/* Whether the newest version of key points at p. */
static int points_at(par_region *r, const view *w, uint64_t lsn, const void *key, size_t key_len, vptr p) {
  tree_entry e;
  int rc = region_lookup(r, w, lsn, key, key_len, NULL, &e);
  if (rc != PAR_OK && rc != PAR_NOT_FOUND) fail_msg("lookup: %s", par_last_error());
  return rc == PAR_OK && e.cat == CAT_LARGE && e.value_len == VPTR_SIZE && vptr_equal(vptr_decode(e.value), p);
}

typedef struct audit_totals {
  uint32_t segments, runs;
  uint64_t live, uncounted;
} audit_totals;

/* Where key points now, for a leak's report. */
static void describe_key(par_region *r, const view *w, uint64_t lsn, const void *key, size_t key_len, char *out,
                         size_t cap) {
  tree_entry e;
  int rc = region_lookup(r, w, lsn, key, key_len, NULL, &e);
  if (rc == PAR_NOT_FOUND) snprintf(out, cap, "absent");
  else if (rc) snprintf(out, cap, "lookup failed");
  else if (e.cat != CAT_LARGE || e.value_len != VPTR_SIZE) snprintf(out, cap, "in place (category %d)", e.cat);
  else {
    vptr p = vptr_decode(e.value);
    snprintf(out, cap, "at %u:%u (incarnation %u)", p.seg, p.off, p.inc);
  }
}

/* The records of a leaking segment that nobody points at: their LSNs tell
 * a write the crash lost from one the levels dropped without counting. */
static void report_dead(par_region *r, const view *w, uint64_t lsn, const vlog_seg *s, const uint8_t *buf) {
  uint32_t off = 0, seed = vlog_seed(r->id, s->inc), shown = 0;
  vlog_record rec;
  for (; vlog_next(buf, &off, seed, &rec) == PAR_OK; off += rec.size) {
    if (points_at(r, w, lsn, rec.key, rec.key_len, (vptr){s->seg, off, s->inc, rec.size})) continue;
    char now[64];
    describe_key(r, w, lsn, rec.key, rec.key_len, now, sizeof now);
    if (shown++ < 12)
      fprintf(stderr, "  dead at %u: LSN %llu, key %.*s, %u bytes; the key is %s\n", off,
              (unsigned long long)rec.lsn, (int)rec.key_len, (const char *)rec.key, rec.size, now);
  }
  pthread_mutex_lock(&r->vol->meta_mu);
  uint64_t covered = catalog_find_id(&r->vol->cat, r->id)->covered_lsn;
  pthread_mutex_unlock(&r->vol->meta_mu);
  fprintf(stderr, "  %u dead records; the levels cover LSNs to %llu, the region's last is %llu\n", shown,
          (unsigned long long)covered, (unsigned long long)lsn);
}

/* A single segment: its records nobody points at, and its tail once the log
 * closed it, are garbage; padding between flushes is never counted. */
static uint64_t audit_segment(par_region *r, const view *w, uint64_t lsn, const vlog_seg *s, uint8_t *buf,
                              audit_totals *t) {
  assert_ok(file_read(&r->vol->file, buf, SEG, seg_offset(s->seg)));
  uint32_t off = 0, seed = vlog_seed(r->id, s->inc);
  uint64_t dead = 0;
  vlog_record rec;
  for (; vlog_next(buf, &off, seed, &rec) == PAR_OK; off += rec.size) {
    if (points_at(r, w, lsn, rec.key, rec.key_len, (vptr){s->seg, off, s->inc, rec.size})) t->live += rec.size;
    else dead += rec.size;
  }
  uint64_t should = dead + (s->open ? 0 : SEG - ALIGN_UP(off, PAR_BLOCK));
  if (s->garbage >= should) return 0;
  report_dead(r, w, lsn, s, buf);
  return should - s->garbage;
}

/* A run holds one value: nobody pointing at it, it must count some garbage
 * (any makes it collectable whole). */
static uint64_t audit_run(par_region *r, const view *w, uint64_t lsn, const vlog_seg *s, uint8_t *buf,
                          audit_totals *t) {
  assert_ok(file_read(&r->vol->file, buf, PAR_BLOCK, seg_offset(s->seg)));
  uint32_t key_len = 0, value_len = 0;
  const uint8_t *p = get_varint32(buf + VLOG_HDR, buf + PAR_BLOCK, &key_len);
  if (p) p = get_varint32(p, buf + PAR_BLOCK, &value_len);
  vptr at = {s->seg, 0, s->inc, dec32(buf + 4) + VLOG_HDR};
  int live = p && key_len <= PAR_BLOCK - (size_t)(p - buf) && points_at(r, w, lsn, p, key_len, at);
  t->runs++;
  if (live) t->live += at.size;
  return live || s->garbage ? 0 : (uint64_t)SEG * s->nsegs;
}

/* The volume at path and its region, opened in the parent (a recovery when
 * a child was killed). */
static par_region *open_region(const char *path, const par_options *o, int create, par_volume **v) {
  par_region *r;
  assert_ok(par_open(path, o, v));
  assert_ok(par_region_open(*v, REGION, create, &r));
  return r;
}

static void close_region(par_volume *v, par_region *r) {
  assert_ok(par_region_close(r));
  assert_ok(par_close(v));
}

static void audit(const char *copy, int cycle) {
  par_options o = kill_options();
  o.create_if_missing = 0;
  par_volume *v;
  par_region *r = open_region(copy, &o, 0, &v);
  assert_ok(par_compact(r));
  close_region(v, r);
  o.gc_threshold_pct = 100; /* GC would collect the segments the audit reads */
  r = open_region(copy, &o, 0, &v);

  pthread_mutex_lock(&r->vol->meta_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  uint32_t n = d ? d->nvlog : 0;
  uint32_t reserved = d ? (d->inc_reserved > d->next_inc ? d->inc_reserved : d->next_inc) : 0;
  vlog_seg *segs = malloc((n + 1) * sizeof *segs);
  assert_non_null(segs);
  if (n) memcpy(segs, d->vlog, n * sizeof *segs);
  pthread_mutex_unlock(&r->vol->meta_mu);
  /* Incarnations are unique: a pointer names one segment (a replay's
   * sorted runs once took incarnations before the region's counter was
   * set, and garbage went to another segment of the same number), and
   * within the reservation, past which the next session takes them. */
  for (uint32_t i = 0; i < n; i++) {
    if (segs[i].inc > reserved)
      fail_msg("cycle %d: segment %u has incarnation %u, past the reservation (%u)", cycle, segs[i].seg,
               segs[i].inc, reserved);
    for (uint32_t j = i + 1; j < n; j++)
      if (segs[i].inc == segs[j].inc)
        fail_msg("cycle %d: segments %u and %u have incarnation %u", cycle, segs[i].seg, segs[j].seg, segs[i].inc);
  }

  uint8_t *buf = file_buf_alloc(SEG);
  assert_non_null(buf);
  uint64_t lsn;
  view *w = region_acquire_view(r, &lsn);
  audit_totals t = {0};
  for (uint32_t i = 0; i < n; i++) {
    const vlog_seg *s = &segs[i];
    uint64_t uncounted = s->nsegs > 1 ? audit_run(r, w, lsn, s, buf, &t) : audit_segment(r, w, lsn, s, buf, &t);
    t.segments += s->nsegs;
    t.uncounted += uncounted;
    if (uncounted)
      fprintf(stderr, "gc_kill cycle %d: %s at %u (incarnation %u): %llu bytes nothing points at are not counted "
              "as garbage (%llu are)\n", cycle, s->nsegs > 1 ? "run" : "segment", s->seg, s->inc,
              (unsigned long long)uncounted, (unsigned long long)s->garbage);
  }
  view_unref(w);
  free(buf);
  free(segs);
  if (!t.runs) fail_msg("cycle %d: the audit found no run, not even base/run's", cycle);
  fprintf(stderr, "gc_kill cycle %d: large log %u segments (%u runs), %llu KiB live, %llu KiB uncounted\n", cycle,
          t.segments, t.runs, (unsigned long long)(t.live >> 10), (unsigned long long)(t.uncounted >> 10));
  if (t.uncounted)
    fail_msg("seed %llu cycle %d: the large log leaks %llu bytes (see above)", (unsigned long long)run_seed, cycle,
             (unsigned long long)t.uncounted);
  close_region(v, r);
}

/* Values outside the workload's keys, live for good: every audit reads a
 * run, however short the cycles before it. */
static void write_base(const char *path) {
  par_options o = kill_options();
  par_volume *v;
  par_region *r = open_region(path, &o, 1, &v);
  uint8_t *val = malloc(VALUE_MAX);
  assert_non_null(val);
  tu_fill_pattern(val, VALUE_MAX, 1);
  assert_ok(par_put(r, "base/run", 8, val, VALUE_MAX, 0));
  assert_ok(par_put(r, "base/large", 10, val, 8192, PAR_SYNC));
  free(val);
  close_region(v, r);
}

static void test_gc_kill(void **state) {
  (void)state;
  run_seed = tu_seed("gc_kill");
  uint64_t rng = run_seed;
  int cycles = (int)tu_env_u64("PAR_GC_KILL_CYCLES", 10);
  char *dir = tu_make_dir("gc_kill");
  char *path = tu_path(dir, "kill.px"), *copy = tu_path(dir, "audit.px");
  write_base(path);
  for (int cycle = 0; cycle < cycles; cycle++) {
    int recovering = kill_child(path, &rng, cycle);
    if (tu_rand_range(&rng, 2)) {
      par_options o = kill_options();
      par_volume *v;
      par_region *r = open_region(path, &o, 0, &v); /* the parent recovers the volume */
      close_region(v, r);
    }
    if (recovering) fprintf(stderr, "gc_kill cycle %d: killed while recovering\n", cycle);
    tu_copy_file(path, copy);
    audit(copy, cycle);
    unlink(copy);
  }
  tu_rm_rf(dir);
  free(copy);
  free(path);
  free(dir);
}

int main(void) {
  /* Small volumes release free segments too (holes punched after merges
   * and GC), so that a live segment released by mistake reads as zeros. */
  segalloc_set_min_floor(0);
  /* Reservations of a few incarnations: sessions extend them often, in
   * listings and in takes, between the kills. */
  inc_reservation = 8;
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_gc_kill)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
