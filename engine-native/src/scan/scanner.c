/* Scanners: a merge over every level of one view, read at one LSN, so a
 * scan sees exactly the state at its creation while writers go on. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "io/mapguard.h"
#include "log/vlog.h"
#include "scan/merge.h"
#include "scan/rangedel.h"
#include "scan/readahead.h"
#include "util/clock.h"
#include "util/status.h"

#define MAX_SOURCES (2 + PAR_MAX_LEVELS * LEVEL_TREES)

struct par_scanner {
  par_region *region;
  view *v;
  kv_source *src[MAX_SOURCES];
  merge_iter m;
  rdel rd;        /* the sources' range tombstones at the scan's LSN */
  int error;      /* a corrupt node ends the scan with this status */
  /* The current entry's log value, once read: par_scanner_value hands out
   * the same bytes until the scanner moves. owned: a copy out of a tail
   * buffer, freed when the scanner moves. */
  const uint8_t *value;
  uint32_t value_len;
  uint8_t *owned;
  int readahead; /* ask for what the next steps read (scan/readahead.h) */
  uint32_t span;  /* entries the caller reads after a seek (0: unknown) */
  uint8_t span_bound[PAR_MAX_KEY_SIZE]; /* where the largest tree's span ends */
  scan_hidden hidden[MAX_SOURCES];     /* per source: the span's entries newer ones hide */
  uint32_t walked[MAX_SOURCES];        /* per source: its entries in the span, as far as the walk saw */
};

/* Every level's cursor asks for what its next steps read; guarded
 * (io/mapguard.h): the cursors read their leaves through the map. */
static int ask_ahead(void *arg) {
  par_scanner *s = arg;
  for (int i = 0; i < s->m.n; i++)
    if (s->src[i]->valid && s->src[i]->readahead) s->src[i]->readahead(s->src[i], s->m.reverse);
  return PAR_OK;
}

/* Compares keys that may be prefixes (index/entry.h) in the scan's
 * direction; keys equal over their common length are one. */
static int span_cmp(const uint8_t *a, uint16_t al, const uint8_t *b, uint16_t bl, int reverse) {
  int c = memcmp(a, b, al < bl ? al : bl);
  return reverse ? -c : c;
}

/* Whether two keys a walk of the levels found equal are one key: both
 * whole (a leaf keeps only a medium key's first KEY_PREFIX bytes,
 * index/entry.h, so two keys of that length may be different keys' starts)
 * and the same. */
static int same_key(const uint8_t *a, uint16_t al, const uint8_t *b, uint16_t bl) {
  return al == bl && al != KEY_PREFIX && memcmp(a, b, al) == 0;
}

/* Where the span's s->span entries end in the merge, if the levels' keys
 * at hand tell (the device levels' current leaves, the L0s' batches), and
 * which of those entries a newer level hides: walks them from the sources'
 * current entries in the scan's order, a key found in several levels once
 * (the scan returns it once, the newest level's), to the s->span-th key.
 * Each older level's entry of a key a newer one holds gets its bit in
 * s->hidden[level]: the scan never reads its record; s->walked[level]
 * counts each level's entries the walk took. 1 with the span's end
 * in *end, or 0 if the leaf of source big (the largest tree) ends first.
 * A smaller level whose keys at hand end first leaves the walk: what
 * follows in it is not known yet, and it is asked for up to where the
 * others end the span, a little past the scan's end. Tombstones are
 * counted, and the scan skips them: where they are, the span ends a little
 * before the scan. */
static int merged_span_end(par_scanner *s, int big, const uint8_t **end, uint16_t *end_len) {
  const int rev = s->m.reverse;
  uint32_t pos[MAX_SOURCES];
  const uint8_t *head[MAX_SOURCES];
  uint16_t head_len[MAX_SOURCES];
  int level[MAX_SOURCES], n = 0;
  for (int i = 0; i < s->m.n; i++) {
    memset(s->hidden[i], 0, sizeof s->hidden[i]);
    s->walked[i] = 0;
    if (s->src[i]->valid && s->src[i]->key_ahead) {
      level[n] = i;
      pos[n] = 0;
      (void)s->src[i]->key_ahead(s->src[i], rev, 0, &head[n], &head_len[n]);
      n++;
    }
  }
  assert(s->span > 0 && s->src[big]->valid && s->src[big]->key_ahead); /* big walks: n > 0 throughout */
  for (uint32_t taken = 0;;) {
    int min = 0;
    for (int j = 1; j < n; j++) {
      int c = span_cmp(head[j], head_len[j], head[min], head_len[min], rev);
      if (c < 0 || (c == 0 && level[j] < level[min])) min = j; /* of equal keys, the newest level's */
    }
    const uint8_t *k = head[min]; /* stays valid when its level leaves the walk: leaves and batches do */
    uint16_t kl = head_len[min];
    const int newest = level[min];
    if (++taken == s->span) {
      for (int j = 0; j < n; j++)
        if (span_cmp(head[j], head_len[j], k, kl, rev) == 0) s->walked[level[j]]++; /* the span's last key */
      *end = k;
      *end_len = kl;
      return 1;
    }
    for (int j = 0; j < n; j++) {
      if (span_cmp(head[j], head_len[j], k, kl, rev) != 0) continue;
      if (level[j] != newest && same_key(head[j], head_len[j], k, kl) && pos[j] < SCAN_RA_HIDDEN_MAX) {
        assert(level[j] > newest); /* sources are newest first */
        s->hidden[level[j]][pos[j] / 64] |= 1ull << (pos[j] % 64);
      }
      s->walked[level[j]] = pos[j] + 1;
      if (!s->src[level[j]]->key_ahead(s->src[level[j]], rev, ++pos[j], &head[j], &head_len[j])) {
        if (level[j] == big) return 0;
        level[j] = level[n - 1]; /* this level's keys at hand end: it leaves the walk */
        pos[j] = pos[n - 1];
        head[j] = head[n - 1];
        head_len[j] = head_len[n - 1];
        n--;
        j--;
        assert(n > 0);
      }
    }
  }
}

/* After a seek, the caller reading about s->span entries: every level's
 * cursor asks for the reads of its share of them at once, up to the key
 * where the span ends, but for the entries a newer level hides, and each
 * L0 for the records of its entries the walk took. Where the
 * levels' keys at hand tell that key (merged_span_end), every level asks up
 * to it: the levels together ask for s->span entries. Where they do not,
 * the tree with the most entries (the last level, as a rule, which holds
 * most of any range) sets the key: it asks for its next s->span entries,
 * each other level for its entries up to the last of them. Guarded
 * (io/mapguard.h), as ask_ahead. */
static int ask_span(void *arg) {
  par_scanner *s = arg;
  int big = -1;
  for (int i = 0; i < s->m.n; i++)
    if (s->src[i]->valid && s->src[i]->readahead_span && (big < 0 || s->src[i]->entries > s->src[big]->entries))
      big = i;
  if (big < 0) { /* L0s only: each asks for its next s->span entries' records */
    for (int i = 0; i < s->m.n; i++)
      if (s->src[i]->valid && s->src[i]->ask_records)
        s->src[i]->ask_records(s->src[i], &s->region->vol->file, s->span, NULL);
    return PAR_OK;
  }
  const uint8_t *end;
  uint16_t end_len;
  int merged = merged_span_end(s, big, &end, &end_len);
  if (!merged) (void)s->src[big]->key_ahead(s->src[big], s->m.reverse, s->span - 1, &end, &end_len);
  memcpy(s->span_bound, end, end_len);
  for (int i = 0; i < s->m.n; i++)
    if (s->src[i]->valid && s->src[i]->readahead_span)
      s->src[i]->readahead_span(s->src[i], s->m.reverse, s->span, merged || i != big ? s->span_bound : NULL,
                                end_len, &s->hidden[i]);
    else if (s->src[i]->valid && s->src[i]->ask_records)
      s->src[i]->ask_records(s->src[i], &s->region->vol->file, s->walked[i], &s->hidden[i]);
  return PAR_OK;
}

/* Ends a step (a move or a value read) begun at t0; seek says it was a seek.
 * A slow step means the scan reads data that is not in memory: from then
 * on, after each step, every level's cursor asks for what its next steps
 * read, and after a seek with a span set, for the whole span. */
static void step_done(par_scanner *s, uint64_t t0, int seek) {
  region_note_read(s->region, t0);
  if (!s->readahead) s->readahead = region_reads_wait(s->region);
  /* A fault while asking is the next step's to report. */
  if (s->readahead && s->m.cur >= 0) (void)mapguard_run(seek && s->span ? ask_span : ask_ahead, s);
}

/* Forgets the current entry's value before the scanner moves. */
static void drop_value(par_scanner *s) {
  free(s->owned);
  s->owned = NULL;
  s->value = NULL;
}

PAR_API int par_scanner_open(par_region *r, const par_snapshot *snap, par_scanner **out) {
  if (!r || !out) return par_error(PAR_EINVAL, "par_scanner_open: NULL argument");
  *out = NULL;
  if (snap && snap->region != r) return par_error(PAR_EINVAL, "snapshot belongs to another region");
  par_scanner *s = calloc(1, sizeof *s);
  if (!s) return par_error(PAR_ENOMEM, "scanner");
  s->region = r;
  uint64_t lsn;
  if (snap) {
    s->v = snap->v;
    atomic_fetch_add(&s->v->refs, 1);
    lsn = snap->lsn;
  } else {
    s->v = region_acquire_view(r, &lsn);
  }
  int n = 0, rc = PAR_OK;
  memtable *mts[2] = {s->v->active, s->v->frozen};
  for (int i = 0; i < 2; i++)
    if (mts[i]) {
      s->src[n++] = memtable_source(mts[i], lsn, NULL, NULL);
      if (!rc) rc = rdel_add_memtable(&s->rd, mts[i], lsn);
    }
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++)
      if (s->v->tree[i][j]) {
        s->src[n++] = tree_cursor_source(&r->keys, s->v->tree[i][j]);
        rdel_add_tree(&s->rd, &s->v->tree[i][j]->d.rtombs);
      }
  for (int i = 0; i < n; i++)
    if (!s->src[i]) rc = PAR_ENOMEM;
  if (rc) {
    par_scanner_close(s);
    return par_error(PAR_ENOMEM, "scanner sources");
  }
  s->m.src = s->src;
  s->m.rd = &s->rd;
  s->m.n = n;
  s->m.cur = -1;
  s->m.skip_tombstones = 1;
  s->readahead = region_reads_wait(r);
  atomic_fetch_add(&r->stats.scans, 1);
  *out = s;
  return PAR_OK;
}

/* A move of the merge and the reading of the whole key of the entry it
 * lands on (its leaf may hold only a prefix: callers get whole keys),
 * guarded (io/mapguard.h): both read through the map. A fault leaves the
 * merge half moved, so its error ends the scan like a damaged node's. */
/* Before a seek of a scanner whose reads wait: asks for the leaf at key of
 * every level at once, so that the levels' reads overlap instead of
 * following each other down the merge's sources. */
static void ask_leaves(par_scanner *s, const void *key, size_t key_len) {
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      dtree *t = s->v->tree[i][j];
      uint64_t leaf;
      if (t && !tree_find_leaf(&s->region->keys, &t->d, &t->checks, key, key_len, &leaf))
        file_prefetch(&s->region->vol->file, leaf, LEAF_SIZE);
    }
}

enum move { MOVE_SEEK, MOVE_SEEK_REV, MOVE_NEXT, MOVE_PREV };
typedef struct move_call {
  par_scanner *s;
  enum move how;
  const void *key;
  size_t key_len;
  int exclusive;
} move_call;

static int move_guarded(void *arg) {
  move_call *c = arg;
  merge_iter *m = &c->s->m;
  if (c->s->readahead && c->key) ask_leaves(c->s, c->key, c->key_len);
  int rc = c->how == MOVE_SEEK       ? merge_seek(m, c->key, c->key_len, c->exclusive)
           : c->how == MOVE_SEEK_REV ? merge_seek_rev(m, c->key, c->key_len, c->exclusive)
           : c->how == MOVE_NEXT     ? merge_next(m)
                                     : merge_prev(m);
  if (!rc && m->cur >= 0) rc = entry_resolve_key(merge_entry(m));
  return rc;
}

static int move(par_scanner *s, enum move how, const void *key, size_t key_len, int exclusive) {
  drop_value(s);
  move_call c = {s, how, key, key_len, exclusive};
  uint64_t t0 = clock_mono_ns();
  s->error = mapguard_run(move_guarded, &c);
  if (s->error) s->m.cur = -1;
  step_done(s, t0, how == MOVE_SEEK || how == MOVE_SEEK_REV);
  return s->error;
}

PAR_API int par_scanner_seek(par_scanner *s, const void *key, size_t key_len, par_seek_mode mode) {
  if (!s) return par_error(PAR_EINVAL, "par_scanner_seek: NULL scanner");
  if ((int)mode < PAR_SEEK_FIRST || (int)mode > PAR_SEEK_LT)
    return par_error(PAR_EINVAL, "unknown seek mode %d", (int)mode);
  int whole = mode == PAR_SEEK_FIRST || mode == PAR_SEEK_LAST;
  if (!whole) {
    if (!key || !key_len) return par_error(PAR_EINVAL, "seek key must not be NULL or empty");
    if (key_len > PAR_MAX_KEY_SIZE)
      return par_error(PAR_ETOOBIG, "seek key of %zu bytes exceeds the limit of %u", key_len, PAR_MAX_KEY_SIZE);
  }
  if (whole) key = NULL;
  if (mode <= PAR_SEEK_GT) return move(s, MOVE_SEEK, key, key_len, mode == PAR_SEEK_GT);
  return move(s, MOVE_SEEK_REV, key, key_len, mode == PAR_SEEK_LT);
}

PAR_API int par_scanner_set_readahead(par_scanner *s, uint32_t entries) {
  if (!s) return par_error(PAR_EINVAL, "par_scanner_set_readahead: NULL scanner");
  s->span = entries < SCAN_RA_SPAN_MAX ? entries : SCAN_RA_SPAN_MAX;
  return PAR_OK;
}

PAR_API int par_scanner_valid(const par_scanner *s) { return s && s->m.cur >= 0; }

PAR_API int par_scanner_key(const par_scanner *s, const void **key, size_t *key_len) {
  if (!s || !key || !key_len) return par_error(PAR_EINVAL, "par_scanner_key: NULL argument");
  if (s->m.cur < 0) return par_error(PAR_EINVAL, "scanner is not on an entry");
  const tree_entry *e = merge_entry(&s->m);
  *key = e->key;
  *key_len = e->key_len;
  return PAR_OK;
}

/* Going backwards, the next value wanted is likely the record just before
 * this one (flushes write the medium log in key order, and hosts that write
 * keys in order fill the large log in key order), at lower addresses, where
 * the hardware prefetcher does not go: it follows ascending reads. So ask
 * now for the previous record's lines, assuming it is about as large as
 * this one: the 4 KiB nearest to this record, and for a larger record also
 * its first 4 KiB, where its (ascending) read and checksum start and the
 * hardware prefetcher takes over. With 1 KiB values written in key order
 * (par_bench --mix L --ordered --scans 5) a reverse scan cost 3.0x a
 * forward one without this, 1.1x with it (docs/benchmarks.md). Prefetches
 * never fault; they stay inside this record's segment. record_end is where
 * the record ends in the map. */
static void prefetch_before(const tree_entry *e, const uint8_t *record_end) {
  vptr p = vptr_decode(e->value);
  if (p.off < p.size) return;
  const uint8_t *start = record_end - p.size;
  uint32_t near = p.size < 4096 ? p.size : 4096;
  for (uint32_t i = 64; i <= near; i += 64) __builtin_prefetch(start - i);
  for (uint32_t i = 0; p.size > 4096 && i < 4096; i += 64) __builtin_prefetch(start - p.size + i);
}

/* Reads the current entry's log value (checksummed), guarded
 * (io/mapguard.h); a copy it makes is in s->owned. Through the map while
 * the data is in memory; once the scan's reads wait, with pread: each value
 * page read under a memory limit through the map also costs a fault to map
 * it and, when reclaim takes it back, an unmapping (LD Run E at 1 GiB:
 * 3.2-3.3 against 2.8 Kops/s, 680-790 against 870 Kcycles a scan,
 * docs/benchmarks.md). */
static int value_guarded(void *arg) {
  par_scanner *s = arg;
  const tree_entry *e = merge_entry(&s->m);
  if (s->readahead) return region_read_value_copy(s->region, e, &s->value, &s->value_len, &s->owned);
  return region_read_value(s->region, e, &s->value, &s->value_len, &s->owned);
}

PAR_API int par_scanner_value(par_scanner *s, const void **value, size_t *value_len) {
  if (!s || !value || !value_len) return par_error(PAR_EINVAL, "par_scanner_value: NULL argument");
  if (s->m.cur < 0) return par_error(PAR_EINVAL, "scanner is not on an entry");
  const tree_entry *e = merge_entry(&s->m);
  if (e->cat != CAT_LARGE && e->cat != CAT_MEDIUM) {
    *value = e->value;
    *value_len = e->value_len;
    return PAR_OK;
  }
  if (!s->value) {
    uint64_t t0 = clock_mono_ns();
    int rc = mapguard_run(value_guarded, s);
    if (rc) { /* a copy made before a fault is the scanner's (region_read_value_copy) */
      drop_value(s);
      return rc;
    }
    if (s->m.reverse && !s->owned) prefetch_before(e, s->value + s->value_len);
    step_done(s, t0, 0);
  }
  *value = s->value;
  *value_len = s->value_len;
  return PAR_OK;
}

PAR_API int par_scanner_next(par_scanner *s) {
  if (!s) return par_error(PAR_EINVAL, "par_scanner_next: NULL scanner");
  if (s->m.cur < 0) return s->error;
  return move(s, MOVE_NEXT, NULL, 0, 0);
}

PAR_API int par_scanner_prev(par_scanner *s) {
  if (!s) return par_error(PAR_EINVAL, "par_scanner_prev: NULL scanner");
  if (s->m.cur < 0) return s->error;
  return move(s, MOVE_PREV, NULL, 0, 0);
}

PAR_API void par_scanner_close(par_scanner *s) {
  if (!s) return;
  for (int i = 0; i < MAX_SOURCES; i++)
    if (s->src[i]) s->src[i]->close(s->src[i]);
  rdel_free(&s->rd);
  view_unref(s->v);
  free(s->owned);
  free(s);
}
