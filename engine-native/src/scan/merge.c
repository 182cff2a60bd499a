#include "scan/merge.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/segalloc.h"
#include "log/vlog.h"
#include "log/wal.h"
#include "scan/rangedel.h"
#include "scan/readahead.h"
#include "util/coding.h"
#include "util/status.h"

/* A memtable source collects its entries in batches (under the memtable's
 * read lock, once per batch): MT_FIRST after a seek, twice as many at each
 * refill, up to MT_BATCH. A scan's seek collects in every L0, and L0 holds
 * a small share of the keys as a rule, so a short scan takes a few entries
 * of it: collecting 64 each time touched 64 entries (a cache miss each) for
 * the two or three it used (SD Run E under 1 GiB: memtable_collect 1.9% of
 * all samples, docs/benchmarks.md). */
#define MT_FIRST 8
#define MT_BATCH 64

/* ---- memtable source ---- */

typedef struct mt_source {
  kv_source base;
  memtable *m;
  uint64_t snap;
  shadowed_fn shadowed;
  void *arg;
  int rev; /* the batch is in descending key order */
  const mt_entry *batch[MT_BATCH];
  uint32_t n, i;
  uint32_t want; /* the size of the batch asked for: fewer entries mean the end */
} mt_source;

static void mt_load(mt_source *s) {
  s->base.valid = s->i < s->n;
  if (!s->base.valid) return;
  const mt_entry *e = s->batch[s->i];
  s->base.lsn = e->lsn;
  s->base.e = (tree_entry){.cat = mt_category(e), .key = mt_key(e), .key_len = e->key_len,
                           .value = mt_value(e), .value_len = e->value_len};
}

static void mt_shadowed(void *arg, const mt_entry *e) {
  mt_source *s = arg;
  tree_entry t = {.cat = mt_category(e), .key = mt_key(e), .key_len = e->key_len,
                  .value = mt_value(e), .value_len = e->value_len};
  s->shadowed(s->arg, &t);
}

/* Collects the next batch of s->want entries from key on, in the
 * direction of s->rev. */
static void mt_collect(mt_source *s, const void *key, size_t key_len, int exclusive) {
  assert(s->want >= 1 && s->want <= MT_BATCH);
  s->n = s->rev ? memtable_collect_rev(s->m, key, key_len, exclusive, s->snap, s->batch, s->want)
                : memtable_collect(s->m, key, key_len, exclusive, s->snap, s->batch, s->want,
                                   s->shadowed ? mt_shadowed : NULL, s);
  s->i = 0;
  mt_load(s);
}

static int mt_seek(kv_source *b, const void *key, size_t key_len, int exclusive) {
  mt_source *s = (mt_source *)b;
  s->rev = 0;
  s->want = MT_FIRST;
  mt_collect(s, key, key_len, exclusive);
  return PAR_OK;
}

static int mt_seek_rev(kv_source *b, const void *key, size_t key_len, int exclusive) {
  mt_source *s = (mt_source *)b;
  assert(!s->shadowed); /* compactions only go forward */
  s->rev = 1;
  s->want = MT_FIRST;
  mt_collect(s, key, key_len, exclusive);
  return PAR_OK;
}

/* Steps through the batch in its direction; a full batch used up is
 * followed by the next one, collected after (or before) its last key. */
static int mt_step(mt_source *s) {
  if (!s->base.valid) return PAR_OK;
  if (++s->i < s->n) {
    mt_load(s);
    return PAR_OK;
  }
  const mt_entry *last = s->batch[s->n - 1]; /* arena memory: stays valid */
  if (s->n < s->want) {
    s->base.valid = 0;
    return PAR_OK;
  }
  s->want = s->want < MT_BATCH / 2 ? s->want * 2 : MT_BATCH;
  mt_collect(s, mt_key(last), last->key_len, 1);
  return PAR_OK;
}

static int mt_next(kv_source *b) {
  assert(!((mt_source *)b)->rev || !b->valid); /* the merge seeks to change direction */
  return mt_step((mt_source *)b);
}

static int mt_prev(kv_source *b) {
  assert(((mt_source *)b)->rev || !b->valid);
  return mt_step((mt_source *)b);
}

/* A span's look at the entries j ahead of the current one: where the batch
 * at hand ends before them and more may follow, it is regathered from the
 * current entry as a full batch (once: where L0 holds many of a span's
 * keys, its first batch ends before the span does). Returns the entries
 * after the current one at hand. */
static uint32_t mt_widen(mt_source *s, uint32_t j) {
  assert(s->base.valid && s->i < s->n);
  if (j > s->n - 1 - s->i && s->n == s->want && s->want < MT_BATCH) {
    const mt_entry *cur = s->batch[s->i]; /* arena memory: stays valid */
    s->want = MT_BATCH;
    mt_collect(s, mt_key(cur), cur->key_len, 0);
    assert(s->base.valid && s->batch[0] == cur);
  }
  return s->n - 1 - s->i;
}

/* Within the batch at hand (mt_widen): past it, the span learns nothing
 * of this L0. */
static int mt_key_ahead(kv_source *b, int reverse, uint32_t j, const uint8_t **key, uint16_t *key_len) {
  mt_source *s = (mt_source *)b;
  assert(reverse == s->rev);
  uint32_t left = mt_widen(s, j);
  const mt_entry *e = s->batch[j <= left ? s->i + j : s->n - 1];
  *key = mt_key(e);
  *key_len = e->key_len;
  return j <= left;
}

/* L0 holds its large values' pointers, not the values: after an open,
 * which replayed L0 from the WAL, their records are on the device like a
 * tree's, and so are those written since with direct I/O, which leaves
 * nothing in the page cache. A record still in a log's tail buffer is read
 * from there; its request reads what the file holds, and the write that
 * follows replaces those pages (a buffered write) or drops them (the
 * kernel invalidates the range a direct write covered). */
static void mt_ask_records(kv_source *b, const par_file *f, uint32_t n, const scan_hidden *hidden) {
  mt_source *s = (mt_source *)b;
  if (n) (void)mt_widen(s, n - 1);
  for (uint32_t j = 0; j < n && s->i + j < s->n; j++) {
    if (hidden && j < SCAN_RA_HIDDEN_MAX && ((*hidden)[j / 64] >> (j % 64) & 1)) continue;
    const mt_entry *e = s->batch[s->i + j];
    if (mt_category(e) != CAT_LARGE || e->value_len != VPTR_SIZE) continue;
    vptr p = vptr_decode(mt_value(e));
    file_prefetch(f, seg_offset(p.seg) + p.off, p.size < SCAN_RA_MAX_RECORD ? p.size : SCAN_RA_MAX_RECORD);
  }
}

static void mt_close(kv_source *b) {
  mt_source *s = (mt_source *)b;
  memtable_unref(s->m);
  free(s);
}

kv_source *memtable_source(memtable *m, uint64_t snap, shadowed_fn shadowed, void *arg) {
  mt_source *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  memtable_ref(m);
  s->m = m;
  s->snap = snap;
  s->shadowed = shadowed;
  s->arg = arg;
  s->base.next = mt_next;
  s->base.seek = mt_seek;
  s->base.prev = mt_prev;
  s->base.seek_rev = mt_seek_rev;
  s->base.key_ahead = mt_key_ahead;
  s->base.ask_records = mt_ask_records;
  s->base.close = mt_close;
  return &s->base;
}

/* ---- tree cursor source ---- */

typedef struct cursor_source {
  kv_source base;
  dtree *t;
  tree_cursor c;
  scan_readahead ra;
} cursor_source;

static int cur_sync(cursor_source *s, int rc) {
  s->base.valid = !rc && tree_cursor_valid(&s->c);
  if (s->base.valid) s->base.e = s->c.cur;
  return rc;
}

static int cur_seek(kv_source *b, const void *key, size_t key_len, int exclusive) {
  cursor_source *s = (cursor_source *)b;
  return cur_sync(s, tree_cursor_seek(&s->c, key, key_len, exclusive));
}

static int cur_next(kv_source *b) {
  cursor_source *s = (cursor_source *)b;
  return cur_sync(s, tree_cursor_next(&s->c));
}

static int cur_seek_rev(kv_source *b, const void *key, size_t key_len, int exclusive) {
  cursor_source *s = (cursor_source *)b;
  return cur_sync(s, tree_cursor_seek_rev(&s->c, key, key_len, exclusive));
}

static int cur_prev(kv_source *b) {
  cursor_source *s = (cursor_source *)b;
  return cur_sync(s, tree_cursor_prev(&s->c));
}

static void cur_readahead(kv_source *b, int reverse) {
  cursor_source *s = (cursor_source *)b;
  scan_readahead_step(&s->ra, &s->c, reverse);
}

static void cur_readahead_span(kv_source *b, int reverse, uint32_t n, const uint8_t *bound, uint16_t bound_len,
                               const scan_hidden *hidden) {
  cursor_source *s = (cursor_source *)b;
  scan_readahead_span(&s->ra, &s->c, reverse, n, bound, bound_len, hidden);
}

static int cur_key_ahead(kv_source *b, int reverse, uint32_t j, const uint8_t **key, uint16_t *key_len) {
  cursor_source *s = (cursor_source *)b;
  return scan_key_ahead(&s->c, reverse, j, key, key_len);
}

static void cur_close(kv_source *b) {
  cursor_source *s = (cursor_source *)b;
  dtree_unref(s->t);
  free(s);
}

kv_source *tree_cursor_source(const key_source *ks, dtree *t) {
  cursor_source *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  dtree_ref(t);
  s->t = t;
  tree_cursor_init(&s->c, ks, &t->d, &t->checks);
  scan_readahead_init(&s->ra, ks->file);
  s->base.next = cur_next;
  s->base.seek = cur_seek;
  s->base.prev = cur_prev;
  s->base.seek_rev = cur_seek_rev;
  s->base.close = cur_close;
  s->base.readahead = cur_readahead;
  s->base.readahead_span = cur_readahead_span;
  s->base.key_ahead = cur_key_ahead;
  s->base.entries = t->d.entries;
  return &s->base;
}

/* ---- tree stream source ---- */

typedef struct stream_source {
  kv_source base;
  tree_stream st;
} stream_source;

static int st_sync(stream_source *s, int rc) {
  s->base.valid = !rc && s->st.valid;
  s->base.bytes_read = s->st.bytes_read;
  if (s->base.valid) s->base.e = s->st.cur;
  return rc;
}

static int st_next(kv_source *b) {
  stream_source *s = (stream_source *)b;
  return st_sync(s, tree_stream_next(&s->st));
}

static void st_close(kv_source *b) {
  stream_source *s = (stream_source *)b;
  tree_stream_close(&s->st);
  free(s);
}

int tree_stream_source(par_file *f, const key_source *ks, const tree_desc *t, kv_source **out) {
  *out = NULL;
  stream_source *s = calloc(1, sizeof *s);
  if (!s) return par_error(PAR_ENOMEM, "compaction source");
  s->base.next = st_next;
  s->base.close = st_close;
  int rc = st_sync(s, tree_stream_open(&s->st, f, ks, t));
  if (rc) {
    st_close(&s->base);
    return rc;
  }
  *out = &s->base;
  return PAR_OK;
}

/* ---- merge ---- */

/* Sets *best to the source whose key comes first in the merge's direction
 * (the smallest forward, the largest in reverse); -1 when all are done. */
static int best_source(merge_iter *m, int *best) {
  *best = -1;
  for (int i = 0; i < m->n; i++) {
    kv_source *s = m->src[i];
    if (!s->valid) continue;
    int c = -1;
    int rc = *best < 0 ? PAR_OK : entry_cmp(&s->e, &m->src[*best]->e, &c);
    if (rc) return rc;
    if (m->reverse) c = -c;
    if (c < 0 || *best < 0) *best = i; /* ties keep the lower index: the newer source */
  }
  return PAR_OK;
}

static int step(kv_source *s, int reverse) { return reverse ? s->prev(s) : s->next(s); }

/* Moves every source positioned on the current key one step on. Every
 * other source is already past it in the merge's direction. */
static int skip_current(merge_iter *m) {
  tree_entry *cur = &m->src[m->cur]->e;
  /* Advance the owner last: cur's key points into its buffer. */
  for (int i = 0; i < m->n; i++) {
    kv_source *s = m->src[i];
    if (i == m->cur || !s->valid) continue;
    int c;
    int rc = entry_cmp(&s->e, cur, &c);
    if (rc) return rc;
    assert(m->reverse ? c <= 0 : c >= 0);
    if (c == 0) {
      if (m->shadowed) m->shadowed(m->shadowed_arg, &s->e);
      rc = step(s, m->reverse);
      if (rc) return rc;
    }
  }
  return step(m->src[m->cur], m->reverse);
}

/* Whether a range tombstone hides the current entry (whose key it
 * resolves first when the leaf holds a prefix of it). */
static int range_hidden(merge_iter *m, int *hidden) {
  *hidden = 0;
  if (!m->rd || !m->rd->any) return PAR_OK;
  kv_source *s = m->src[m->cur];
  int rc = entry_resolve_key(&s->e);
  if (!rc) *hidden = rdel_hides(m->rd, m->cur, s->lsn, s->e.key, s->e.key_len);
  return rc;
}

int merge_settle(merge_iter *m) {
  for (;;) {
    int hidden = 0;
    int rc = best_source(m, &m->cur);
    if (!rc && m->cur >= 0) rc = range_hidden(m, &hidden);
    if (!rc && (m->cur < 0 || (!hidden && (!m->skip_tombstones || merge_entry(m)->cat != CAT_TOMBSTONE))))
      return PAR_OK;
    if (!rc && hidden && m->shadowed) m->shadowed(m->shadowed_arg, merge_entry(m));
    if (!rc) rc = skip_current(m);
    if (rc) {
      m->cur = -1;
      return rc;
    }
  }
}

/* Seeks every source the given way and finds the first entry. */
static int seek_all(merge_iter *m, const void *key, size_t key_len, int exclusive, int reverse) {
  m->reverse = reverse;
  for (int i = 0; i < m->n; i++) {
    kv_source *s = m->src[i];
    int rc = reverse ? s->seek_rev(s, key, key_len, exclusive) : s->seek(s, key, key_len, exclusive);
    if (rc) {
      m->cur = -1;
      return rc;
    }
  }
  return merge_settle(m);
}

/* Turns the merge around on the current key K. Going forward, every other
 * source sits at or after K; going back, at or before it; the sources must
 * instead sit just past K the new way (as RocksDB's iterator does when it
 * changes direction), so each one seeks there. K is copied first: it may
 * point into a source's batch or into a log record that a seek forgets. */
static int turn(merge_iter *m) {
  tree_entry *cur = merge_entry(m);
  int rc = entry_resolve_key(cur);
  if (rc) {
    m->cur = -1;
    return rc;
  }
  assert(cur->key_len <= sizeof m->turn_key);
  size_t kl = cur->key_len;
  memcpy(m->turn_key, cur->key, kl);
  return seek_all(m, m->turn_key, kl, 1, !m->reverse);
}

int merge_next(merge_iter *m) {
  if (m->cur < 0) return PAR_OK;
  if (m->reverse) return turn(m);
  int rc = skip_current(m);
  if (rc) {
    m->cur = -1;
    return rc;
  }
  return merge_settle(m);
}

int merge_prev(merge_iter *m) {
  if (m->cur < 0) return PAR_OK;
  if (!m->reverse) return turn(m);
  int rc = skip_current(m);
  if (rc) {
    m->cur = -1;
    return rc;
  }
  return merge_settle(m);
}

int merge_seek(merge_iter *m, const void *key, size_t key_len, int exclusive) {
  return seek_all(m, key, key_len, exclusive, 0);
}

int merge_seek_rev(merge_iter *m, const void *key, size_t key_len, int exclusive) {
  return seek_all(m, key, key_len, exclusive, 1);
}
