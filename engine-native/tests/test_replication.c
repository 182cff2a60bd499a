/*
 * test_replication.c — the replication hooks of replication.h, between two
 * volumes in one process (a primary's and a backup's):
 *  - the log stream read from LSN 1 and from the middle, large values read
 *    back, re-delivery skipped, gaps and malformed bytes refused;
 *  - applies without PAR_SYNC sync nothing, one with it and a promotion
 *    make the log copy durable;
 *  - a build-index and a send-index backup applying it keep the primary's
 *    LSNs, survive a close (crash-like: no promotion) and, promoted, hold
 *    exactly the primary's state;
 *  - send index: every layout the primary's compactions build, installed on
 *    a backup that never compacts (counter 0), full scan equal after
 *    promotion; a fresh backup that starts from the levels (the log copy
 *    restarts after them); a mixed placement and a bad layout refused;
 *  - a log cursor pins the WAL it has not read (flushes covering it free
 *    nothing under it), releases it as it reads and at its close, and past
 *    its limit is released with PAR_ENOENT;
 *  - send index with range deletes: range tombstones travel with their
 *    trees (one of range tombstones alone included), promotion after range
 *    deletes in the levels and in the log only;
 *  - shipping interleavings, in place and hybrid: log chunks and installs
 *    (begin, segments, commit) mixed at random as the replication module's
 *    two threads per backup produce them, a promotion mid-stream, the new
 *    primary shipping to the other backup and to a new one; every promoted
 *    copy holds exactly the writes up to its log's end;
 *  - Talos's value log: large values written into the backup's mirror as
 *    the log arrives, so that installs copy none of them; the log copy's
 *    pointers into the mirror across a close, a mirror rebuilt at a reopen,
 *    and across a simulated power cut (no pointer durable before its value);
 *  - a promotion whose log copy is damaged fails and leaves a send-index
 *    backup (a retry fails again rather than serving without the log);
 *  - a medium-log segment is copied once while the backup's levels point
 *    into it, however many installed trees do; an installed segment is
 *    written as far as its nodes or records reach;
 *  - a cursor set to ship written records ships writes made without
 *    PAR_SYNC before they are durable, and a kill of the primary's process
 *    right after loses none of them; a power cut keeps every write up to
 *    the last sync after such pushes, and the rest as a clean prefix;
 *  - state transfer by snapshot: a build-index backup of a hybrid primary
 *    (large values, one larger than a segment) loaded from a snapshot,
 *    rebased to its LSN, fed the log after it, reopened and promoted.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <parallax/replication.h>

#include "api/internal.h"
#include "io/fault.h"
#include "io/powerloss.h"

typedef struct node {
  char *dir;
  par_options opts;
  par_volume *vol;
  par_region *reg;
  int gc_off; /* opened with the large-log GC held off */
  int no_sorted_runs; /* merges leave large values where they are */
  uint64_t l0_size;   /* 0: 1 MiB */
  uint32_t durability_ms; /* 0: the default */
} node;

static void node_open(node *n, const char *name, uint32_t placement) {
  if (!n->dir) n->dir = tu_make_dir(name);
  n->opts = tu_options(n->l0_size ? n->l0_size : 1u << 20, 4);
  n->opts.placement = placement;
  if (n->gc_off) n->opts.gc_threshold_pct = 100; /* only segments wholly garbage: no relocation */
  if (n->no_sorted_runs) n->opts.sort_large_values = 0;
  if (n->durability_ms) n->opts.durability_interval_ms = n->durability_ms;
  char *path = tu_path(n->dir, "volume.px");
  assert_ok(par_open(path, &n->opts, &n->vol));
  free(path);
  assert_ok(par_region_open(n->vol, "r", 1, &n->reg));
}

static void node_close(node *n) {
  assert_ok(par_region_close(n->reg));
  assert_ok(par_close(n->vol));
  n->reg = NULL;
  n->vol = NULL;
}

static void node_free(node *n) {
  if (n->vol) node_close(n);
  tu_rm_rf(n->dir);
  free(n->dir);
}

static uint64_t stat_of(par_region *r, int which) {
  uint64_t s[PAR_REPL_STAT_COUNT];
  assert_int_equal(par_repl_stats(r, s, PAR_REPL_STAT_COUNT), PAR_REPL_STAT_COUNT);
  return s[which];
}

static size_t ship_index(par_region *p, par_region *b);

/* Reads everything durable from *c and applies it to b; returns the bytes
 * shipped. When the primary p's log no longer holds the next LSN (a
 * compaction covered it) and p is given, ships p's levels first and goes
 * on from the backup's log, as a replication layer does. */
static size_t ship_log(par_region *p, par_repl_cursor **c, par_region *b) {
  size_t cap = 64 << 10, total = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    size_t len;
    uint64_t last, applied;
    int rc = par_repl_cursor_read(*c, buf, cap, &len, &last);
    if (rc == PAR_ETOOBIG) {
      cap = len;
      buf = realloc(buf, cap);
      continue;
    }
    if (rc == PAR_ENOENT && p) {
      ship_index(p, b);
      par_repl_cursor_close(*c);
      assert_ok(par_repl_cursor_open(p, stat_of(b, PAR_REPL_STAT_LOG_LSN) + 1, c));
      continue;
    }
    assert_ok(rc);
    if (!len) break;
    assert_ok(par_repl_apply(b, buf, len, 0, &applied));
    assert_true(applied >= last);
    total += len;
  }
  free(buf);
  return total;
}

/* Bytes of segments exported for installs so far, as sent: what each
 * export said an install needs, not the whole segment. */
static uint64_t sent_bytes;

/* Exports segment seg and installs it in, passing only the bytes the export
 * says the install needs, in a buffer of exactly that size: under ASan a
 * read past them fails the test. */
static void copy_segment(par_repl_export *x, par_repl_install *in, uint32_t seg, uint8_t *data) {
  size_t len = 0;
  assert_ok(par_repl_export_segment(x, seg, data, &len));
  assert_true(len > 0 && len <= PAR_SEGMENT_SIZE && len % 4096 == 0);
  uint8_t *sent = malloc(len);
  assert_non_null(sent);
  memcpy(sent, data, len);
  assert_ok(par_repl_install_segment(in, seg, sent, len));
  free(sent);
  sent_bytes += len;
}

/* Opens an export of p's levels (*x); returns its layout (malloc'd, *len bytes). */
static uint8_t *export_layout(par_region *p, par_repl_export **x, size_t *len) {
  assert_ok(par_repl_export_open(p, x));
  assert_par(par_repl_export_layout(*x, NULL, 0, len), PAR_ETOOBIG);
  uint8_t *layout = malloc(*len);
  assert_ok(par_repl_export_layout(*x, layout, *len, len));
  return layout;
}

/* The segments install in needs (*segs, malloc'd), and their count. */
static size_t needed_segments(par_repl_install *in, uint32_t **segs) {
  size_t n = par_repl_install_needed(in, NULL, 0);
  *segs = calloc(n + 1, sizeof **segs);
  assert_int_equal(par_repl_install_needed(in, *segs, n), n);
  return n;
}

/* Begins an install of p's levels on b: *x and *in, the segments needed. */
static size_t begin_install(par_region *p, par_region *b, par_repl_export **x, par_repl_install **in,
                            uint32_t **segs) {
  size_t len;
  uint8_t *layout = export_layout(p, x, &len);
  assert_ok(par_repl_install_begin(b, layout, len, in));
  free(layout);
  return needed_segments(*in, segs);
}

/* Copies the n segments in needs from x, commits, closes both, frees segs. */
static void finish_install(par_repl_export *x, par_repl_install *in, uint32_t *segs, size_t n) {
  uint8_t *data = malloc(PAR_SEGMENT_SIZE);
  for (size_t i = 0; i < n; i++) copy_segment(x, in, segs[i], data);
  assert_ok(par_repl_install_commit(in));
  par_repl_install_close(in);
  par_repl_export_close(x);
  free(data);
  free(segs);
}

/* Ships the primary's current levels to backup b; returns the segments copied. */
static size_t ship_index(par_region *p, par_region *b) {
  par_repl_export *x;
  par_repl_install *in;
  uint32_t *segs;
  size_t n = begin_install(p, b, &x, &in, &segs);
  finish_install(x, in, segs, n);
  return n;
}

/* Syncs the primary p and ships its log to b, then, when a compaction
 * completed since *seen, its levels (counted in *installs). Returns the
 * segments the install copied. */
static size_t ship_round(par_region *p, par_repl_cursor **c, par_region *b, uint64_t *seen, int *installs) {
  assert_ok(par_sync(p));
  ship_log(p, c, b); /* the log first: levels never get ahead of it */
  par_stats st;
  assert_ok(par_region_stats(p, &st));
  if (st.compactions == *seen) return 0;
  *seen = st.compactions;
  (*installs)++;
  return ship_index(p, b);
}

static void put_model(par_region *r, tu_map *m, uint64_t *rng, int i, size_t vmax) {
  char key[32];
  int kl = snprintf(key, sizeof key, "key%06d", (int)tu_rand_range(rng, 4000));
  size_t vl = tu_rand_range(rng, vmax);
  uint8_t *v = malloc(vl + 1);
  tu_fill_pattern(v, vl, (uint64_t)i);
  if (tu_rand_range(rng, 10) == 0) {
    assert_ok(par_delete(r, key, (size_t)kl, 0));
    tu_map_del(m, key, (size_t)kl);
  } else {
    assert_ok(par_put(r, key, (size_t)kl, v, vl, 0));
    tu_map_put(m, key, (size_t)kl, v, vl);
  }
  free(v);
}

static void verify(par_region *r, const tu_map *m) {
  char err[512];
  if (tu_verify_region(r, NULL, m, err, sizeof err)) fail_msg("%s", err);
}

/* Build-index and send-index backups fed by the log stream only. */
static void test_log_stream(void **state) {
  (void)state;
  node p = {0}, bi = {0}, si = {0};
  node_open(&p, "repl_log_p", PAR_PLACEMENT_HYBRID);
  node_open(&bi, "repl_log_bi", PAR_PLACEMENT_HYBRID);
  node_open(&si, "repl_log_si", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(bi.reg, PAR_REPL_BACKUP_BUILD_INDEX));
  assert_ok(par_repl_set_role(si.reg, PAR_REPL_BACKUP_SEND_INDEX));
  assert_par(par_repl_set_role(bi.reg, PAR_REPL_BACKUP_SEND_INDEX), PAR_EINVAL);
  tu_map m;
  tu_map_init(&m);
  uint64_t rng = tu_seed("repl_log");
  /* values up to 3 KiB: large ones go to the primary's large log */
  for (int i = 0; i < 3000; i++) put_model(p.reg, &m, &rng, i, 3000);
  par_batch *b;
  assert_ok(par_batch_create(&b));
  assert_ok(par_batch_put(b, "batch-a", 7, "1", 1));
  assert_ok(par_batch_delete(b, "key000001", 9));
  assert_ok(par_write(p.reg, b, PAR_SYNC));
  tu_map_put(&m, "batch-a", 7, "1", 1);
  tu_map_del(&m, "key000001", 9);
  par_batch_destroy(b);
  uint64_t last = stat_of(p.reg, PAR_REPL_STAT_LOG_LSN);
  assert_int_equal(last, 3002);

  par_repl_cursor *c1, *c2;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c1));
  assert_ok(par_repl_cursor_open(p.reg, 1, &c2));
  ship_log(NULL, &c1, bi.reg);
  ship_log(NULL, &c2, si.reg);
  /* (bi runs as a primary again until told otherwise: its large-log GC may
   * take LSNs of its own; its contents are checked below.) */
  assert_true(stat_of(bi.reg, PAR_REPL_STAT_LOG_LSN) >= last);
  assert_int_equal(stat_of(si.reg, PAR_REPL_STAT_LOG_LSN), last);
  assert_int_equal(stat_of(si.reg, PAR_REPL_STAT_L0_LSN), 0); /* the log copy only */
  assert_int_equal(stat_of(si.reg, PAR_REPL_STAT_RECORDS_APPLIED), 3001);

  /* Re-delivery is skipped; a gap, a primary and malformed bytes are refused. */
  par_repl_cursor *again;
  assert_ok(par_repl_cursor_open(p.reg, 2000, &again));
  ship_log(NULL, &again, si.reg);
  par_repl_cursor_close(again);
  assert_int_equal(stat_of(si.reg, PAR_REPL_STAT_RECORDS_SKIPPED), 1002);
  uint8_t rec[64] = {0}, *q = rec;
  uint64_t applied;
  /* lsn 5000, 1 op: put "k" = "" */
  q[0] = 0x88, q[1] = 0x13, q[8] = 1, q[12] = 4, q[16] = 1, q[17] = 1, q[18] = 0, q[19] = 'k';
  assert_par(par_repl_apply(si.reg, rec, 20, 0, &applied), PAR_EINVAL);
  assert_par(par_repl_apply(p.reg, rec, 20, 0, &applied), PAR_EINVAL);
  q[16] = 9; /* no such op */
  assert_par(par_repl_apply(si.reg, rec, 20, 0, &applied), PAR_ECORRUPT);
  q[16] = 1, q[12] = 200; /* longer than the bytes */
  assert_par(par_repl_apply(si.reg, rec, 20, 0, &applied), PAR_ECORRUPT);
  assert_par(par_repl_apply(si.reg, rec, 7, 0, &applied), PAR_ECORRUPT);
  assert_par(par_repl_apply(si.reg, rec, 0, PAR_NO_WAL, &applied), PAR_EINVAL); /* PAR_SYNC only */
  assert_int_equal(applied, last);
  /* A large value's place in the primary's large log: a size that is not
   * its record's, a record past the segment's end, the medium log's
   * incarnation. Nothing is applied, nothing placed. */
  uint64_t mirrored = stat_of(si.reg, PAR_REPL_STAT_MIRROR_BYTES);
  const vptr places[] = {{5, 0, 7, 999}, {5, PAR_SEGMENT_SIZE - 10, 7, 20}, {5, 0, MEDIUM_INC, 20}};
  for (size_t i = 0; i < sizeof places / sizeof *places; i++) {
    memset(rec, 0, sizeof rec);
    enc64(rec, last + 1);
    enc32(rec + 8, 1);
    enc32(rec + 12, 21);
    rec[16] = 3, rec[17] = 1, rec[18] = 17, rec[19] = 'k';
    vptr_encode(rec + 20, places[i]);
    rec[36] = 'v';
    assert_par(par_repl_apply(si.reg, rec, 37, 0, &applied), PAR_ECORRUPT);
    assert_int_equal(applied, last);
  }
  assert_int_equal(stat_of(si.reg, PAR_REPL_STAT_MIRROR_BYTES), mirrored);
  assert_true(mirrored > 0); /* the large values went to the mirror as they came */

  /* A send-index backup turned build-index (a state transfer's end): its log copy goes into
   * L0, and records applied later go to L0 too. */
  node sb = {0};
  node_open(&sb, "repl_log_sb", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(sb.reg, PAR_REPL_BACKUP_SEND_INDEX));
  par_repl_cursor *c3;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c3));
  ship_log(NULL, &c3, sb.reg);
  assert_ok(par_repl_set_role(sb.reg, PAR_REPL_BACKUP_BUILD_INDEX));
  assert_int_equal(stat_of(sb.reg, PAR_REPL_STAT_L0_LSN), last);

  /* Writes go on; the cursors follow from where they are. */
  for (int i = 3000; i < 4000; i++) put_model(p.reg, &m, &rng, i, 3000);
  assert_ok(par_sync(p.reg));
  ship_log(NULL, &c1, bi.reg);
  ship_log(NULL, &c2, si.reg);
  ship_log(NULL, &c3, sb.reg);
  par_repl_cursor_close(c3);
  assert_int_equal(stat_of(sb.reg, PAR_REPL_STAT_L0_LSN), stat_of(p.reg, PAR_REPL_STAT_LOG_LSN));
  assert_ok(par_repl_set_role(sb.reg, PAR_REPL_PRIMARY));
  verify(sb.reg, &m);
  node_free(&sb);
  last = stat_of(p.reg, PAR_REPL_STAT_LOG_LSN);
  par_repl_cursor_close(c1);
  par_repl_cursor_close(c2);

  /* The backups' crash: their WALs hold the records, LSNs included. */
  node_close(&bi);
  node_close(&si);
  node_open(&bi, "repl_log_bi", PAR_PLACEMENT_HYBRID);
  node_open(&si, "repl_log_si", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(si.reg, PAR_REPL_BACKUP_SEND_INDEX));
  assert_int_equal(stat_of(si.reg, PAR_REPL_STAT_LOG_LSN), last);
  /* (bi runs as a primary again until told otherwise: its large-log GC may
   * take LSNs of its own; its contents are checked below.) */
  assert_true(stat_of(bi.reg, PAR_REPL_STAT_LOG_LSN) >= last);

  /* Promotion: the same state, and new writes continue the LSNs. */
  assert_ok(par_repl_set_role(si.reg, PAR_REPL_PRIMARY));
  verify(si.reg, &m);
  verify(bi.reg, &m);
  assert_ok(par_put(si.reg, "after", 5, "x", 1, PAR_SYNC));
  assert_int_equal(stat_of(si.reg, PAR_REPL_STAT_LOG_LSN), last + 1);
  tu_map_free(&m);
  node_free(&p);
  node_free(&bi);
  node_free(&si);
}

static par_stats region_stats(par_region *r) {
  par_stats st;
  assert_ok(par_region_stats(r, &st));
  return st;
}

/* A backup holds what it applies without PAR_SYNC as a write without it is
 * held (Talos's backups hold the log in memory and persist it when a
 * segment fills): such applies sync nothing, one with PAR_SYNC makes
 * every record up to it durable, and a promotion syncs the log copy before
 * it replays it. The backup's durability interval is a minute, so nothing
 * else syncs its WAL here. */
static void test_apply_without_sync(void **state) {
  (void)state;
  node p = {0}, s = {.durability_ms = 60000};
  node_open(&p, "repl_hold_p", PAR_PLACEMENT_IN_PLACE);
  node_open(&s, "repl_hold_s", PAR_PLACEMENT_IN_PLACE);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  uint64_t rng = tu_seed("repl_hold");
  for (int i = 0; i < 300; i++) put_model(p.reg, &m, &rng, i, 100);
  assert_ok(par_sync(p.reg));
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  uint64_t before = region_stats(s.reg).wal_syncs, applied = 0, last;
  uint8_t buf[256];
  size_t len;
  int applies = 0;
  while (par_repl_cursor_read(c, buf, sizeof buf, &len, &last) == PAR_OK && len) {
    assert_ok(par_repl_apply(s.reg, buf, len, 0, &applied));
    assert_int_equal(applied, last);
    applies++;
  }
  assert_true(applies >= 60); /* chunks of 1-3 records: 9-byte keys, values up to 100 bytes */
  assert_int_equal(applied, 300);
  assert_int_equal(region_stats(s.reg).wal_syncs, before);
  /* One apply with PAR_SYNC: everything up to it is durable. */
  put_model(p.reg, &m, &rng, 300, 100);
  assert_ok(par_sync(p.reg));
  assert_ok(par_repl_cursor_read(c, buf, sizeof buf, &len, &last));
  assert_ok(par_repl_apply(s.reg, buf, len, PAR_SYNC, &applied));
  assert_int_equal(applied, 301);
  assert_true(region_stats(s.reg).wal_syncs > before);
  /* More without it, then the promotion: it holds them all. */
  for (int i = 301; i < 400; i++) put_model(p.reg, &m, &rng, i, 100);
  assert_ok(par_sync(p.reg));
  before = region_stats(s.reg).wal_syncs;
  ship_log(NULL, &c, s.reg);
  par_repl_cursor_close(c);
  assert_int_equal(region_stats(s.reg).wal_syncs, before);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  assert_true(region_stats(s.reg).wal_syncs > before);
  assert_int_equal(stat_of(s.reg, PAR_REPL_STAT_LOG_LSN), 400);
  verify(s.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
}

/* Writes n records of about 1 KiB (about n / 2000 WAL segments), synced. */
static void load(par_region *r, tu_map *m, uint64_t *rng, int from, int n) {
  for (int i = from; i < from + n; i++) put_model(r, m, rng, i, 2000);
  assert_ok(par_sync(r));
}

/* A log cursor pins the WAL it still needs (a replication slot): flushes
 * that cover LSNs it has not read do not free their segments. Without the
 * pin its next read failed (PAR_ENOENT, "trimmed"), and a reader racing a
 * compaction saw the same now and then. The pin goes with the cursor's
 * advance and close; a cursor beyond its limit is released instead, and
 * its reads fail clearly. */
static void test_cursor_pins_the_log(void **state) {
  (void)state;
  node p = {0}, s = {0};
  node_open(&p, "repl_pin_p", PAR_PLACEMENT_IN_PLACE);
  node_open(&s, "repl_pin_s", PAR_PLACEMENT_IN_PLACE);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  uint64_t rng = tu_seed("repl_pin");
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  load(p.reg, &m, &rng, 0, 2000);
  /* One small chunk: the cursor now reads inside the first WAL segment. */
  uint8_t buf[4096];
  size_t len;
  uint64_t last, applied;
  assert_ok(par_repl_cursor_read(c, buf, sizeof buf, &len, &last));
  assert_true(len > 0);
  assert_ok(par_repl_apply(s.reg, buf, len, PAR_SYNC, &applied));
  /* Flushes cover everything, twice (the second reuses freed segments). */
  load(p.reg, &m, &rng, 2000, 6000);
  assert_ok(par_flush(p.reg));
  load(p.reg, &m, &rng, 8000, 4000);
  assert_ok(par_flush(p.reg));
  uint64_t kept = region_stats(p.reg).wal_segments;
  ship_log(NULL, &c, s.reg); /* no PAR_ENOENT: p is not given */
  assert_true(kept >= 5);
  assert_int_equal(stat_of(s.reg, PAR_REPL_STAT_LOG_LSN), stat_of(p.reg, PAR_REPL_STAT_LOG_LSN));
  /* Read to the end: the next flush (of a write: a flush of an empty L0
   * commits nothing) frees what the pin kept. */
  load(p.reg, &m, &rng, 20000, 1);
  assert_ok(par_flush(p.reg));
  assert_true(region_stats(p.reg).wal_segments <= 2);
  par_repl_cursor_close(c);

  /* A stalled cursor with a limit of 1 segment is released; one within its
   * limit reads on. */
  uint64_t from = stat_of(s.reg, PAR_REPL_STAT_LOG_LSN) + 1;
  par_repl_cursor *stalled, *follower;
  assert_ok(par_repl_cursor_open(p.reg, from, &stalled));
  assert_ok(par_repl_cursor_open(p.reg, from, &follower));
  assert_par(par_repl_cursor_set_limit(stalled, 0), PAR_EINVAL);
  assert_ok(par_repl_cursor_set_limit(stalled, 1));
  load(p.reg, &m, &rng, 12000, 8000);
  assert_ok(par_flush(p.reg));
  assert_par(par_repl_cursor_read(stalled, buf, sizeof buf, &len, &last), PAR_ENOENT);
  assert_int_equal(len, 0);
  assert_par(par_repl_cursor_read(stalled, buf, sizeof buf, &len, &last), PAR_ENOENT);
  par_repl_cursor_close(stalled);
  ship_log(NULL, &follower, s.reg);
  par_repl_cursor_close(follower);
  assert_ok(par_put(p.reg, "unshipped", 9, "x", 1, PAR_SYNC)); /* not the backup's */
  assert_ok(par_flush(p.reg));
  assert_true(region_stats(p.reg).wal_segments <= 2);

  /* The backup's log copy holds every write: promoted, it equals the model. */
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  verify(s.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
}

/* Send index: the primary's levels, installed after each compaction. */
static void test_send_index(void **state) {
  (void)state;
  node p = {0}, s = {0}, fresh = {0};
  node_open(&p, "repl_si_p", PAR_PLACEMENT_IN_PLACE);
  node_open(&s, "repl_si_b", PAR_PLACEMENT_IN_PLACE);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  uint64_t rng = tu_seed("repl_si");
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  uint64_t seen = 0;
  size_t copied = 0;
  int installs = 0;
  for (int i = 0; i < 40000; i++) {
    put_model(p.reg, &m, &rng, i, 400);
    if (i % 2000 == 1999) {
      copied += ship_round(p.reg, &c, s.reg, &seen, &installs);
    }
  }
  assert_true(installs >= 3);
  assert_true(copied > 0);
  /* Once compactions are done, the last layout; shipped again it copies
   * nothing: the backup holds its trees. */
  assert_ok(par_flush(p.reg));
  ship_index(p.reg, s.reg);
  assert_int_equal(ship_index(p.reg, s.reg), 0);
  assert_int_equal(stat_of(s.reg, PAR_REPL_STAT_COMPACTIONS), 0);
  assert_true(stat_of(s.reg, PAR_REPL_STAT_TREES_INSTALLED) >= 3);
  assert_int_equal(stat_of(s.reg, PAR_REPL_STAT_COVERED_LSN), stat_of(p.reg, PAR_REPL_STAT_COVERED_LSN));

  /* A fresh backup starts from the levels; the log follows from them. */
  node_open(&fresh, "repl_si_f", PAR_PLACEMENT_IN_PLACE);
  assert_ok(par_repl_set_role(fresh.reg, PAR_REPL_BACKUP_SEND_INDEX));
  par_repl_export *x;
  assert_ok(par_repl_export_open(p.reg, &x));
  uint64_t covered = par_repl_export_covered(x);
  par_repl_export_close(x);
  assert_true(covered > 0);
  ship_index(p.reg, fresh.reg);
  assert_int_equal(stat_of(fresh.reg, PAR_REPL_STAT_LOG_LSN), covered);
  par_repl_cursor *fc;
  assert_ok(par_repl_cursor_open(p.reg, covered + 1, &fc));
  for (int i = 40000; i < 41000; i++) put_model(p.reg, &m, &rng, i, 400);
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &fc, fresh.reg);
  ship_log(p.reg, &c, s.reg);
  par_repl_cursor_close(fc);
  par_repl_cursor_close(c);
  uint64_t last = stat_of(p.reg, PAR_REPL_STAT_LOG_LSN);
  assert_int_equal(stat_of(fresh.reg, PAR_REPL_STAT_LOG_LSN), last);

  /* Both backups survive a close before promotion; then hold the state. */
  node_close(&s);
  node_close(&fresh);
  node_open(&s, "repl_si_b", PAR_PLACEMENT_IN_PLACE);
  node_open(&fresh, "repl_si_f", PAR_PLACEMENT_IN_PLACE);
  assert_int_equal(stat_of(s.reg, PAR_REPL_STAT_LOG_LSN), last);
  assert_int_equal(stat_of(fresh.reg, PAR_REPL_STAT_LOG_LSN), last);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  verify(s.reg, &m);
  verify(fresh.reg, &m);
  assert_ok(par_compact(s.reg)); /* the installed trees merge like built ones */
  verify(s.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
  node_free(&fresh);
}

/* Deletes [begin, end) of the key space on r and in m. */
static void delete_range_model(par_region *r, tu_map *m, int begin, int end) {
  char b[32], e[32];
  int bl = snprintf(b, sizeof b, "key%06d", begin), el = snprintf(e, sizeof e, "key%06d", end);
  assert_ok(par_delete_range(r, b, (size_t)bl, e, (size_t)el, 0));
  tu_map_del_range(m, b, (size_t)bl, e, (size_t)el);
}

/* Send index with range deletes (format 4): a tree's range tombstones go
 * with its layout, trees of range tombstones alone included, and a backup
 * promoted after range deletes (shipped in levels, or in the log only)
 * holds the primary's state. */
static void test_send_index_range_deletes(void **state) {
  (void)state;
  node p = {0}, s = {0}, fresh = {0};
  node_open(&p, "repl_rd_p", PAR_PLACEMENT_IN_PLACE);
  node_open(&s, "repl_rd_b", PAR_PLACEMENT_IN_PLACE);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  uint64_t rng = tu_seed("repl_rd");
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));

  /* A tree of range tombstones alone: a flush of an L0 holding only one,
   * over a last level it must still hide keys of. */
  uint8_t big[1000];
  for (int i = 0; i < 6000; i++) { /* 6 MB: more than L1 holds, so it goes to L2 */
    char key[32];
    int kl = snprintf(key, sizeof key, "key%06d", i);
    tu_fill_pattern(big, sizeof big, (uint64_t)i);
    assert_ok(par_put(p.reg, key, (size_t)kl, big, sizeof big, 0));
    tu_map_put(&m, key, (size_t)kl, big, sizeof big);
  }
  assert_ok(par_compact(p.reg));
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  assert_true(ship_index(p.reg, s.reg) > 0);
  delete_range_model(p.reg, &m, 100, 2000);
  assert_ok(par_flush(p.reg));
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  assert_int_equal(ship_index(p.reg, s.reg), 0); /* no node to copy: the last level is held */
  assert_int_equal(stat_of(s.reg, PAR_REPL_STAT_TREES_INSTALLED), 2);

  uint64_t seen = 0;
  int installs = 0;
  for (int i = 0; i < 30000; i++) {
    put_model(p.reg, &m, &rng, i, 400);
    if (i % 1500 == 700) {
      int b = (int)tu_rand_range(&rng, 4000);
      delete_range_model(p.reg, &m, b, b + 1 + (int)tu_rand_range(&rng, 300));
    }
    if (i % 2000 == 1999) {
      ship_round(p.reg, &c, s.reg, &seen, &installs);
    }
  }
  assert_true(installs >= 3);
  /* The last layout holds range tombstones (flushed, not yet at the last level). */
  delete_range_model(p.reg, &m, 1000, 1500);
  assert_ok(par_flush(p.reg));
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  ship_index(p.reg, s.reg);
  assert_int_equal(ship_index(p.reg, s.reg), 0); /* held: trees known with their tombstones */

  /* A fresh backup from the levels alone reads the same as the primary. */
  node_open(&fresh, "repl_rd_f", PAR_PLACEMENT_IN_PLACE);
  assert_ok(par_repl_set_role(fresh.reg, PAR_REPL_BACKUP_SEND_INDEX));
  ship_index(p.reg, fresh.reg);
  par_repl_cursor *fc;
  assert_ok(par_repl_cursor_open(p.reg, stat_of(fresh.reg, PAR_REPL_STAT_LOG_LSN) + 1, &fc));

  /* A range delete in the log only, then promotion. */
  delete_range_model(p.reg, &m, 2000, 2600);
  for (int i = 30000; i < 30500; i++) put_model(p.reg, &m, &rng, i, 400);
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  ship_log(p.reg, &fc, fresh.reg);
  par_repl_cursor_close(c);
  par_repl_cursor_close(fc);
  assert_int_equal(stat_of(s.reg, PAR_REPL_STAT_COMPACTIONS), 0);
  node_close(&s); /* the backup's crash before promotion */
  node_open(&s, "repl_rd_b", PAR_PLACEMENT_IN_PLACE);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  assert_ok(par_repl_set_role(fresh.reg, PAR_REPL_PRIMARY));
  verify(p.reg, &m);
  verify(s.reg, &m);
  verify(fresh.reg, &m);
  assert_ok(par_compact(s.reg)); /* installed tombstones merge like built ones */
  verify(s.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
  node_free(&fresh);
}

/* A backup promoted with older levels than another backup's ships them to
 * it: installing them would lose the LSNs between (that backup's log copy
 * was trimmed to its newer levels), so they change nothing. Found by the
 * replication module's kill-cycle soak (an acknowledged write lost). */
static void test_outdated_layout(void **state) {
  (void)state;
  node p = {0}, old = {0}, ahead = {0};
  node_open(&p, "repl_od_p", PAR_PLACEMENT_IN_PLACE);
  node_open(&old, "repl_od_o", PAR_PLACEMENT_IN_PLACE);
  node_open(&ahead, "repl_od_a", PAR_PLACEMENT_IN_PLACE);
  assert_ok(par_repl_set_role(old.reg, PAR_REPL_BACKUP_SEND_INDEX));
  assert_ok(par_repl_set_role(ahead.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  uint64_t rng = tu_seed("repl_od");
  par_repl_cursor *co, *ca;
  assert_ok(par_repl_cursor_open(p.reg, 1, &co));
  assert_ok(par_repl_cursor_open(p.reg, 1, &ca));
  load(p.reg, &m, &rng, 0, 2000);
  assert_ok(par_flush(p.reg));
  ship_log(NULL, &co, old.reg);
  ship_log(NULL, &ca, ahead.reg);
  ship_index(p.reg, old.reg); /* old's levels stop here */
  ship_index(p.reg, ahead.reg);
  load(p.reg, &m, &rng, 2000, 6000); /* 3 WAL segments more */
  assert_ok(par_flush(p.reg));
  ship_log(NULL, &co, old.reg);
  ship_log(NULL, &ca, ahead.reg);
  ship_index(p.reg, ahead.reg); /* ahead's log copy is trimmed to them */
  uint64_t covered = stat_of(ahead.reg, PAR_REPL_STAT_COVERED_LSN);
  assert_true(covered > stat_of(old.reg, PAR_REPL_STAT_COVERED_LSN));
  par_repl_cursor_close(co);
  par_repl_cursor_close(ca);

  /* old becomes the primary; its levels go to ahead: nothing changes. */
  assert_ok(par_repl_set_role(old.reg, PAR_REPL_PRIMARY));
  uint64_t trees = stat_of(ahead.reg, PAR_REPL_STAT_TREES_INSTALLED);
  assert_int_equal(ship_index(old.reg, ahead.reg), 0);
  assert_int_equal(stat_of(ahead.reg, PAR_REPL_STAT_TREES_INSTALLED), trees);
  assert_int_equal(stat_of(ahead.reg, PAR_REPL_STAT_COVERED_LSN), covered);
  assert_ok(par_repl_set_role(ahead.reg, PAR_REPL_PRIMARY));
  verify(ahead.reg, &m);
  verify(old.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&old);
  node_free(&ahead);
}

/* ---- shipping interleavings ----
 *
 * The replication module ships a backup's log and its levels on two
 * threads, so a backup sees records and installs in any order: an export
 * taken before records that arrive first, an install begun, then records,
 * then its segments and commit; a log behind the levels (its cursor gets
 * PAR_ENOENT and waits for the levels). The ops below are those steps; a
 * seeded run mixes them at random, promotes the backup whose log is the
 * longest (the master's rule) mid-stream, lets it ship to the other the
 * same way, promotes that one too, and checks each promoted copy against
 * the writes up to its log LSN. */

#define VMAX 2500 /* values up to here: large ones in hybrid rounds */

typedef struct wrec { /* the write of LSN i + 1 */
  char key[16];
  uint8_t klen;
  uint16_t vlen; /* 0xffff: a delete */
  uint64_t seed;
} wrec;

typedef struct shipping {
  par_region *from, *to;
  par_repl_cursor *cur;
  par_repl_export *x; /* an install in progress: its export, its handle */
  par_repl_install *in;
  uint32_t *segs;
  size_t nsegs, done;
} shipping;

static void write_one(par_region *r, wrec *w, uint64_t *rng, uint64_t lsn, uint32_t vmax) {
  w->klen = (uint8_t)snprintf(w->key, sizeof w->key, "key%05d", (int)tu_rand_range(rng, 3000));
  w->seed = lsn;
  if (tu_rand_range(rng, 10) == 0) {
    w->vlen = 0xffff;
    assert_ok(par_delete(r, w->key, w->klen, 0));
    return;
  }
  w->vlen = (uint16_t)tu_rand_range(rng, vmax);
  uint8_t v[VMAX];
  tu_fill_pattern(v, w->vlen, w->seed);
  assert_ok(par_put(r, w->key, w->klen, v, w->vlen, 0));
}

/* r holds exactly the writes of LSNs 1..upto. */
static void verify_upto(par_region *r, const wrec *w, uint64_t upto) {
  tu_map m;
  tu_map_init(&m);
  uint8_t v[VMAX];
  for (uint64_t i = 0; i < upto; i++) {
    if (w[i].vlen == 0xffff) {
      tu_map_del(&m, w[i].key, w[i].klen);
    } else {
      tu_fill_pattern(v, w[i].vlen, w[i].seed);
      tu_map_put(&m, w[i].key, w[i].klen, v, w[i].vlen);
    }
  }
  verify(r, &m);
  tu_map_free(&m);
}

static void ship_begin(shipping *s) {
  assert_ok(par_repl_export_open(s->from, &s->x));
  size_t len;
  assert_par(par_repl_export_layout(s->x, NULL, 0, &len), PAR_ETOOBIG);
  uint8_t *layout = malloc(len);
  assert_ok(par_repl_export_layout(s->x, layout, len, &len));
  assert_ok(par_repl_install_begin(s->to, layout, len, &s->in));
  free(layout);
  s->nsegs = par_repl_install_needed(s->in, NULL, 0);
  s->segs = calloc(s->nsegs + 1, sizeof *s->segs);
  assert_int_equal(par_repl_install_needed(s->in, s->segs, s->nsegs), s->nsegs);
  s->done = 0;
}

/* Copies up to n segments of the install in progress; commits after the last. */
static void ship_segments(shipping *s, size_t n) {
  uint8_t *data = malloc(PAR_SEGMENT_SIZE);
  for (; n && s->done < s->nsegs; n--, s->done++) copy_segment(s->x, s->in, s->segs[s->done], data);
  free(data);
  if (s->done < s->nsegs) return;
  assert_ok(par_repl_install_commit(s->in));
  par_repl_install_close(s->in);
  par_repl_export_close(s->x);
  free(s->segs);
  s->in = NULL;
  s->x = NULL;
  s->segs = NULL;
}

/* One chunk of at most cap bytes of the log, applied with flags, or, behind the levels, the
 * levels first (the one in progress, else new ones) and the log from the
 * backup's end, through a cursor opened before the old one closes. */
static void ship_chunk(shipping *s, size_t cap, uint32_t flags) {
  uint8_t *buf = malloc(cap);
  size_t len;
  uint64_t last, applied;
  int rc = par_repl_cursor_read(s->cur, buf, cap, &len, &last);
  if (rc == PAR_ENOENT) {
    if (!s->in) ship_begin(s);
    ship_segments(s, SIZE_MAX);
    par_repl_cursor *old = s->cur;
    assert_ok(par_repl_cursor_open(s->from, stat_of(s->to, PAR_REPL_STAT_LOG_LSN) + 1, &s->cur));
    par_repl_cursor_close(old);
  } else if (rc != PAR_ETOOBIG) {
    assert_ok(rc);
    if (len) {
      assert_ok(par_repl_apply(s->to, buf, len, flags, &applied));
      assert_true(applied >= last);
    }
  }
  free(buf);
}

static void ship_abandon(shipping *s) {
  if (s->in) par_repl_install_close(s->in);
  if (s->x) par_repl_export_close(s->x);
  if (s->cur) par_repl_cursor_close(s->cur);
  free(s->segs);
  memset(s, 0, sizeof *s);
}

/* n writes on s[0].from interleaved at random with the shipping steps of each s[i]. */
static void mix(shipping *s, int ns, wrec *w, uint64_t *lsn, int n, uint32_t vmax, uint64_t *rng) {
  for (int i = 0; i < n; i++) {
    write_one(s[0].from, &w[*lsn], rng, *lsn + 1, vmax);
    (*lsn)++;
    if (i % 50) continue;
    assert_ok(par_sync(s[0].from));
    shipping *t = &s[tu_rand_range(rng, (uint64_t)ns)];
    switch (tu_rand_range(rng, 6)) {
    case 0:
    case 1:
    case 2: ship_chunk(t, 1024 + tu_rand_range(rng, 64 << 10), tu_rand_range(rng, 4) ? 0 : PAR_SYNC); break;
    case 3: if (!t->in) ship_begin(t); break;
    case 4: if (t->in) ship_segments(t, 1 + tu_rand_range(rng, 3)); break;
    case 5: if (t->in) ship_segments(t, SIZE_MAX); break;
    }
  }
  assert_ok(par_sync(s[0].from));
}

static void test_shipping_interleavings(void **state) {
  (void)state;
  enum { WRITES = 24000 };
  wrec *w = calloc(3 * WRITES, sizeof *w);
  uint64_t rng = tu_seed("repl_mix");
  for (int round = 0; round < 4; round++) {
    /* Every other round hybrid, with an L0 small enough for a level below
     * L1: flushes into L1 write medium values into sets of the transient
     * log that later trees carry on, which the backups copy and share; and
     * large values, which the backups' mirrors take as the log arrives or
     * installs copy, in whatever order the two come. */
    uint32_t placement = round % 2 ? PAR_PLACEMENT_HYBRID : PAR_PLACEMENT_IN_PLACE;
    uint32_t vmax = placement == PAR_PLACEMENT_HYBRID ? VMAX : 600;
    /* GC drops segments wholly garbage only: a relocation would take an
     * LSN, and LSN i + 1 here is the write w[i]. */
    node p = {.l0_size = placement == PAR_PLACEMENT_HYBRID ? 64u << 10 : 0, .gc_off = 1},
         b[2] = {{.gc_off = 1}, {.gc_off = 1}};
    node_open(&p, "repl_mix_p", placement);
    node_open(&b[0], "repl_mix_b0", placement);
    node_open(&b[1], "repl_mix_b1", placement);
    shipping s[2] = {{0}};
    for (int i = 0; i < 2; i++) {
      assert_ok(par_repl_set_role(b[i].reg, PAR_REPL_BACKUP_SEND_INDEX));
      s[i].from = p.reg;
      s[i].to = b[i].reg;
      assert_ok(par_repl_cursor_open(p.reg, 1, &s[i].cur));
    }
    uint64_t lsn = 0;
    mix(s, 2, w, &lsn, WRITES, vmax, &rng);
    assert_true(stat_of(p.reg, PAR_REPL_STAT_COMPACTIONS) > 3);
    if (placement == PAR_PLACEMENT_HYBRID) {
      assert_true(stat_of(b[0].reg, PAR_REPL_STAT_MEDIUM_SEGMENTS) + stat_of(b[1].reg, PAR_REPL_STAT_MEDIUM_SEGMENTS) > 0);
      assert_true(stat_of(b[0].reg, PAR_REPL_STAT_MIRROR_BYTES) + stat_of(b[1].reg, PAR_REPL_STAT_MIRROR_BYTES) > 0);
    }
    /* The primary dies: what it shipped is all there is. The backup with
     * the longest log becomes primary; the other follows it. */
    uint64_t l0 = stat_of(b[0].reg, PAR_REPL_STAT_LOG_LSN), l1 = stat_of(b[1].reg, PAR_REPL_STAT_LOG_LSN);
    int np = l1 > l0 || (l1 == l0 && tu_rand_range(&rng, 2));
    node *nprim = &b[np], *nback = &b[!np];
    ship_abandon(&s[0]);
    ship_abandon(&s[1]);
    uint64_t held = stat_of(nprim->reg, PAR_REPL_STAT_LOG_LSN);
    assert_ok(par_repl_set_role(nprim->reg, PAR_REPL_PRIMARY));
    verify_upto(nprim->reg, w, held);
    /* It ships to the other backup and to a new one (state transfer);
     * its next LSN follows the log it holds. */
    lsn = held;
    node fresh = {.gc_off = 1};
    node_open(&fresh, "repl_mix_f", placement);
    assert_ok(par_repl_set_role(fresh.reg, PAR_REPL_BACKUP_SEND_INDEX));
    shipping t[2] = {{.from = nprim->reg, .to = nback->reg}, {.from = nprim->reg, .to = fresh.reg}};
    assert_ok(par_repl_cursor_open(nprim->reg, stat_of(nback->reg, PAR_REPL_STAT_LOG_LSN) + 1, &t[0].cur));
    assert_ok(par_repl_cursor_open(nprim->reg, 1, &t[1].cur));
    mix(t, 2, w, &lsn, WRITES, vmax, &rng);
    ship_abandon(&t[0]);
    ship_abandon(&t[1]);
    /* Either may be promoted next: each holds the writes up to its log's end. */
    node *next[2] = {nback, &fresh};
    for (int i = 0; i < 2; i++) {
      held = stat_of(next[i]->reg, PAR_REPL_STAT_LOG_LSN);
      assert_ok(par_repl_set_role(next[i]->reg, PAR_REPL_PRIMARY));
      verify_upto(next[i]->reg, w, held);
    }
    node_free(&fresh);
    node_free(&p);
    node_free(&b[0]);
    node_free(&b[1]);
  }
  free(w);
}

/* An installed segment is written as far as its nodes reach (and a block
 * for the zero header after them), not whole: a small tree's copy writes a
 * few blocks, not 2 MiB. The promoted copy holds every pair. */
static void test_install_writes_used_blocks(void **state) {
  (void)state;
  node p = {0}, b = {0};
  node_open(&p, "repl_ub_p", PAR_PLACEMENT_IN_PLACE);
  node_open(&b, "repl_ub_b", PAR_PLACEMENT_IN_PLACE);
  assert_ok(par_repl_set_role(b.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  uint64_t rng = tu_seed("repl_ub");
  for (int i = 0; i < 100; i++) put_model(p.reg, &m, &rng, i, 20);
  assert_ok(par_flush(p.reg));
  uint64_t sent0 = sent_bytes;
  ship_index(p.reg, b.reg);
  assert_int_equal(stat_of(b.reg, PAR_REPL_STAT_SEGMENTS_INSTALLED), 1);
  uint64_t bytes = stat_of(b.reg, PAR_REPL_STAT_SEGMENT_BYTES);
  assert_true(bytes > 0 && bytes % 4096 == 0 && bytes <= 64u << 10);
  /* Nor is the rest of the segment sent. */
  assert_true(sent_bytes - sent0 > 0 && sent_bytes - sent0 <= 64u << 10);
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, stat_of(b.reg, PAR_REPL_STAT_LOG_LSN) + 1, &c));
  ship_log(NULL, &c, b.reg);
  par_repl_cursor_close(c);
  assert_ok(par_repl_set_role(b.reg, PAR_REPL_PRIMARY));
  verify(b.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&b);
}

/* A primary that rewrites the same keys with values of the same size
 * builds L1 trees of one shape (same keys, counts, bytes, root node), and
 * they take the same segment every other flush. Their ids were derived
 * from that shape and the root node alone, so the backup took a later tree
 * for one it held, kept the older one and moved its covered LSN past the
 * writes between: they were lost at promotion (CrashPointTest's case 3
 * found it: with the levels shipped every 2 s, the installed trees were two
 * flushes apart). Each tree the primary builds has an id of its own now. */
static void test_rebuilt_tree_not_taken_as_held(void **state) {
  (void)state;
  node p = {0}, b = {0};
  node_open(&p, "repl_rb_p", PAR_PLACEMENT_IN_PLACE);
  node_open(&b, "repl_rb_b", PAR_PLACEMENT_IN_PLACE);
  assert_ok(par_repl_set_role(b.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  uint8_t v[800];
  for (int round = 0; round < 5; round++) {
    for (int i = 0; i < 200; i++) {
      char key[16];
      int kl = snprintf(key, sizeof key, "k%03d", i);
      tu_fill_pattern(v, sizeof v, (uint64_t)(round * 1000 + i));
      assert_ok(par_put(p.reg, key, (size_t)kl, v, sizeof v, 0));
      tu_map_put(&m, key, (size_t)kl, v, sizeof v);
    }
    assert_ok(par_flush(p.reg));
    ship_log(p.reg, &c, b.reg);
    if (round % 2 == 0) ship_index(p.reg, b.reg); /* every other tree, as a 2 s interval does */
  }
  par_repl_cursor_close(c);
  uint64_t trees = stat_of(b.reg, PAR_REPL_STAT_TREES_INSTALLED);
  assert_ok(par_repl_set_role(b.reg, PAR_REPL_PRIMARY));
  verify(b.reg, &m);
  assert_int_equal(trees, 3);
  tu_map_free(&m);
  node_free(&p);
  node_free(&b);
}

/* Flips a byte inside the first copy of mark found in the volume file at
 * path (a key a backup's log copy holds, nowhere else on its volume). */
static void damage_volume(const char *path, const char *mark) {
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  size_t chunk = 4u << 20, ml = strlen(mark);
  uint8_t *buf = malloc(chunk);
  off_t at = 0;
  for (;;) {
    ssize_t n = pread(fd, buf, chunk, at);
    uint8_t *hit = n > 0 ? memmem(buf, (size_t)n, mark, ml) : NULL;
    if (hit) {
      uint8_t b = (uint8_t)(hit[ml - 1] ^ 0x20);
      assert_int_equal(pwrite(fd, &b, 1, at + (hit - buf) + (off_t)ml - 1), 1);
      break;
    }
    if ((size_t)n < chunk) fail_msg("'%s' is not in %s", mark, path);
    at += n - (ssize_t)ml;
  }
  assert_int_equal(fsync(fd), 0);
  free(buf);
  close(fd);
}

/* A promotion whose log copy cannot be read to its end fails and leaves a
 * send-index backup: retried, it fails again. It used to leave a PRIMARY
 * (the role was set before the replay), which a retry took as promoted:
 * a region serving without the rest of its log copy. */
static void test_failed_promotion_stays_backup(void **state) {
  (void)state;
  node p = {0}, b = {0};
  node_open(&p, "repl_fp_p", PAR_PLACEMENT_IN_PLACE);
  node_open(&b, "repl_fp_b", PAR_PLACEMENT_IN_PLACE);
  assert_ok(par_repl_set_role(b.reg, PAR_REPL_BACKUP_SEND_INDEX));
  for (int i = 0; i < 1000; i++) {
    char key[24];
    int kl = snprintf(key, sizeof key, "walmark%05d", i);
    assert_ok(par_put(p.reg, key, (size_t)kl, "v", 1, 0));
  }
  assert_ok(par_sync(p.reg));
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  ship_log(NULL, &c, b.reg);
  par_repl_cursor_close(c);
  uint64_t applied;
  assert_ok(par_repl_apply(b.reg, NULL, 0, PAR_SYNC, &applied)); /* the log copy in the file */
  assert_int_equal(applied, 1000);
  char *path = tu_path(b.dir, "volume.px");
  damage_volume(path, "walmark00500");
  free(path);
  assert_par(par_repl_set_role(b.reg, PAR_REPL_PRIMARY), PAR_ECORRUPT);
  assert_int_equal(stat_of(b.reg, PAR_REPL_STAT_ROLE), PAR_REPL_BACKUP_SEND_INDEX);
  assert_par(par_repl_set_role(b.reg, PAR_REPL_PRIMARY), PAR_ECORRUPT);
  assert_int_equal(stat_of(b.reg, PAR_REPL_STAT_ROLE), PAR_REPL_BACKUP_SEND_INDEX);
  assert_int_equal(stat_of(b.reg, PAR_REPL_STAT_COMPACTIONS), 0);
  node_free(&p);
  node_free(&b);
}

/* What send index cannot take: pointers into a primary's logs, bad layouts. */
static void test_send_index_refusals(void **state) {
  (void)state;
  node p = {0}, s = {0};
  node_open(&p, "repl_ref_p", PAR_PLACEMENT_HYBRID);
  node_open(&s, "repl_ref_b", PAR_PLACEMENT_IN_PLACE);
  uint8_t v[2000];
  memset(v, 7, sizeof v);
  for (int i = 0; i < 200; i++) {
    char key[16];
    int kl = snprintf(key, sizeof key, "k%05d", i);
    assert_ok(par_put(p.reg, key, (size_t)kl, v, sizeof v, 0)); /* large: a pointer in the leaf */
  }
  assert_ok(par_flush(p.reg));
  par_repl_export *x;
  assert_ok(par_repl_export_open(p.reg, &x));
  size_t len;
  assert_par(par_repl_export_layout(x, NULL, 0, &len), PAR_ETOOBIG);
  uint8_t *layout = malloc(len);
  assert_ok(par_repl_export_layout(x, layout, len, &len));
  par_repl_install *in;
  assert_par(par_repl_install_begin(s.reg, layout, len, &in), PAR_EINVAL); /* not a backup */
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  assert_ok(par_repl_install_begin(s.reg, layout, len, &in));
  uint32_t segs[8];
  size_t n = par_repl_install_needed(in, segs, 8);
  assert_true(n >= 2 && n <= 8); /* the tree's nodes and the large log's segments */
  uint8_t *data = malloc(PAR_SEGMENT_SIZE);
  assert_ok(par_repl_export_segment(x, segs[0], data, NULL));
  assert_par(par_repl_install_segment(in, 999999, data, PAR_SEGMENT_SIZE), PAR_EINVAL); /* not one it needs */
  assert_par(par_repl_install_segment(in, segs[0], data, PAR_SEGMENT_SIZE + 1), PAR_EINVAL); /* over a segment */
  assert_ok(par_repl_install_segment(in, segs[0], data, PAR_SEGMENT_SIZE)); /* whole, as before */
  assert_par(par_repl_install_commit(in), PAR_EINVAL); /* a segment is missing */
  par_repl_install_close(in);
  assert_par(par_repl_export_segment(x, 999999, data, NULL), PAR_EINVAL);
  /* Damaged layouts: every truncation, and a tree at level 9. */
  for (size_t cut = 0; cut < len; cut++)
    assert_par(par_repl_install_begin(s.reg, layout, cut, &in), PAR_ECORRUPT);
  layout[36] = 9; /* the first tree's level */
  assert_par(par_repl_install_begin(s.reg, layout, len, &in), PAR_ECORRUPT);
  par_repl_export_close(x);
  assert_int_equal(stat_of(s.reg, PAR_REPL_STAT_SEGMENTS_INSTALLED), 1); /* the abandoned install's */
  free(layout);
  free(data);
  node_free(&p);
  node_free(&s);
}

/* Send index with hybrid placement: leaves pointing into the medium and
 * large logs, installed after every compaction (merges above the medium
 * merge level sharing medium segments between trees, merges at it, sorted
 * runs, GC relocating and dropping large-log segments on the primary); the
 * backup never compacts, and promoted, after a close too, holds the
 * model's state, and compacts and collects like a primary. */
static void test_send_index_hybrid(void **state) {
  (void)state;
  node p = {0}, s = {0}, fresh = {0};
  node_open(&p, "repl_hy_p", PAR_PLACEMENT_HYBRID);
  node_open(&s, "repl_hy_b", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  uint64_t rng = tu_seed("repl_hy");
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  uint64_t seen = 0, sent0 = sent_bytes;
  int installs = 0;
  for (int i = 0; i < 40000; i++) {
    put_model(p.reg, &m, &rng, i, 3000); /* small, medium and large pairs */
    if (i % 2000 == 1999) {
      ship_round(p.reg, &c, s.reg, &seen, &installs);
    }
  }
  assert_ok(par_flush(p.reg));
  ship_index(p.reg, s.reg);
  par_stats st;
  assert_ok(par_region_stats(p.reg, &st));
  assert_true(installs >= 3);
  assert_true(st.gc_runs > 0); /* the primary relocated values while it shipped */
  assert_int_equal(stat_of(s.reg, PAR_REPL_STAT_COMPACTIONS), 0);
  assert_int_equal(stat_of(s.reg, PAR_REPL_STAT_COVERED_LSN), stat_of(p.reg, PAR_REPL_STAT_COVERED_LSN));
  /* Segments go over as far as their nodes or records reach: the heads
   * copied again at every install, trees' last segments and medium sets
   * are partly used. */
  uint64_t copied = stat_of(s.reg, PAR_REPL_STAT_SEGMENTS_INSTALLED);
  fprintf(stderr, "test_send_index_hybrid: %llu segments copied, %llu bytes sent (%.0f%% of whole segments)\n",
          (unsigned long long)copied, (unsigned long long)(sent_bytes - sent0),
          100.0 * (double)(sent_bytes - sent0) / ((double)copied * PAR_SEGMENT_SIZE));
  assert_true(sent_bytes - sent0 < copied * PAR_SEGMENT_SIZE * 3 / 4);

  /* A fresh backup from the levels, then the log after them. */
  node_open(&fresh, "repl_hy_f", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(fresh.reg, PAR_REPL_BACKUP_SEND_INDEX));
  ship_index(p.reg, fresh.reg);
  par_repl_cursor *fc;
  assert_ok(par_repl_cursor_open(p.reg, stat_of(fresh.reg, PAR_REPL_STAT_LOG_LSN) + 1, &fc));
  for (int i = 40000; i < 41000; i++) put_model(p.reg, &m, &rng, i, 3000);
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &fc, fresh.reg);
  ship_log(p.reg, &c, s.reg);
  par_repl_cursor_close(fc);
  par_repl_cursor_close(c);

  /* Promoted after a close: the values its leaves point at are its own. */
  node_close(&s);
  node_open(&s, "repl_hy_b", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  assert_ok(par_repl_set_role(fresh.reg, PAR_REPL_PRIMARY));
  verify(s.reg, &m);
  verify(fresh.reg, &m);
  /* Merges at the medium merge level read the copied medium logs, sorted
   * runs and GC the mirrored large log. */
  for (int i = 41000; i < 45000; i++) put_model(s.reg, &m, &rng, i, 3000);
  assert_ok(par_compact(s.reg));
  verify(s.reg, &m);
  assert_ok(par_region_stats(s.reg, &st));
  assert_true(st.compactions > 0);
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
  node_free(&fresh);
}

static uint64_t gc_freed(par_region *r) {
  par_stats st;
  assert_ok(par_region_stats(r, &st));
  return st.gc_segments_freed;
}

static uint64_t gc_runs(par_region *r) {
  par_stats st;
  assert_ok(par_region_stats(r, &st));
  return st.gc_runs;
}

static void put_large(par_region *r, tu_map *m, int k, int version) {
  char key[16];
  uint8_t v[1500];
  int kl = snprintf(key, sizeof key, "k%05d", k);
  tu_fill_pattern(v, sizeof v, (uint64_t)version * 100000u + (uint64_t)k);
  assert_ok(par_put(r, key, (size_t)kl, v, sizeof v, 0));
  tu_map_put(m, key, (size_t)kl, v, sizeof v);
}

/* The large-log mirror costs what the primary's large log holds: a head
 * copied at every install is written only where its new records reach,
 * and a first copy only up to the end of its records (it once wrote the
 * whole segment each time: 2 MiB per head and install). The backup, closed
 * and reopened, then promoted, holds every value. */
static void test_send_index_mirror_bytes(void **state) {
  (void)state;
  node p = {.gc_off = 1, .no_sorted_runs = 1}, s = {0};
  node_open(&p, "repl_mb_p", PAR_PLACEMENT_HYBRID);
  node_open(&s, "repl_mb_b", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  enum { ROUNDS = 8, PER_ROUND = 40 };
  for (int round = 0; round < ROUNDS; round++) {
    for (int k = 0; k < PER_ROUND; k++) put_large(p.reg, &m, round * PER_ROUND + k, round);
    assert_ok(par_flush(p.reg));
    ship_log(p.reg, &c, s.reg);
    ship_index(p.reg, s.reg); /* the primary's head again, grown */
  }
  par_repl_cursor_close(c);
  par_stats st;
  assert_ok(par_region_stats(p.reg, &st));
  uint64_t mirror = stat_of(s.reg, PAR_REPL_STAT_MIRROR_BYTES), large = st.large_log_bytes_appended;
  fprintf(stderr, "mirror_bytes: %llu bytes written for %llu in the primary's large log, %d installs\n",
          (unsigned long long)mirror, (unsigned long long)large, ROUNDS);
  assert_true(large > 0 && large < PAR_SEGMENT_SIZE); /* one head, copied at every install */
  assert_true(mirror >= large);
  assert_true(mirror <= large + (uint64_t)ROUNDS * 2 * 4096); /* at most two partial blocks per copy */

  node_close(&s);
  node_open(&s, "repl_mb_b", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  verify(s.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
}

/* Talos's value log: a send-index backup writes each shipped large value
 * into its mirror as the log arrives, at the primary's offset, and its log
 * copy keeps a pointer. An install then copies nothing of a large log the
 * backup applied from its first record: the mirror is written once, about
 * the primary's large-log bytes. After a close (crash-like) the log copy's
 * pointers are read back: reopened, the region replays them. Reopened and
 * made a backup again, its mirror is rebuilt from its catalog and installs
 * copy into it in place; promoted, it holds every value. */
static void test_send_index_mirror_at_apply(void **state) {
  (void)state;
  node p = {.gc_off = 1, .no_sorted_runs = 1}, s = {.gc_off = 1};
  node_open(&p, "repl_ma_p", PAR_PLACEMENT_HYBRID);
  node_open(&s, "repl_ma_b", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  for (int k = 0; k < 1600; k++) put_large(p.reg, &m, k, 1); /* two large-log segments */
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  uint64_t large = region_stats(p.reg).large_log_bytes_appended, mirror = stat_of(s.reg, PAR_REPL_STAT_MIRROR_BYTES);
  assert_true(large > PAR_SEGMENT_SIZE);
  assert_true(mirror < large); /* the last records wait for the WAL's write */
  uint64_t applied;
  assert_ok(par_repl_apply(s.reg, NULL, 0, PAR_SYNC, &applied));
  mirror = stat_of(s.reg, PAR_REPL_STAT_MIRROR_BYTES);
  fprintf(stderr, "mirror_at_apply: %llu bytes written at apply for %llu in the primary's large log\n",
          (unsigned long long)mirror, (unsigned long long)large);
  assert_true(mirror >= large && mirror <= large + 4 * 4096); /* not a block per apply */
  assert_ok(par_flush(p.reg));
  uint64_t segs = stat_of(s.reg, PAR_REPL_STAT_SEGMENTS_INSTALLED);
  assert_true(ship_index(p.reg, s.reg) > 0);
  assert_int_equal(stat_of(s.reg, PAR_REPL_STAT_MIRROR_BYTES), mirror); /* no large segment copied */
  assert_true(stat_of(s.reg, PAR_REPL_STAT_SEGMENTS_INSTALLED) > segs);

  for (int k = 0; k < 400; k++) put_large(p.reg, &m, k, 2);
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  node_close(&s);
  node_open(&s, "repl_ma_b", PAR_PLACEMENT_HYBRID);
  verify(s.reg, &m); /* its log copy's pointers, replayed into L0 at the open */

  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  mirror = stat_of(s.reg, PAR_REPL_STAT_MIRROR_BYTES);
  for (int k = 400; k < 800; k++) put_large(p.reg, &m, k, 3);
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  assert_ok(par_flush(p.reg));
  ship_index(p.reg, s.reg);
  assert_true(stat_of(s.reg, PAR_REPL_STAT_MIRROR_BYTES) > mirror); /* the rebuilt mirror, copied in place */
  par_repl_cursor_close(c);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  verify(s.reg, &m);
  for (int k = 2000; k < 3000; k++) put_large(s.reg, &m, k, 4); /* its own heads, new incarnations */
  assert_ok(par_flush(s.reg));
  verify(s.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
}

/* Values too large for a segment, up to the largest, in send index. The
 * primary writes each alone into a run of segments of its large log; apply
 * writes it whole into a run of the backup's mirror as it arrives, and an
 * install does not copy it again, after a reopen too. A backup that joins
 * later gets the runs through an install, each checked whole and reseeded;
 * a run damaged on the way fails the commit. An install copying a run
 * whose record apply writes meanwhile (the export listed it before the
 * backup's log reached it), committed or abandoned, leaves it whole. A run
 * the primary's GC dropped leaves the mirror. Promoted, every backup holds
 * every value. */
static void put_huge(par_region *r, tu_map *m, int k, size_t len, int version) {
  char key[16];
  int kl = snprintf(key, sizeof key, "h%03d", k);
  uint8_t *v = malloc(len);
  assert_non_null(v);
  tu_fill_pattern(v, len, (uint64_t)version * 1000u + (uint64_t)k);
  assert_ok(par_put(r, key, (size_t)kl, v, len, 0));
  tu_map_put(m, key, (size_t)kl, v, len);
  free(v);
}

/* The first segment and length of the run of the primary's large log that
 * holds the newest huge value. */
static void newest_run(par_region *p, uint32_t *seg, uint32_t *nsegs) {
  pthread_mutex_lock(&p->vol->meta_mu);
  const region_desc *d = catalog_find_id(&p->vol->cat, p->id);
  uint32_t inc = 0;
  for (uint32_t i = 0; i < d->nvlog; i++)
    if (d->vlog[i].nsegs > 1 && d->vlog[i].inc > inc) {
      inc = d->vlog[i].inc;
      *seg = d->vlog[i].seg;
      *nsegs = d->vlog[i].nsegs;
    }
  pthread_mutex_unlock(&p->vol->meta_mu);
  assert_true(inc > 0);
}

/* The runs in r's large log, as its catalog lists them. */
static uint32_t runs_listed(par_region *r) {
  pthread_mutex_lock(&r->vol->meta_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  uint32_t n = 0;
  for (uint32_t i = 0; i < d->nvlog; i++) n += d->vlog[i].nsegs > 1;
  pthread_mutex_unlock(&r->vol->meta_mu);
  return n;
}

static void test_send_index_huge_values(void **state) {
  (void)state;
  node p = {.gc_off = 1}, s = {.gc_off = 1}, late = {.gc_off = 1};
  node_open(&p, "repl_hv_p", PAR_PLACEMENT_HYBRID);
  node_open(&s, "repl_hv_b", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  for (int k = 0; k < 300; k++) put_large(p.reg, &m, k, 1);
  const size_t sizes[] = {PAR_SEGMENT_SIZE, (5u << 20) + 123, PAR_MAX_VALUE_SIZE};
  uint64_t huge = 0;
  for (int k = 0; k < 3; k++) {
    put_huge(p.reg, &m, k, sizes[k], 1);
    huge += sizes[k];
  }
  for (int k = 300; k < 400; k++) put_large(p.reg, &m, k, 1);
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  uint64_t applied, mirror = stat_of(s.reg, PAR_REPL_STAT_MIRROR_BYTES);
  assert_true(mirror >= huge); /* written as they arrived */
  assert_ok(par_flush(p.reg));
  ship_index(p.reg, s.reg);
  assert_true(stat_of(s.reg, PAR_REPL_STAT_MIRROR_BYTES) - mirror < PAR_SEGMENT_SIZE); /* no run again */

  /* A backup that joins now gets the runs through the install; a layout
   * calling them heads (open) does not make them garbage there. */
  node_open(&late, "repl_hv_l", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(late.reg, PAR_REPL_BACKUP_SEND_INDEX));
  uint64_t sent0 = sent_bytes;
  par_repl_export *x;
  size_t llen;
  uint8_t *layout = export_layout(p.reg, &x, &llen);
  uint32_t nvlog = layout[24] | layout[25] << 8 | layout[26] << 16 | (uint32_t)layout[27] << 24;
  for (uint32_t i = 0; i < nvlog; i++) {
    uint8_t *e = layout + llen - 24 * (nvlog - i); /* segment | inc | garbage | open | nsegs */
    if (e[20] > 1) e[16] = 1;
  }
  par_repl_install *in;
  assert_ok(par_repl_install_begin(late.reg, layout, llen, &in));
  free(layout);
  uint32_t *segs;
  size_t n = needed_segments(in, &segs);
  finish_install(x, in, segs, n);
  pthread_mutex_lock(&late.vol->meta_mu);
  const region_desc *ld = catalog_find_id(&late.vol->cat, late.reg->id);
  uint32_t late_runs = 0;
  for (uint32_t i = 0; i < ld->nvlog; i++)
    if (ld->vlog[i].nsegs > 1) {
      late_runs++;
      assert_int_equal(ld->vlog[i].garbage, 0);
    }
  pthread_mutex_unlock(&late.vol->meta_mu);
  assert_int_equal(late_runs, 3);
  assert_true(sent_bytes - sent0 >= huge);
  assert_true(stat_of(late.reg, PAR_REPL_STAT_MIRROR_BYTES) >= huge);
  par_repl_cursor *lc;
  assert_ok(par_repl_cursor_open(p.reg, stat_of(late.reg, PAR_REPL_STAT_LOG_LSN) + 1, &lc));

  /* A run the export lists before the backup's log reaches its record. */
  put_huge(p.reg, &m, 3, 3u << 20, 2);
  assert_ok(par_sync(p.reg));
  uint32_t run = 0, run_segs = 0;
  newest_run(p.reg, &run, &run_segs);
  assert_int_equal(run_segs, 2);
  n = begin_install(p.reg, s.reg, &x, &in, &segs);
  int parts = 0;
  for (size_t i = 0; i < n; i++) parts += segs[i] - run < run_segs;
  assert_int_equal(parts, 2); /* the install copies the run */
  mirror = stat_of(s.reg, PAR_REPL_STAT_MIRROR_BYTES);
  ship_log(p.reg, &c, s.reg); /* apply writes it into the install's run */
  assert_true(stat_of(s.reg, PAR_REPL_STAT_MIRROR_BYTES) - mirror >= (3u << 20));
  mirror = stat_of(s.reg, PAR_REPL_STAT_MIRROR_BYTES);
  finish_install(x, in, segs, n);
  assert_true(stat_of(s.reg, PAR_REPL_STAT_MIRROR_BYTES) - mirror < PAR_SEGMENT_SIZE); /* the head only */
  /* ... and one whose install is abandoned. */
  uint8_t *data = malloc(PAR_SEGMENT_SIZE);
  put_huge(p.reg, &m, 4, 3u << 20, 2);
  assert_ok(par_sync(p.reg));
  n = begin_install(p.reg, s.reg, &x, &in, &segs);
  ship_log(p.reg, &c, s.reg);
  for (size_t i = 0; i + 1 < n; i++) copy_segment(x, in, segs[i], data);
  par_repl_install_close(in);
  par_repl_export_close(x);
  free(segs);

  /* A run damaged on the way: the commit fails, nothing installed. */
  put_huge(p.reg, &m, 5, 4u << 20, 2);
  assert_ok(par_flush(p.reg));
  newest_run(p.reg, &run, &run_segs);
  assert_int_equal(run_segs, 3);
  uint64_t covered = stat_of(late.reg, PAR_REPL_STAT_COVERED_LSN);
  n = begin_install(p.reg, late.reg, &x, &in, &segs);
  for (size_t i = 0; i < n; i++) {
    size_t len;
    assert_ok(par_repl_export_segment(x, segs[i], data, &len));
    if (segs[i] == run + 1) data[len / 2] ^= 1;
    assert_ok(par_repl_install_segment(in, segs[i], data, len));
  }
  assert_par(par_repl_install_commit(in), PAR_ECORRUPT);
  par_repl_install_close(in);
  par_repl_export_close(x);
  free(segs);
  assert_int_equal(stat_of(late.reg, PAR_REPL_STAT_COVERED_LSN), covered);
  free(data);

  /* A run the primary's GC dropped (its value overwritten) leaves the
   * mirror at the next install, the backup's log holding the overwrite. */
  ship_log(p.reg, &c, s.reg);
  uint64_t freed = gc_freed(p.reg);
  uint32_t runs = runs_listed(s.reg);
  put_huge(p.reg, &m, 1, 1u << 20, 3); /* the 5 MiB one's key, now in a segment */
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  assert_ok(par_flush(p.reg));
  for (int i = 0; i < 2000 && gc_freed(p.reg) < freed + 3; i++) tu_sleep_ms(10);
  assert_true(gc_freed(p.reg) >= freed + 3);
  ship_index(p.reg, s.reg);
  assert_int_equal(runs_listed(s.reg), runs - 1);

  /* Reopened, the backup finds its runs in its mirror again. */
  ship_log(p.reg, &c, s.reg);
  node_close(&s);
  node_open(&s, "repl_hv_b", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  mirror = stat_of(s.reg, PAR_REPL_STAT_MIRROR_BYTES);
  ship_index(p.reg, s.reg);
  assert_true(stat_of(s.reg, PAR_REPL_STAT_MIRROR_BYTES) - mirror < 4 * PAR_SEGMENT_SIZE); /* the heads again */
  put_huge(p.reg, &m, 0, 7u << 20, 3); /* an overwrite: the first run is garbage */
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  ship_log(p.reg, &lc, late.reg);
  assert_ok(par_repl_apply(late.reg, NULL, 0, PAR_SYNC, &applied));
  par_repl_cursor_close(c);
  par_repl_cursor_close(lc);
  assert_int_equal(stat_of(s.reg, PAR_REPL_STAT_COMPACTIONS), 0);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  assert_ok(par_repl_set_role(late.reg, PAR_REPL_PRIMARY));
  verify(s.reg, &m);
  verify(late.reg, &m);
  /* Promoted, it compacts and collects its runs as a primary does. */
  put_huge(s.reg, &m, 1, 3u << 20, 4);
  assert_ok(par_compact(s.reg));
  verify(s.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
  node_free(&late);
}

/* A power cut on a send-index backup whose mirror apply writes: the log
 * copy's pointers reach the disk only after the values they point at.
 * A child applies the primary's log (large values, 1.5 KB) in 16 KiB
 * chunks, a third with PAR_SYNC, its WAL also written every 2 ms,
 * journaling its writes (io/powerloss.h), until the parent kills it at a
 * random moment; the parent leaves
 * every write since its last fdatasync lost, torn or reordered, reopens the
 * copy (a PRIMARY, its log copy replayed) and finds exactly the writes up
 * to its log's end, the last acknowledged one included, every value read
 * whole. A WAL block written before the mirror bytes it points to fails
 * here: values past the last sync are lost while their pointers stay. */
#define PC_WRITES 3000
#define PC_KEYS 700

static void pc_write(par_region *r, tu_map *m, int i) {
  char key[16];
  uint8_t v[1500];
  int kl = snprintf(key, sizeof key, "k%05d", i % PC_KEYS);
  tu_fill_pattern(v, sizeof v, (uint64_t)i);
  if (r) assert_ok(par_put(r, key, (size_t)kl, v, sizeof v, 0));
  tu_map_put(m, key, (size_t)kl, v, sizeof v);
}

/* The parent's side of a power-cut test: waits until the child is ready,
 * kills it at a random moment within max_us, applies a power cut to n's
 * volume from the child's journal, reopens it and checks that it holds
 * exactly writes 1..its log's end (write_fn(NULL, ...) models write i),
 * at least up to the last LSN the child noted in acks as durable. */
static void power_cut_check(node *n, const char *name, pid_t pid, int ready[2], const char *journal,
                            const char *acks, uint64_t *rng, useconds_t max_us,
                            void (*write_fn)(par_region *, tu_map *, int)) {
  char r;
  assert_int_equal(read(ready[0], &r, 1), 1);
  close(ready[0]);
  close(ready[1]);
  usleep((useconds_t)tu_rand_range(rng, max_us));
  kill(pid, SIGKILL);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status));
  uint64_t durable = 0, a;
  FILE *fa = fopen(acks, "r");
  while (fa && fscanf(fa, "%llu", (unsigned long long *)&a) == 1) durable = a;
  if (fa) fclose(fa);
  char *vol = tu_path(n->dir, "volume.px");
  powerloss_stats ps;
  assert_int_equal(powerloss_crash(vol, journal, *rng, &ps), 0);
  free(vol);
  node_open(n, name, PAR_PLACEMENT_HYBRID);
  uint64_t held = stat_of(n->reg, PAR_REPL_STAT_LOG_LSN);
  fprintf(stderr, "%s: durable up to %llu, recovered %llu of %d (%llu writes unsynced, %llu sectors, %llu of them "
          "back to their durable version)\n", name, (unsigned long long)durable, (unsigned long long)held, PC_WRITES,
          (unsigned long long)ps.unsynced_writes, (unsigned long long)ps.sectors,
          (unsigned long long)ps.sectors_durable);
  assert_true(held >= durable && held <= PC_WRITES);
  tu_map m;
  tu_map_init(&m);
  for (uint64_t i = 1; i <= held; i++) write_fn(NULL, &m, (int)i);
  verify(n->reg, &m);
  tu_map_free(&m);
}

static void test_send_index_mirror_power_cut(void **state) {
  (void)state;
  node p = {.gc_off = 1, .no_sorted_runs = 1};
  node_open(&p, "repl_pc_p", PAR_PLACEMENT_HYBRID);
  tu_map unused;
  tu_map_init(&unused);
  for (int i = 1; i <= PC_WRITES; i++) pc_write(p.reg, &unused, i); /* LSN i is write i */
  tu_map_free(&unused);
  assert_ok(par_sync(p.reg));
  enum { CHUNK = 16 << 10, MAXCHUNKS = 1024 };
  uint8_t *chunk[MAXCHUNKS];
  size_t clen[MAXCHUNKS], nchunks = 0;
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  for (;;) {
    uint64_t last;
    assert_true(nchunks < MAXCHUNKS);
    chunk[nchunks] = malloc(CHUNK);
    assert_ok(par_repl_cursor_read(c, chunk[nchunks], CHUNK, &clen[nchunks], &last));
    if (!clen[nchunks]) break;
    nchunks++;
  }
  free(chunk[nchunks]);
  par_repl_cursor_close(c);
  node_free(&p);
  assert_true(nchunks > 100);

  uint64_t rng = tu_seed("repl_pc");
  for (int cycle = 0; cycle < 12; cycle++) {
    node b = {.gc_off = 1, .durability_ms = 2};
    b.dir = tu_make_dir("repl_pc_b");
    char *journal = tu_path(b.dir, "powerloss.journal"), *acks = tu_path(b.dir, "acks");
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      if (powerloss_arm(journal) != 0) _exit(9);
      node_open(&b, "repl_pc_b", PAR_PLACEMENT_HYBRID);
      if (par_repl_set_role(b.reg, PAR_REPL_BACKUP_SEND_INDEX)) _exit(10);
      FILE *fa = fopen(acks, "w");
      if (!fa || write(ready[1], "R", 1) != 1) _exit(11);
      for (size_t i = 0; i < nchunks; i++) {
        uint64_t applied;
        uint32_t flags = i % 3 == 2 ? PAR_SYNC : 0;
        if (par_repl_apply(b.reg, chunk[i], clen[i], flags, &applied)) _exit(12);
        if (flags) {
          fprintf(fa, "%llu\n", (unsigned long long)applied);
          fflush(fa);
        }
      }
      pause(); /* the power goes while it waits, or before */
      _exit(13);
    }
    power_cut_check(&b, "repl_pc_b", pid, ready, journal, acks, &rng, 60000, pc_write); /* the log: about 60 ms */
    free(journal);
    free(acks);
    node_free(&b);
  }
  for (size_t i = 0; i < nchunks; i++) free(chunk[i]);
}

/* A power cut on a primary whose cursor ships written records: a child
 * writes small pairs (no large-log write, whose sync would cover the WAL's
 * pushed blocks too: the volume is one file) without PAR_SYNC, reads its
 * cursor every few writes (each read a push: written, not synced) and, every
 * so often, right after such a read, syncs (nothing left to write: the
 * sync alone makes the pushed blocks durable), noting the LSN it made
 * durable; the parent kills it at a random moment and leaves
 * every write since its last fdatasync lost, torn or reordered. The
 * reopened primary holds exactly the writes up to its log's end, the last
 * synced one included: a sync after pushes covers them, and pushed blocks
 * torn by the cut never damage what was durable. */
static void sw_write(par_region *r, tu_map *m, int i) {
  char key[16];
  uint8_t v[100];
  int kl = snprintf(key, sizeof key, "k%05d", i % PC_KEYS);
  tu_fill_pattern(v, sizeof v, (uint64_t)i);
  if (r) assert_ok(par_put(r, key, (size_t)kl, v, sizeof v, 0));
  tu_map_put(m, key, (size_t)kl, v, sizeof v);
}

static void test_ship_written_power_cut(void **state) {
  (void)state;
  uint64_t rng = tu_seed("repl_swpc");
  for (int cycle = 0; cycle < 8; cycle++) {
    node p = {.gc_off = 1, .no_sorted_runs = 1, .durability_ms = 60000};
    p.dir = tu_make_dir("repl_swpc");
    char *journal = tu_path(p.dir, "powerloss.journal"), *acks = tu_path(p.dir, "acks");
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      if (powerloss_arm(journal) != 0) _exit(9);
      node_open(&p, "repl_swpc", PAR_PLACEMENT_HYBRID);
      par_repl_cursor *c;
      if (par_repl_cursor_open(p.reg, 1, &c) || par_repl_cursor_ship_written(c)) _exit(10);
      FILE *fa = fopen(acks, "w");
      if (!fa || write(ready[1], "R", 1) != 1) _exit(11);
      tu_map unused;
      tu_map_init(&unused);
      static uint8_t buf[1 << 16];
      for (int i = 1; i <= PC_WRITES; i++) {
        sw_write(p.reg, &unused, i); /* LSN i is write i */
        size_t n;
        uint64_t l;
        if (i % 7 == 0 || i % 97 == 0)
          do
            if (par_repl_cursor_read(c, buf, sizeof buf, &n, &l)) _exit(12);
          while (n);
        if (i % 97 == 0) {
          if (par_sync(p.reg)) _exit(13);
          fprintf(fa, "%d\n", i);
          fflush(fa);
        }
      }
      pause(); /* the power goes while it waits, or before */
      _exit(14);
    }
    power_cut_check(&p, "repl_swpc", pid, ready, journal, acks, &rng, 60000, sw_write); /* the writes: about 60 ms */
    free(journal);
    free(acks);
    node_free(&p);
  }
}

static uint64_t segments_used(par_volume *v) {
  par_volume_stats vs;
  assert_ok(par_volume_stats_get(v, &vs));
  return vs.segments_used;
}

/* A medium-log segment is copied once while the backup's levels point into
 * it. Above the medium merge level a primary's merges pass each flush's set
 * of medium-log segments on to the tree they build, and a backup that
 * copied a tree's segments with the tree wrote them again at every install
 * of a new one. Installed after every compaction, the backup copies no more
 * medium segments than the primary wrote (and without sharing it copied
 * more); what it stops pointing into is freed (its segments in use are
 * those its catalog lists); reopened and promoted it holds every pair, and
 * its own merges read and free the shared copies. */
static void test_send_index_shares_medium(void **state) {
  (void)state;
  node p = {0}, s = {0};
  node_open(&p, "repl_sm_p", PAR_PLACEMENT_HYBRID);
  node_open(&s, "repl_sm_b", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  uint64_t rng = tu_seed("repl_sm");
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  uint64_t seen = 0;
  int installs = 0;
  for (int i = 0; i < 30000; i++) {
    char key[32];
    int kl = snprintf(key, sizeof key, "key%06d", (int)tu_rand_range(&rng, 20000));
    uint8_t v[900];
    size_t vl = 150 + tu_rand_range(&rng, 700); /* medium pairs: 120 <= pair < 1024 */
    tu_fill_pattern(v, vl, (uint64_t)i);
    assert_ok(par_put(p.reg, key, (size_t)kl, v, vl, 0));
    tu_map_put(&m, key, (size_t)kl, v, vl);
    if (i % 1000 == 999) {
      ship_round(p.reg, &c, s.reg, &seen, &installs);
    }
  }
  /* The last levels installed cover the whole log. Otherwise the log copy
   * may hold a full L0 past them (the primary flushed after the last round),
   * which the reopen below replays and flushes at once, on its own, taking
   * segments while they are counted (CI at 2c976eb: 14 against 12). */
  assert_ok(par_flush(p.reg));
  ship_round(p.reg, &c, s.reg, &seen, &installs);
  ship_log(p.reg, &c, s.reg);
  par_repl_cursor_close(c);
  par_stats st;
  assert_ok(par_region_stats(p.reg, &st));
  uint64_t written = st.medium_log_bytes_written / PAR_SEGMENT_SIZE;
  uint64_t copied = stat_of(s.reg, PAR_REPL_STAT_MEDIUM_SEGMENTS);
  fprintf(stderr, "shares_medium: %d installs copied %llu medium-log segments; the primary wrote %llu\n", installs,
          (unsigned long long)copied, (unsigned long long)written);
  assert_true(installs >= 5);
  assert_true(copied > 0);
  assert_true(copied <= written);
  /* Each copy writes the blocks its nodes and records reach: the last
   * segment of a tree and of a medium set are mostly unused. */
  uint64_t bytes = stat_of(s.reg, PAR_REPL_STAT_SEGMENT_BYTES);
  fprintf(stderr, "shares_medium: %llu bytes written for %llu segments copied\n", (unsigned long long)bytes,
          (unsigned long long)stat_of(s.reg, PAR_REPL_STAT_SEGMENTS_INSTALLED));
  assert_true(bytes < stat_of(s.reg, PAR_REPL_STAT_SEGMENTS_INSTALLED) * PAR_SEGMENT_SIZE);

  /* The log copy written first: a WAL segment its writer takes during the
   * close would count after the reopen only. */
  uint64_t applied;
  assert_ok(par_repl_apply(s.reg, NULL, 0, PAR_SYNC, &applied));
  uint64_t used = segments_used(s.vol);
  node_close(&s);
  node_open(&s, "repl_sm_b", PAR_PLACEMENT_HYBRID);
  assert_int_equal(segments_used(s.vol), used);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  verify(s.reg, &m);
  assert_ok(par_compact(s.reg)); /* merges at the medium merge level read the copies */
  verify(s.reg, &m);
  assert_ok(par_region_stats(s.reg, &st));
  assert_int_equal(st.medium_log_segments, 0);
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
}

/* A primary reads back every segment it exports. Trees are written with
 * direct I/O, so the first backup's export reads them from the device, and
 * the next backup's finds them in the page cache: however many backups, a
 * segment is read from the device once. Device bytes, from /proc/self/io;
 * the test skips where the first export read nothing (no direct I/O, as on
 * tmpfs). */
static void test_export_reads_each_segment_once(void **state) {
  (void)state;
  node p = {0}, b1 = {0}, b2 = {0};
  node_open(&p, "repl_eo_p", PAR_PLACEMENT_IN_PLACE);
  node_open(&b1, "repl_eo_b1", PAR_PLACEMENT_IN_PLACE);
  node_open(&b2, "repl_eo_b2", PAR_PLACEMENT_IN_PLACE);
  assert_ok(par_repl_set_role(b1.reg, PAR_REPL_BACKUP_SEND_INDEX));
  assert_ok(par_repl_set_role(b2.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  uint64_t rng = tu_seed("repl_eo");
  par_repl_cursor *c1, *c2;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c1));
  assert_ok(par_repl_cursor_open(p.reg, 1, &c2));
  if (tu_device_read_bytes() == UINT64_MAX) skip(); /* no I/O accounting */
  for (int i = 0; i < 24000; i++) put_model(p.reg, &m, &rng, i, 800);
  assert_ok(par_flush(p.reg));
  ship_log(p.reg, &c1, b1.reg);
  ship_log(p.reg, &c2, b2.reg);
  uint64_t read[2];
  size_t copied[2];
  par_region *backup[2] = {b1.reg, b2.reg};
  for (int k = 0; k < 2; k++) {
    uint64_t before = tu_device_read_bytes();
    copied[k] = ship_index(p.reg, backup[k]);
    read[k] = tu_device_read_bytes() - before;
    fprintf(stderr, "export_reads: backup %d: %zu segments copied, %llu bytes read from the device\n", k + 1,
            copied[k], (unsigned long long)read[k]);
  }
  par_repl_cursor_close(c1);
  par_repl_cursor_close(c2);
  assert_ok(par_repl_set_role(b2.reg, PAR_REPL_PRIMARY));
  verify(b2.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&b1);
  node_free(&b2);
  assert_true(copied[0] > 0 && copied[1] == copied[0]);
  if (read[0] < copied[0] * (uint64_t)PAR_SEGMENT_SIZE / 8) {
    fprintf(stderr, "export_reads: skipped, the first export read its trees without the device (no direct I/O)\n");
    skip();
  }
  assert_true(read[1] < copied[1] * (uint64_t)PAR_SEGMENT_SIZE / 8);
}

/* A cursor set to ship written records returns a primary's writes made
 * without PAR_SYNC before they are durable, with no fdatasync on the way
 * (Talos: the backups' copies make them safe), and those records are in the
 * file: a kill -9 of the primary right after the read loses none. The WAL
 * still syncs them within its interval. A default cursor returns only
 * durable records. */
static void test_ship_written(void **state) {
  (void)state;
  enum { N = 3000 };
  node p = {.durability_ms = 60000}, b = {0};
  node_open(&p, "repl_sw_p", PAR_PLACEMENT_HYBRID);
  node_open(&b, "repl_sw_b", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(b.reg, PAR_REPL_BACKUP_SEND_INDEX));
  par_repl_cursor *written, *durable;
  assert_ok(par_repl_cursor_open(p.reg, 1, &written));
  assert_ok(par_repl_cursor_open(p.reg, 1, &durable));
  assert_ok(par_repl_cursor_ship_written(written));
  assert_int_equal(par_repl_cursor_ship_written(NULL), PAR_EINVAL);
  tu_map m;
  tu_map_init(&m);
  uint64_t rng = tu_seed("repl_sw");
  for (int i = 0; i < N; i++) put_model(p.reg, &m, &rng, i, i % 7 == 0 ? 3000 : 200);
  uint8_t buf[1 << 16];
  size_t len;
  uint64_t last;
  ship_log(NULL, &written, b.reg);
  assert_int_equal(stat_of(b.reg, PAR_REPL_STAT_LOG_LSN), N);
  /* The WAL syncs a full buffer (256 KiB), but the interval is a minute:
   * the last writes were shipped and are not durable. */
  uint64_t durable_last = 0;
  do {
    assert_ok(par_repl_cursor_read(durable, buf, sizeof buf, &len, &last));
    if (len) durable_last = last;
  } while (len);
  assert_true(durable_last < N);
  assert_ok(par_repl_set_role(b.reg, PAR_REPL_PRIMARY));
  verify(b.reg, &m);
  /* The default cursor ships them once a sync made them durable. */
  assert_ok(par_sync(p.reg));
  do {
    assert_ok(par_repl_cursor_read(durable, buf, sizeof buf, &len, &last));
    if (len) durable_last = last;
  } while (len);
  assert_int_equal(durable_last, N);
  par_repl_cursor_close(durable);
  par_repl_cursor_close(written);
  node_free(&b);

  /* Pushed records are in the file: a child writes and ships, reporting
   * after each read how many of its writes it shipped, and is killed; the
   * reopened volume holds them all. */
  node_close(&p);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    node_open(&p, "repl_sw_p", PAR_PLACEMENT_HYBRID);
    par_repl_cursor *c;
    if (par_repl_cursor_open(p.reg, stat_of(p.reg, PAR_REPL_STAT_LOG_LSN) + 1, &c) || par_repl_cursor_ship_written(c))
      _exit(2);
    uint8_t v[512];
    for (uint32_t i = 0; i < N; i++) {
      char key[32];
      int kl = snprintf(key, sizeof key, "kill%05u", i);
      memset(v, (int)(i & 0xff), sizeof v);
      if (par_put(p.reg, key, (size_t)kl, v, sizeof v, 0)) _exit(3);
      size_t n;
      uint64_t l;
      if (i % 100 == 99) {
        do /* everything appended, these writes included */
          if (par_repl_cursor_read(c, buf, sizeof buf, &n, &l)) _exit(4);
        while (n);
        uint32_t shipped = i + 1;
        if (write(fds[1], &shipped, sizeof shipped) != (ssize_t)sizeof shipped) _exit(5);
      }
    }
    kill(getpid(), SIGKILL);
  }
  close(fds[1]);
  uint32_t shipped = 0, got;
  while (read(fds[0], &got, sizeof got) == (ssize_t)sizeof got) shipped = got;
  close(fds[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  assert_int_equal(shipped, N);
  node_open(&p, "repl_sw_p", PAR_PLACEMENT_HYBRID);
  for (uint32_t i = 0; i < shipped; i++) {
    char key[32];
    int kl = snprintf(key, sizeof key, "kill%05u", i);
    uint8_t v[512];
    size_t vl;
    assert_ok(par_get(p.reg, NULL, key, (size_t)kl, v, sizeof v, &vl));
    assert_int_equal(vl, 512);
    assert_int_equal(v[511], (uint8_t)(i & 0xff));
  }
  tu_map_free(&m);
  node_free(&p);
}

/* A primary's log cursor reads what the WAL and the large log just wrote:
 * from the page cache, once a cursor is open (the logs then write through
 * it), not from the device (with direct writes, each record and each large
 * value's page was a device read: about 1.1 KB per SD write). */
static void test_cursor_reads_from_memory(void **state) {
  (void)state;
  node p = {.gc_off = 1};
  node_open(&p, "repl_cm_p", PAR_PLACEMENT_HYBRID);
  if (tu_device_read_bytes() == UINT64_MAX) skip(); /* no I/O accounting */
  tu_map m;
  tu_map_init(&m);
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  uint64_t rng = tu_seed("repl_cm");
  for (int i = 0; i < 6000; i++) {
    put_model(p.reg, &m, &rng, i, 3000); /* small, medium and large pairs */
    if (i % 8 == 0) assert_ok(par_sync(p.reg)); /* small flushes, as a replicated primary makes */
  }
  assert_ok(par_sync(p.reg));
  size_t cap = 1 << 20, len, shipped = 0;
  uint8_t *buf = malloc(cap);
  uint64_t last, before = tu_device_read_bytes();
  do {
    assert_ok(par_repl_cursor_read(c, buf, cap, &len, &last));
    shipped += len;
  } while (len);
  uint64_t read = tu_device_read_bytes() - before;
  fprintf(stderr, "cursor_reads: %zu bytes shipped, %llu read from the device\n", shipped,
          (unsigned long long)read);
  assert_true(shipped > (4u << 20));
  assert_true(read < shipped / 16);
  free(buf);
  par_repl_cursor_close(c);
  tu_map_free(&m);
  node_free(&p);
}

/* A log cursor that has not shipped the records of a large-log segment's
 * values keeps GC from dropping the segment, though its values are dead
 * (overwritten): the cursor reads them back to ship the records. Before,
 * such a read failed ("fails its checksum") once GC had dropped the segment
 * and it was taken again. */
static void test_cursor_holds_gc(void **state) {
  (void)state;
  node p = {0}, s = {0};
  node_open(&p, "repl_cg_p", PAR_PLACEMENT_HYBRID);
  node_open(&s, "repl_cg_b", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  par_stats st;
  for (int version = 1; version <= 4; version++) {
    for (int k = 0; k < 1600; k++) put_large(p.reg, &m, k, version);
    assert_ok(par_flush(p.reg)); /* merges count the older versions as garbage */
  }
  for (int i = 0; i < 2000; i++) {
    assert_ok(par_region_stats(p.reg, &st));
    if (st.gc_runs > 0) break;
    tu_sleep_ms(10);
  }
  assert_true(st.gc_runs > 0); /* collected, and held for the cursor */
  tu_sleep_ms(100);
  assert_int_equal(gc_freed(p.reg), 0);
  for (int k = 0; k < 4000; k++) put_large(p.reg, &m, 2000 + k % 100, 5); /* new segments, none reused */
  assert_ok(par_sync(p.reg));
  ship_log(NULL, &c, s.reg); /* reads every record's value */
  par_repl_cursor_close(c);
  for (int i = 0; i < 2000 && gc_freed(p.reg) == 0; i++) tu_sleep_ms(10);
  assert_true(gc_freed(p.reg) > 0); /* let go once nothing may ship them */
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  verify(s.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
}

static void sleep_at_sync(void *arg) {
  (void)arg;
  tu_sleep_ms(300);
}

static void *flush_thread(void *arg) {
  return (void *)(intptr_t)par_flush(arg);
}

/* A backup that joins after GC collected a segment starts its log past the
 * levels' covered LSN, where records written after the last flush may
 * still point into the segment: it closed while the flush's merge ran,
 * which GC then collected. GC drops a segment only once the levels cover
 * its newest record, so such a cursor reads every value. Before, GC
 * dropped it at once and the segment was taken again: a primary could not
 * send its log to a new backup ("fails its checksum") until its next
 * flush, and never if none came. */
static void test_new_cursor_after_gc(void **state) {
  (void)state;
  node p = {.no_sorted_runs = 1}, s = {0};
  node_open(&p, "repl_ng_p", PAR_PLACEMENT_HYBRID);
  node_open(&s, "repl_ng_b", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  /* The first segment: 600 values, then their new versions (the merge
   * below counts the first as garbage); while that merge is held at its
   * syncs, 300 more values fill the segment and go on into the next. */
  for (int k = 0; k < 600; k++) put_large(p.reg, &m, k, 1);
  assert_ok(par_flush(p.reg));
  for (int k = 0; k < 600; k++) put_large(p.reg, &m, k, 2);
  fault_observe_syncs(sleep_at_sync, NULL);
  pthread_t flusher;
  assert_int_equal(pthread_create(&flusher, NULL, flush_thread, p.reg), 0);
  tu_sleep_ms(100); /* the flush froze L0 */
  for (int k = 1000; k < 1300; k++) put_large(p.reg, &m, k, 3);
  void *flushed;
  assert_int_equal(pthread_join(flusher, &flushed), 0);
  assert_int_equal((int)(intptr_t)flushed, PAR_OK);
  fault_observe_syncs(NULL, NULL);
  assert_int_equal(stat_of(p.reg, PAR_REPL_STAT_COVERED_LSN), 1200); /* the last 300 are past the levels */
  for (int i = 0; i < 2000 && gc_runs(p.reg) == 0; i++) tu_sleep_ms(10);
  assert_true(gc_runs(p.reg) > 0); /* collected: its live values relocated */
  tu_sleep_ms(100);
  for (int k = 2000; k < 8000; k++) put_large(p.reg, &m, k, 4); /* new segments */
  assert_ok(par_sync(p.reg));

  ship_index(p.reg, s.reg);
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, stat_of(s.reg, PAR_REPL_STAT_LOG_LSN) + 1, &c));
  ship_log(NULL, &c, s.reg); /* reads every record's value */
  par_repl_cursor_close(c);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  verify(s.reg, &m);
  assert_int_equal(gc_freed(p.reg), 0); /* kept: the log past the levels points into it */

  assert_ok(par_flush(p.reg)); /* the levels cover it: dropped */
  for (int i = 0; i < 2000 && gc_freed(p.reg) == 0; i++) tu_sleep_ms(10);
  assert_true(gc_freed(p.reg) > 0);
  verify(p.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
}

/* Opens a primary p and two send-index backups, s and fresh, on volumes
 * named after name. */
static void open_with_backups(node *p, node *s, node *fresh, const char *name) {
  char n[64];
  snprintf(n, sizeof n, "%s_p", name);
  node_open(p, n, PAR_PLACEMENT_HYBRID);
  snprintf(n, sizeof n, "%s_b", name);
  node_open(s, n, PAR_PLACEMENT_HYBRID);
  snprintf(n, sizeof n, "%s_f", name);
  node_open(fresh, n, PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(s->reg, PAR_REPL_BACKUP_SEND_INDEX));
  assert_ok(par_repl_set_role(fresh->reg, PAR_REPL_BACKUP_SEND_INDEX));
}

/* A large-log segment the primary's GC dropped while a backup's log copy
 * still lacked the relocations out of it: the backup keeps its copy of the
 * segment, so that its leaves pointing there stay readable once promoted
 * (else those values would be lost with the primary). A backup that never
 * had the segment (it started from levels installed after the drop) is
 * promoted only once its log holds the relocations. */
static void test_send_index_gc_drop(void **state) {
  (void)state;
  node p = {.no_sorted_runs = 1}, s = {0}, fresh = {0};
  open_with_backups(&p, &s, &fresh, "repl_gd");
  tu_map m;
  tu_map_init(&m);
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  /* 1600 values of 1.5 KB fill the first large-log segment and go on into
   * a second; overwriting most of the first segment's makes it garbage. */
  for (int k = 0; k < 1600; k++) put_large(p.reg, &m, k, 1);
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  assert_ok(par_flush(p.reg));
  ship_index(p.reg, s.reg);
  for (int k = 0; k < 1000; k++) put_large(p.reg, &m, k, 2);
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg); /* every write the primary acknowledged */
  assert_ok(par_flush(p.reg));
  ship_index(p.reg, s.reg);
  /* GC relocates the first segment's live values (new LSNs, in L0) and
   * drops it; the backup gets none of the relocations. */
  for (int i = 0; i < 2000 && gc_freed(p.reg) == 0; i++) tu_sleep_ms(10);
  assert_true(gc_freed(p.reg) > 0);
  uint64_t acked = stat_of(s.reg, PAR_REPL_STAT_LOG_LSN);
  assert_true(stat_of(p.reg, PAR_REPL_STAT_LOG_LSN) > acked);
  ship_index(p.reg, s.reg); /* the levels still point into the dropped segment */
  ship_index(p.reg, fresh.reg);
  par_repl_cursor_close(c);

  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  verify(s.reg, &m);

  /* The fresh copy's leaves point nowhere for those keys until its log
   * holds the relocations. */
  assert_par(par_repl_set_role(fresh.reg, PAR_REPL_PRIMARY), PAR_EBUSY);
  assert_int_equal(stat_of(fresh.reg, PAR_REPL_STAT_ROLE), PAR_REPL_BACKUP_SEND_INDEX);
  par_repl_cursor *fc;
  assert_ok(par_repl_cursor_open(p.reg, stat_of(fresh.reg, PAR_REPL_STAT_LOG_LSN) + 1, &fc));
  ship_log(p.reg, &fc, fresh.reg);
  par_repl_cursor_close(fc);
  assert_ok(par_repl_set_role(fresh.reg, PAR_REPL_PRIMARY));
  verify(fresh.reg, &m);

  /* The first backup, written to: a segment its large log had let go
   * would be taken again and overwritten. */
  for (int k = 2000; k < 4000; k++) put_large(s.reg, &m, k, 3);
  assert_ok(par_flush(s.reg));
  verify(s.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
  node_free(&fresh);
}

/* A backup's install lets go of its mirror of a segment the primary's GC
 * dropped; its log copy keeps records before the install's covered LSN
 * that point there (the WAL is freed a segment at a time). Promoted, and
 * its large log written to (the segment taken again), its log is
 * unreadable before that LSN: a cursor opened there, for a backup that
 * joins at LSN 1, is told to ship the levels first. Before, it read the
 * records' values from the reused segment ("fails its checksum"). */
static void test_promoted_log_after_mirror_freed(void **state) {
  (void)state;
  node p = {.no_sorted_runs = 1}, s = {0}, fresh = {0};
  open_with_backups(&p, &s, &fresh, "repl_pm");
  tu_map m;
  tu_map_init(&m);
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  for (int k = 0; k < 1600; k++) put_large(p.reg, &m, k, 1); /* the first segment and part of a second */
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg); /* the backup mirrors them */
  for (int k = 0; k < 1000; k++) put_large(p.reg, &m, k, 2);
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  assert_ok(par_flush(p.reg)); /* the first segment is mostly garbage: GC relocates the rest */
  for (int i = 0; i < 2000 && gc_runs(p.reg) == 0; i++) tu_sleep_ms(10);
  assert_true(gc_runs(p.reg) > 0);
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg); /* the relocations: the cursor's pin moves past the segment */
  for (int i = 0; i < 2000 && gc_freed(p.reg) == 0; i++) tu_sleep_ms(10);
  assert_true(gc_freed(p.reg) > 0);
  assert_ok(par_flush(p.reg));
  ship_index(p.reg, s.reg); /* the layout lacks the segment: the backup lets its mirror go */
  par_repl_cursor_close(c);
  assert_true(stat_of(s.reg, PAR_REPL_STAT_COVERED_LSN) > 1600);

  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  for (int k = 5000; k < 7000; k++) put_large(s.reg, &m, k, 3); /* takes segments again */
  assert_ok(par_sync(s.reg));
  par_repl_cursor *fc;
  assert_ok(par_repl_cursor_open(s.reg, 1, &fc));
  uint8_t buf[64 << 10];
  size_t len;
  uint64_t last;
  assert_par(par_repl_cursor_read(fc, buf, sizeof buf, &len, &last), PAR_ENOENT);
  ship_log(s.reg, &fc, fresh.reg); /* the levels, then the log after them */
  par_repl_cursor_close(fc);
  assert_ok(par_repl_set_role(fresh.reg, PAR_REPL_PRIMARY));
  verify(fresh.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
  node_free(&fresh);
}

/* A send-index backup refuses a caller's writes of every kind, before it
 * logs or keeps anything: its LSNs are the primary's (a write would take
 * the next shipped record's) and its L0 takes its log copy only. Shipping
 * goes on after the refusals, and the promoted copy holds exactly the
 * primary's writes; then it takes writes as a primary. */
static void test_send_index_refuses_writes(void **state) {
  (void)state;
  node p = {0}, s = {0};
  node_open(&p, "repl_rw_p", PAR_PLACEMENT_HYBRID);
  node_open(&s, "repl_rw_b", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  par_region *other;
  assert_ok(par_region_open(s.vol, "other", 1, &other)); /* a primary beside the backup */
  tu_map m;
  tu_map_init(&m);
  uint64_t rng = tu_seed("repl_rw");
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  for (int i = 0; i < 300; i++) put_model(p.reg, &m, &rng, i, 3000);
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  uint64_t log_lsn = stat_of(s.reg, PAR_REPL_STAT_LOG_LSN);
  uint8_t big[5000] = {0};
  assert_par(par_put(s.reg, "x", 1, big, sizeof big, 0), PAR_EINVAL); /* large: nothing appended */
  assert_par(par_put(s.reg, "x", 1, "v", 1, PAR_SYNC), PAR_EINVAL);
  assert_par(par_put(s.reg, "x", 1, "v", 1, PAR_NO_WAL), PAR_EINVAL);
  assert_par(par_delete(s.reg, "key000001", 9, 0), PAR_EINVAL);
  assert_par(par_delete_range(s.reg, "a", 1, "z", 1, 0), PAR_EINVAL);
  par_batch *b;
  assert_ok(par_batch_create(&b));
  assert_ok(par_batch_put(b, "x", 1, "v", 1));
  assert_par(par_write(s.reg, b, 0), PAR_EINVAL);
  par_batch_destroy(b);
  assert_ok(par_batch_create(&b));
  assert_ok(par_batch_put_in(b, other, "y", 1, "v", 1));
  assert_ok(par_batch_put_in(b, s.reg, "x", 1, "v", 1));
  assert_par(par_write_volume(s.vol, b, 0), PAR_EINVAL);
  par_batch_destroy(b);
  size_t vl;
  assert_par(par_get(other, NULL, "y", 1, NULL, 0, &vl), PAR_NOT_FOUND); /* the batch is all or nothing */
  assert_int_equal(stat_of(s.reg, PAR_REPL_STAT_LOG_LSN), log_lsn);
  for (int i = 300; i < 600; i++) put_model(p.reg, &m, &rng, i, 3000);
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  par_repl_cursor_close(c);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  verify(s.reg, &m);
  assert_ok(par_put(s.reg, "x", 1, big, sizeof big, 0));
  tu_map_put(&m, "x", 1, big, sizeof big);
  verify(s.reg, &m);
  assert_ok(par_region_close(other));
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
}

/* What the volume's syncs saw of a region r being promoted while its log
 * copy (up to LSN log_last) was still being replayed into L0. */
typedef struct replay_watch {
  par_region *r;
  uint64_t log_last;
  atomic_int syncs, as_primary;
} replay_watch;

static void watch_replay(void *arg) {
  replay_watch *w = arg;
  if (atomic_load(&w->r->last_lsn) >= w->log_last) return;
  atomic_fetch_add(&w->syncs, 1);
  if (__atomic_load_n(&w->r->repl_role, __ATOMIC_RELAXED) == PAR_REPL_PRIMARY) atomic_fetch_add(&w->as_primary, 1);
}

/* A promotion replays the log copy into L0 taking no LSN of its own, so it
 * is not a primary (whose GC relocations take LSNs) until the replay is
 * done. A relocation during the replay gave a value the installed levels
 * held an LSN past the whole log copy: it shadowed the newer writes of that
 * key replayed after it, and a flush covering that LSN freed the log
 * segments not read yet ("the log copy ends at LSN ..."); both seen about
 * once in 100 runs of a primary shipping to a backup promoted at the end
 * (ReplicationTest.sendIndexOfAHybridRegion). A relocation succeeds only
 * when L0 has room, which a replay seldom leaves, so the test checks the
 * role every sync during the replay sees (its flushes sync), then the
 * values: the levels point into a mirrored segment mostly garbage, the log
 * copy is several L0s of other keys, then newer values of the segment's
 * live keys. */
static void test_promotion_takes_no_lsn(void **state) {
  (void)state;
  node p = {.gc_off = 1, .no_sorted_runs = 1}, s = {.no_sorted_runs = 1, .l0_size = 256 << 10};
  node_open(&p, "repl_pl_p", PAR_PLACEMENT_HYBRID);
  node_open(&s, "repl_pl_b", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_BACKUP_SEND_INDEX));
  tu_map m;
  tu_map_init(&m);
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, 1, &c));
  /* The first large-log segment holds keys 0..~1300; 0..999 overwritten. */
  for (int k = 0; k < 1600; k++) put_large(p.reg, &m, k, 1);
  assert_ok(par_flush(p.reg));
  for (int k = 0; k < 1000; k++) put_large(p.reg, &m, k, 2);
  assert_ok(par_flush(p.reg)); /* the merge into the levels counts the garbage */
  ship_log(p.reg, &c, s.reg);
  ship_index(p.reg, s.reg);
  uint64_t rng = tu_seed("repl_pl");
  for (int i = 0; i < 20000; i++) put_model(p.reg, &m, &rng, i, 800); /* small and medium: 8 MB */
  for (int k = 1000; k < 1600; k++) put_large(p.reg, &m, k, 3);
  assert_ok(par_sync(p.reg));
  ship_log(p.reg, &c, s.reg);
  par_repl_cursor_close(c);
  replay_watch w = {.r = s.reg, .log_last = stat_of(s.reg, PAR_REPL_STAT_LOG_LSN)};
  fault_observe_syncs(watch_replay, &w);
  assert_ok(par_repl_set_role(s.reg, PAR_REPL_PRIMARY));
  fault_observe_syncs(NULL, NULL);
  assert_true(atomic_load(&w.syncs) > 0);
  assert_int_equal(atomic_load(&w.as_primary), 0);
  verify(s.reg, &m);
  for (int i = 0; i < 2000 && gc_runs(s.reg) == 0; i++) tu_sleep_ms(10);
  assert_true(gc_runs(s.reg) > 0); /* the promoted region collects */
  verify(s.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&s);
}

/* Writes every pair of p's snapshot into b as writes without the log (the
 * state transfer by snapshot); returns the pairs written. */
static size_t load_snapshot(par_region *p, par_snapshot *snap, par_region *b) {
  par_scanner *sc;
  assert_ok(par_scanner_open(p, snap, &sc));
  size_t n = 0;
  assert_ok(par_scanner_seek(sc, NULL, 0, PAR_SEEK_FIRST));
  while (par_scanner_valid(sc)) {
    const void *k, *v;
    size_t kl, vl;
    assert_ok(par_scanner_key(sc, &k, &kl));
    assert_ok(par_scanner_value(sc, &v, &vl));
    assert_ok(par_put(b, k, kl, v, vl, PAR_NO_WAL));
    n++;
    assert_ok(par_scanner_next(sc));
  }
  par_scanner_close(sc);
  return n;
}

/* A build-index backup made from a snapshot of a hybrid primary (values in
 * place, in the medium log, in the large log, larger than a segment), whose
 * log was trimmed past LSN 1: loaded, rebased, fed the log from the
 * snapshot's LSN on, reopened, promoted, compacted, equal to the model
 * throughout; writes after the snapshot reach the backup through the log
 * only. */
static void test_snapshot_transfer(void **state) {
  (void)state;
  node p = {0}, b = {0};
  node_open(&p, "repl_load_p", PAR_PLACEMENT_HYBRID);
  node_open(&b, "repl_load_b", PAR_PLACEMENT_HYBRID);
  assert_ok(par_repl_set_role(b.reg, PAR_REPL_BACKUP_BUILD_INDEX));
  tu_map m;
  tu_map_init(&m);
  uint64_t rng = tu_seed("repl_load");
  static const size_t big[] = {1u << 20, (3u << 20) + 17}; /* the large log; a run of segments */
  for (int i = 0; i < 2; i++) {
    uint8_t *v = malloc(big[i]);
    char key[16];
    int kl = snprintf(key, sizeof key, "big%d", i);
    tu_fill_pattern(v, big[i], 77u + (uint64_t)i);
    assert_ok(par_put(p.reg, key, (size_t)kl, v, big[i], 0));
    tu_map_put(&m, key, (size_t)kl, v, big[i]);
    free(v);
  }
  delete_range_model(p.reg, &m, 100, 300);
  /* Until flushes trimmed the log past LSN 1: a backup cannot start from it. */
  int i = 0, trimmed = 0;
  for (int round = 0; round < 20 && !trimmed; round++) {
    for (int k = 0; k < 2000; k++, i++) put_model(p.reg, &m, &rng, i, 3000);
    assert_ok(par_flush(p.reg));
    par_repl_cursor *c1;
    assert_ok(par_repl_cursor_open(p.reg, 1, &c1));
    size_t len;
    uint64_t last;
    uint8_t small[16];
    int rc = par_repl_cursor_read(c1, small, sizeof small, &len, &last);
    par_repl_cursor_close(c1);
    trimmed = rc == PAR_ENOENT;
  }
  assert_true(trimmed);

  /* The cursor is pinned before the snapshot, then moves past it. */
  par_repl_cursor *c;
  assert_ok(par_repl_cursor_open(p.reg, stat_of(p.reg, PAR_REPL_STAT_L0_LSN) + 1, &c));
  for (int k = 0; k < 500; k++, i++) put_model(p.reg, &m, &rng, i, 3000);
  par_snapshot *snap;
  uint64_t x;
  assert_ok(par_repl_snapshot(p.reg, &snap, &x));
  assert_int_equal(x, stat_of(p.reg, PAR_REPL_STAT_LOG_LSN));
  tu_map at_x;
  tu_map_copy(&at_x, &m);
  for (int k = 0; k < 1500; k++, i++) put_model(p.reg, &m, &rng, i, 3000); /* after it: the log's */
  size_t pairs = load_snapshot(p.reg, snap, b.reg);
  par_snapshot_release(snap);
  assert_int_equal(pairs, at_x.n);
  par_stats st;
  assert_ok(par_region_stats(b.reg, &st));
  assert_true(st.large_puts > 0 && st.large_log_bytes_appended > big[1]); /* the backup's own large log */
  assert_true(stat_of(b.reg, PAR_REPL_STAT_LOG_LSN) <= x);
  assert_ok(par_repl_rebase(b.reg, x));
  assert_int_equal(stat_of(b.reg, PAR_REPL_STAT_LOG_LSN), x);
  assert_int_equal(stat_of(b.reg, PAR_REPL_STAT_COVERED_LSN), x);
  verify(b.reg, &at_x);
  tu_map_free(&at_x);
  par_repl_cursor *after;
  assert_ok(par_repl_cursor_open(p.reg, x + 1, &after));
  par_repl_cursor_close(c);
  assert_ok(par_sync(p.reg));
  ship_log(NULL, &after, b.reg);
  verify(b.reg, &m);

  /* Refusals: below what the region holds, a region that is no build-index backup. */
  assert_par(par_repl_rebase(b.reg, x - 1), PAR_EINVAL);
  assert_par(par_repl_rebase(p.reg, stat_of(p.reg, PAR_REPL_STAT_LOG_LSN)), PAR_EINVAL);
  assert_par(par_repl_snapshot(p.reg, NULL, &x), PAR_EINVAL);

  /* A close (crash-like) keeps the loaded state and the log after it. The
   * region reopens a PRIMARY: its GC, held off until the role is set, would
   * otherwise relocate values at LSNs of its own, which the role change
   * refuses (replication.h). */
  uint64_t shipped = stat_of(b.reg, PAR_REPL_STAT_LOG_LSN);
  node_close(&b);
  b.gc_off = 1;
  node_open(&b, "repl_load_b", PAR_PLACEMENT_HYBRID);
  assert_int_equal(stat_of(b.reg, PAR_REPL_STAT_LOG_LSN), shipped);
  assert_ok(par_repl_set_role(b.reg, PAR_REPL_BACKUP_BUILD_INDEX));
  for (int k = 0; k < 1000; k++, i++) put_model(p.reg, &m, &rng, i, 3000);
  assert_ok(par_sync(p.reg));
  ship_log(NULL, &after, b.reg);
  par_repl_cursor_close(after);
  assert_ok(par_repl_set_role(b.reg, PAR_REPL_PRIMARY));
  verify(b.reg, &m);
  assert_ok(par_compact(b.reg));
  verify(b.reg, &m);
  for (int k = 0; k < 500; k++, i++) put_model(b.reg, &m, &rng, i, 3000); /* it serves */
  /* Having taken writes of its own, it cannot become a backup again. */
  assert_par(par_repl_set_role(b.reg, PAR_REPL_BACKUP_BUILD_INDEX), PAR_EBUSY);
  node_close(&b);
  b.gc_off = 0;
  node_open(&b, "repl_load_b", PAR_PLACEMENT_HYBRID);
  verify(b.reg, &m);
  tu_map_free(&m);
  node_free(&p);
  node_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_log_stream),
      cmocka_unit_test(test_apply_without_sync),
      cmocka_unit_test(test_cursor_pins_the_log),
      cmocka_unit_test(test_send_index),
      cmocka_unit_test(test_send_index_range_deletes),
      cmocka_unit_test(test_outdated_layout),
      cmocka_unit_test(test_shipping_interleavings),
      cmocka_unit_test(test_rebuilt_tree_not_taken_as_held),
      cmocka_unit_test(test_failed_promotion_stays_backup),
      cmocka_unit_test(test_send_index_refusals),
      cmocka_unit_test(test_send_index_refuses_writes),
      cmocka_unit_test(test_send_index_hybrid),
      cmocka_unit_test(test_send_index_gc_drop),
      cmocka_unit_test(test_promotion_takes_no_lsn),
      cmocka_unit_test(test_cursor_holds_gc),
      cmocka_unit_test(test_new_cursor_after_gc),
      cmocka_unit_test(test_promoted_log_after_mirror_freed),
      cmocka_unit_test(test_send_index_mirror_at_apply),
      cmocka_unit_test(test_send_index_mirror_power_cut),
      cmocka_unit_test(test_send_index_mirror_bytes),
      cmocka_unit_test(test_send_index_huge_values),
      cmocka_unit_test(test_send_index_shares_medium),
      cmocka_unit_test(test_install_writes_used_blocks),
      cmocka_unit_test(test_export_reads_each_segment_once),
      cmocka_unit_test(test_cursor_reads_from_memory),
      cmocka_unit_test(test_ship_written),
      cmocka_unit_test(test_ship_written_power_cut),
      cmocka_unit_test(test_snapshot_transfer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
