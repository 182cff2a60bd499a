/* The read path: snapshots, point lookups (par_get, par_exists,
 * par_snapshot_get_view) and the reads of values that live in a log, which
 * scanners share. A lookup stops at the newest version it finds, from the
 * active L0 down to the last level. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/internal.h"
#include "io/mapguard.h"
#include "util/clock.h"
#include "util/status.h"

/* A large record still in a tail buffer: 1 and a copy in *owned, 0 if the
 * record is on the device, or an error. */
static int read_tail(par_region *r, const tree_entry *e, vptr p, const uint8_t **value, uint32_t *value_len,
                     uint8_t **owned) {
  vlog *heads[2] = {&r->hot, &r->cold};
  for (int i = 0; i < 2 && e->cat == CAT_LARGE; i++) {
    int rc = vlog_read_buffered(heads[i], p, owned, value_len);
    if (rc != 0) {
      if (rc == 1) *value = *owned;
      return rc;
    }
  }
  return 0;
}

/* Checks that record rec, read for entry e at p, is e's. */
static int check_owner(const tree_entry *e, vptr p, const vlog_record *rec) {
  if (rec->key_len != entry_key_len(e) || memcmp(rec->key, e->key, e->key_len) != 0)
    return par_error(PAR_ECORRUPT, "large-log record at %u:%u belongs to another key", p.seg, p.off);
  return PAR_OK;
}

int region_read_large(par_region *r, const tree_entry *e, const uint8_t **value, uint32_t *value_len,
                      uint8_t **owned) {
  *owned = NULL;
  if (e->value_len != VPTR_SIZE) return par_error(PAR_ECORRUPT, "malformed value-log pointer");
  vptr p = vptr_decode(e->value);
  int rc = read_tail(r, e, p, value, value_len, owned);
  if (rc) return rc < 0 ? rc : PAR_OK;
  vlog_record rec;
  rc = vlog_read_mapped(&r->vol->file, r->id, p, &rec);
  if (!rc) rc = check_owner(e, p, &rec);
  if (rc) return rc;
  *value = rec.value;
  *value_len = rec.value_len;
  return PAR_OK;
}

int region_read_value(par_region *r, const tree_entry *e, const uint8_t **value, uint32_t *value_len,
                      uint8_t **owned) {
  assert(e->cat == CAT_LARGE || e->cat == CAT_MEDIUM);
  atomic_fetch_add(&r->stats.log_value_reads[e->cat == CAT_LARGE], 1);
  return region_read_large(r, e, value, value_len, owned);
}

int region_read_value_copy(par_region *r, const tree_entry *e, const uint8_t **value, uint32_t *value_len,
                           uint8_t **owned) {
  assert(e->cat == CAT_LARGE || e->cat == CAT_MEDIUM);
  atomic_fetch_add(&r->stats.log_value_reads[e->cat == CAT_LARGE], 1);
  *owned = NULL;
  if (e->value_len != VPTR_SIZE) return par_error(PAR_ECORRUPT, "malformed value-log pointer");
  vptr p = vptr_decode(e->value);
  int rc = read_tail(r, e, p, value, value_len, owned);
  if (rc) return rc < 0 ? rc : PAR_OK;
  vlog_record rec;
  uint8_t *buf;
  rc = vlog_read_copy(&r->vol->file, r->id, p, &buf, &rec);
  if (rc) return rc;
  /* The caller's before check_owner reads e's key, which may be in the
   * volume's map: a fault there leaves through mapguard's longjmp, and the
   * copy must not be lost with this frame (test_mapfault under ASan). */
  *owned = buf;
  if ((rc = check_owner(e, p, &rec)) != PAR_OK) {
    free(buf);
    *owned = NULL;
    return rc;
  }
  *value = rec.value;
  *value_len = rec.value_len;
  return PAR_OK;
}

PAR_API int par_snapshot_create(par_region *r, par_snapshot **out) {
  if (!r || !out) return par_error(PAR_EINVAL, "par_snapshot_create: NULL argument");
  par_snapshot *s = calloc(1, sizeof *s);
  if (!s) return par_error(PAR_ENOMEM, "snapshot");
  s->region = r;
  pthread_mutex_init(&s->copies_mu, NULL);
  s->v = region_acquire_view(r, &s->lsn);
  *out = s;
  return PAR_OK;
}

PAR_API void par_snapshot_release(par_snapshot *s) {
  if (!s) return;
  view_unref(s->v);
  for (uint32_t i = 0; i < s->ncopies; i++) free(s->copies[i]);
  free(s->copies);
  pthread_mutex_destroy(&s->copies_mu);
  free(s);
}

int snapshot_value(par_snapshot *s, const tree_entry *e, const uint8_t **value, uint32_t *value_len) {
  *value = e->value;
  *value_len = e->value_len;
  if (e->cat != CAT_LARGE && e->cat != CAT_MEDIUM) return PAR_OK;
  uint8_t *owned = NULL;
  int rc = region_read_value(s->region, e, value, value_len, &owned);
  if (!rc && owned) {
    pthread_mutex_lock(&s->copies_mu);
    uint8_t **c = realloc(s->copies, (s->ncopies + 1) * sizeof *c);
    if (c) {
      s->copies = c;
      s->copies[s->ncopies++] = owned;
    } else {
      rc = par_error(PAR_ENOMEM, "snapshot value copy");
      free(owned);
    }
    pthread_mutex_unlock(&s->copies_mu);
  }
  return rc;
}

typedef struct view_lookup {
  par_snapshot *s;
  const void *key;
  size_t key_len;
  const uint8_t *value;
  uint32_t value_len;
} view_lookup;

/* Guarded (io/mapguard.h): a value copy it makes is the snapshot's. */
static int snapshot_lookup(void *arg) {
  view_lookup *l = arg;
  tree_entry e;
  int rc = region_lookup(l->s->region, l->s->v, l->s->lsn, l->key, l->key_len, NULL, &e);
  return rc ? rc : snapshot_value(l->s, &e, &l->value, &l->value_len);
}

/* The snapshot's view keeps everything a value can live in: its memtables,
 * its trees' segments (and their medium sets), and the large-log segments
 * GC would free only after the view is gone. */
PAR_API int par_snapshot_get_view(par_snapshot *s, const void *key, size_t key_len, const void **value,
                                  size_t *value_len) {
  if (!s || !value || !value_len) return par_error(PAR_EINVAL, "par_snapshot_get_view: NULL argument");
  int rc = region_check_key(key, key_len);
  if (rc) return rc;
  view_lookup l = {.s = s, .key = key, .key_len = key_len};
  rc = mapguard_run(snapshot_lookup, &l);
  atomic_fetch_add(&s->region->stats.gets, 1);
  if (rc) return rc;
  *value = l.value;
  *value_len = l.value_len;
  return PAR_OK;
}

uint64_t read_wait_ns = 50000;

void region_note_read(par_region *r, uint64_t t0) {
  uint64_t now = clock_mono_ns();
  if (now - t0 > read_wait_ns)
    atomic_store_explicit(&r->reads_waited_until, now + READS_WAITED_NS, memory_order_relaxed);
}

int region_reads_wait(par_region *r) {
  if (read_wait_ns == 0 || read_wait_ns == UINT64_MAX) return read_wait_ns == 0;
  return clock_mono_ns() < atomic_load_explicit(&r->reads_waited_until, memory_order_relaxed);
}

int view_l0_holds(const view *w, uint64_t lsn, const void *key, size_t key_len) {
  memtable *mts[2] = {w->active, w->frozen};
  for (int i = 0; i < 2; i++)
    if (mts[i] && (memtable_get(mts[i], key, key_len, lsn) || memtable_range_hides(mts[i], key, key_len, lsn, 0)))
      return 1;
  return 0;
}

/* Sources newest first; the first that has the key decides. A range
 * tombstone of an L0 hides older versions in that L0 and everything below
 * it; a tree's hides the trees below it (its own entries are newer). */
int region_lookup(par_region *r, const view *w, uint64_t lsn, const void *key, size_t key_len,
                  uint8_t *leaf_buf, tree_entry *e) {
  memtable *mts[2] = {w->active, w->frozen};
  for (int i = 0; i < 2; i++) {
    if (!mts[i]) continue;
    const mt_entry *m = memtable_get(mts[i], key, key_len, lsn);
    if (memtable_range_hides(mts[i], key, key_len, lsn, m ? m->lsn : 0)) return PAR_NOT_FOUND;
    if (m) {
      *e = (tree_entry){.cat = mt_category(m), .key = mt_key(m), .key_len = m->key_len,
                        .value = mt_value(m), .value_len = m->value_len};
      return e->cat == CAT_TOMBSTONE ? PAR_NOT_FOUND : PAR_OK;
    }
  }
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      dtree *t = w->tree[i][j];
      if (!t) continue;
      int rc = tree_get(&r->keys, &t->d, &t->checks, key, key_len, leaf_buf, e);
      if (rc == PAR_NOT_FOUND && range_set_covers(&t->d.rtombs, key, key_len)) return PAR_NOT_FOUND;
      if (rc == PAR_NOT_FOUND) continue;
      if (rc) return rc;
      return e->cat == CAT_TOMBSTONE ? PAR_NOT_FOUND : PAR_OK;
    }
  return PAR_NOT_FOUND;
}

typedef struct get_call {
  par_region *r;
  const view *w;
  uint64_t lsn;
  const void *key;
  size_t key_len;
  void *buf;
  size_t cap;
  size_t *value_len;
  uint8_t *owned; /* a value copied out of a tail buffer or the log: the caller frees it */
  uint8_t *leaf_buf; /* LEAF_SIZE bytes to read leaves into, or NULL: the map (leaves and values) */
} get_call;

/* The lookup and the copy into the caller's buffer, guarded
 * (io/mapguard.h): the value is read through the map. */
static int get_guarded(void *arg) {
  get_call *g = arg;
  tree_entry e;
  int rc = region_lookup(g->r, g->w, g->lsn, g->key, g->key_len, g->leaf_buf, &e);
  if (rc || !g->value_len) return rc;
  const uint8_t *v = e.value;
  uint32_t vl = e.value_len;
  /* Once reads wait (leaves read with pread), the value is read the same
   * way, into a copy: its page then has the recency the MADV_RANDOM map's
   * pages lack, so a value read again stays cached while one read once is
   * reclaimed first, and reclaim takes the page without unmapping it. */
  if (e.cat == CAT_LARGE || e.cat == CAT_MEDIUM)
    rc = g->leaf_buf ? region_read_value_copy(g->r, &e, &v, &vl, &g->owned)
                     : region_read_value(g->r, &e, &v, &vl, &g->owned);
  if (rc) return rc;
  *g->value_len = vl;
  if (g->buf) memcpy(g->buf, v, vl < g->cap ? vl : g->cap);
  return PAR_OK;
}

static int read_common(par_region *r, const par_snapshot *snap, const void *key, size_t key_len,
                       void *buf, size_t cap, size_t *value_len) {
  int rc = region_check_key(key, key_len);
  if (rc) return rc;
  if (snap && snap->region != r) return par_error(PAR_EINVAL, "snapshot belongs to another region");
  get_call g = {.r = r, .key = key, .key_len = key_len, .buf = buf, .cap = cap, .value_len = value_len};
  view *w = snap ? snap->v : region_acquire_view(r, &g.lsn);
  if (snap) g.lsn = snap->lsn;
  g.w = w;
  /* Data larger than memory: leaves read with pread into this buffer keep
   * their pages' recency in the page cache, which pages of the MADV_RANDOM
   * map do not get, and leave them unmapped, so reclaiming them is cheap
   * (docs/architecture.md, Read path). With the data in memory the map is
   * cheaper: a system call and an 8 KiB copy per level cost more than the
   * search they serve. */
  uint8_t leaf_buf[LEAF_SIZE];
  g.leaf_buf = region_reads_wait(r) ? leaf_buf : NULL;
  uint64_t t0 = clock_mono_ns();
  rc = mapguard_run(get_guarded, &g);
  region_note_read(r, t0);
  free(g.owned);
  if (!snap) view_unref(w);
  atomic_fetch_add(&r->stats.gets, 1);
  return rc;
}

PAR_API int par_get(par_region *r, const par_snapshot *snap, const void *key, size_t key_len, void *buf,
                    size_t cap, size_t *value_len) {
  if (!r || !value_len) return par_error(PAR_EINVAL, "par_get: NULL region or value_len");
  if (!buf && cap) return par_error(PAR_EINVAL, "par_get: NULL buffer with a capacity");
  return read_common(r, snap, key, key_len, buf, cap, value_len);
}

PAR_API int par_exists(par_region *r, const par_snapshot *snap, const void *key, size_t key_len) {
  if (!r) return par_error(PAR_EINVAL, "par_exists: NULL region");
  return read_common(r, snap, key, key_len, NULL, 0, NULL);
}
