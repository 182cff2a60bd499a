#include "alloc/segalloc.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/status.h"

#define SEG (2ull << 20)
/* Grow the file by at least this much at a time (fallocate is not free). */
#define GROW_MIN_SEGS 16u

static int ensure_cap(segalloc *a, uint32_t n) {
  if (n <= a->cap) return PAR_OK;
  uint32_t cap = a->cap ? a->cap : 1024;
  while (cap < n) cap *= 2;
  uint64_t *b = realloc(a->bits, (size_t)cap / 64 * sizeof *b);
  if (!b) return par_error(PAR_ENOMEM, "segment bitmap of %u segments", cap);
  memset(b + a->cap / 64, 0, (size_t)(cap - a->cap) / 64 * sizeof *b);
  a->bits = b;
  uint64_t *h = realloc(a->holes, (size_t)cap / 64 * sizeof *h);
  if (!h) return par_error(PAR_ENOMEM, "segment bitmap of %u segments", cap);
  memset(h + a->cap / 64, 0, (size_t)(cap - a->cap) / 64 * sizeof *h);
  a->holes = h;
  uint64_t *u = realloc(a->unforgotten, (size_t)cap / 64 * sizeof *u);
  if (!u) return par_error(PAR_ENOMEM, "segment bitmap of %u segments", cap);
  memset(u + a->cap / 64, 0, (size_t)(cap - a->cap) / 64 * sizeof *u);
  a->unforgotten = u;
  a->cap = cap;
  return PAR_OK;
}

static int test_bit(const segalloc *a, uint32_t s) { return (a->bits[s / 64] >> (s % 64)) & 1; }
static void set_bit(segalloc *a, uint32_t s) { a->bits[s / 64] |= 1ull << (s % 64); }
static void clear_bit(segalloc *a, uint32_t s) { a->bits[s / 64] &= ~(1ull << (s % 64)); }
static int test_hole(const segalloc *a, uint32_t s) { return (a->holes[s / 64] >> (s % 64)) & 1; }

/* Marks s in use (lock held); a freed segment handed out again before the
 * forgetter reached it keeps its pages, the new data's. */
static void take(segalloc *a, uint32_t s) {
  set_bit(a, s);
  uint64_t m = 1ull << (s % 64);
  if (a->unforgotten[s / 64] & m) {
    a->unforgotten[s / 64] &= ~m;
    a->nunforgotten--;
  }
}

/* The lowest free segment from `from` that is (hole = 1) or is not a
 * released one, or nsegs. */
static uint32_t find_free(const segalloc *a, uint32_t from, int hole) {
  for (uint32_t w = from / 64; w * 64 < a->nsegs; w++) {
    uint64_t free = ~a->bits[w] & (hole ? a->holes[w] : ~a->holes[w]);
    if (w == from / 64) free &= ~0ull << (from % 64);
    if (free) {
      uint32_t s = w * 64 + (uint32_t)__builtin_ctzll(free);
      return s < a->nsegs ? s : a->nsegs;
    }
  }
  return a->nsegs;
}

/* Reserves the blocks of the released segments in [first, first + n)
 * again (lock held): each run of them is one call. */
static int reserve_holes(segalloc *a, uint32_t first, uint32_t n) {
  for (uint32_t s = first; s < first + n;) {
    if (!test_hole(a, s)) {
      s++;
      continue;
    }
    uint32_t e = s + 1;
    while (e < first + n && test_hole(a, e)) e++;
    int rc = file_reserve(a->file, seg_offset(s), seg_offset(e - s));
    if (rc) return rc;
    for (uint32_t k = s; k < e; k++) a->holes[k / 64] &= ~(1ull << (k % 64));
    a->nholes -= e - s;
    s = e;
  }
  return PAR_OK;
}

int segalloc_init(segalloc *a, par_file *file) {
  memset(a, 0, sizeof *a);
  pthread_mutex_init(&a->mu, NULL);
  pthread_mutex_init(&a->forgetter.mu, NULL);
  pthread_cond_init(&a->forgetter.cv, NULL);
  a->file = file;
  /* A pre-sized file or device larger than the map uses only what is mapped. */
  a->nsegs = (uint32_t)((file->size < file->limit ? file->size : file->limit) / SEG);
  int rc = ensure_cap(a, a->nsegs + 1);
  if (rc) return rc;
  set_bit(a, 0);
  a->used = 1;
  a->hint = 1;
  return PAR_OK;
}

void segalloc_destroy(segalloc *a) {
  segalloc_stop_forgetter(a);
  free(a->bits);
  free(a->holes);
  free(a->unforgotten);
  free(a->pinned);
  free(a->deferred);
  pthread_cond_destroy(&a->forgetter.cv);
  pthread_mutex_destroy(&a->forgetter.mu);
  pthread_mutex_destroy(&a->mu);
  memset(a, 0, sizeof *a);
}

static int stopped_error(void) {
  return par_error(PAR_EFAILED, "no space is handed out after a failed catalog write: reopen the volume");
}

void segalloc_stop(segalloc *a) {
  pthread_mutex_lock(&a->mu);
  a->stopped = 1;
  pthread_mutex_unlock(&a->mu);
}

int segalloc_alloc(segalloc *a, uint32_t *seg) {
  pthread_mutex_lock(&a->mu);
  if (a->stopped) {
    pthread_mutex_unlock(&a->mu);
    return stopped_error();
  }
retry:;
  /* A segment that kept its blocks first; a released one costs a reserve. */
  uint32_t s = find_free(a, a->hint, 0);
  if (s == a->nsegs && a->nholes) s = find_free(a, a->hint, 1);
  if (s < a->nsegs) {
    int rc = reserve_holes(a, s, 1);
    if (!rc) {
      take(a, s);
      a->used++;
      a->allocs++;
      if (s == a->hint) a->hint = s + 1;
      *seg = s;
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
  }
  /* Grow by an eighth of the volume (at least GROW_MIN_SEGS), bounded by
   * the limit; fall back to exactly one segment near the limit. */
  uint32_t grow = a->nsegs / 8 > GROW_MIN_SEGS ? a->nsegs / 8 : GROW_MIN_SEGS;
  uint64_t max_segs = a->file->limit / SEG;
  if ((uint64_t)a->nsegs + grow > max_segs) grow = (uint32_t)(max_segs > a->nsegs ? max_segs - a->nsegs : 0);
  int rc = grow ? ensure_cap(a, a->nsegs + grow) : PAR_OK;
  if (!rc) rc = grow ? file_grow(a->file, (uint64_t)(a->nsegs + grow) * SEG) : PAR_ENOSPC;
  if (rc == PAR_ENOSPC && grow > 1) rc = file_grow(a->file, (uint64_t)(a->nsegs + (grow = 1)) * SEG);
  if (rc) {
    pthread_mutex_unlock(&a->mu);
    if (rc == PAR_ENOSPC && !grow)
      return par_error(PAR_ENOSPC, "volume is full: all %u segments are in use", a->nsegs);
    return rc;
  }
  a->nsegs += grow;
  goto retry; /* the new segments are free, but for segment 0 of an empty file */
}

int segalloc_alloc_run(segalloc *a, uint32_t n, uint32_t *first) {
  if (n <= 1) return segalloc_alloc(a, first);
  pthread_mutex_lock(&a->mu);
  if (a->stopped) {
    pthread_mutex_unlock(&a->mu);
    return stopped_error();
  }
  uint32_t run = 0, start = 0;
  int rc;
  for (uint32_t s = 1; s < a->nsegs; s++) {
    if (test_bit(a, s)) {
      run = 0;
      continue;
    }
    if (!run) start = s;
    if (++run == n) goto found;
  }
  /* Grow the file so that a free tail (possibly empty) plus new segments make the run. */
  start = run ? start : a->nsegs;
  uint32_t need = start + n - a->nsegs;
  rc = ensure_cap(a, start + n);
  if (!rc) rc = file_grow(a->file, (uint64_t)(start + n) * SEG);
  if (rc) {
    pthread_mutex_unlock(&a->mu);
    return rc == PAR_ENOSPC ? par_error(PAR_ENOSPC, "no room for %u consecutive segments", n) : rc;
  }
  a->nsegs += need;
found:
  rc = reserve_holes(a, start, n);
  if (rc) {
    pthread_mutex_unlock(&a->mu);
    return rc;
  }
  for (uint32_t s = start; s < start + n; s++) take(a, s);
  a->used += n;
  a->allocs += n;
  *first = start;
  pthread_mutex_unlock(&a->mu);
  return PAR_OK;
}

static int test_pin(const uint64_t *bits, uint32_t s) { return (bits[s / 64] >> (s % 64)) & 1; }

/* Wakes the forgetter (its mutex is a leaf: see segalloc.h). */
static void want_forget(segalloc *a) {
  pthread_mutex_lock(&a->forgetter.mu);
  a->forgetter.wanted = 1;
  pthread_cond_signal(&a->forgetter.cv);
  pthread_mutex_unlock(&a->forgetter.mu);
}

void segalloc_free(segalloc *a, uint32_t seg) {
  int freed = 0, queued = 0;
  pthread_mutex_lock(&a->mu);
  if (a->pinned && seg < a->pin_cap && test_pin(a->pinned, seg)) {
    a->deferred[seg / 64] |= 1ull << (seg % 64);
  } else if (seg && seg < a->nsegs && test_bit(a, seg)) {
    assert(!test_hole(a, seg)); /* in use, so its blocks are there */
    clear_bit(a, seg);
    a->used--;
    if (seg < a->hint) a->hint = seg;
    freed = 1;
    if (a->forgetter.running) {
      assert(!(a->unforgotten[seg / 64] >> (seg % 64) & 1)); /* it was in use */
      a->unforgotten[seg / 64] |= 1ull << (seg % 64);
      a->nunforgotten++;
      queued = 1;
    }
  }
  pthread_mutex_unlock(&a->mu);
  /* Its cached pages go soon, not when the LRU reaches them: a merge's old
   * trees would otherwise hold the memory its new ones need. */
  if (queued) want_forget(a);
  else if (freed) file_forget(a->file, seg_offset(seg), SEG);
}

/* Drops the pages of the segments freed since the last call, a word of
 * the set at a time, without the lock held across the drops. A segment
 * taken again between its word's pick and its drop loses clean pages of
 * new data at worst, which reads bring back. */
static void forget_freed(segalloc *a) {
  for (;;) {
    uint32_t base = 0;
    uint64_t word = 0;
    pthread_mutex_lock(&a->mu);
    for (uint32_t w = 0; a->nunforgotten && w * 64 < a->nsegs; w++)
      if (a->unforgotten[w]) {
        base = w * 64;
        word = a->unforgotten[w];
        a->unforgotten[w] = 0;
        a->nunforgotten -= (uint32_t)__builtin_popcountll(word);
        break;
      }
    pthread_mutex_unlock(&a->mu);
    if (!word) return;
    for (; word; word &= word - 1) file_forget(a->file, seg_offset(base + (uint32_t)__builtin_ctzll(word)), SEG);
  }
}

static void *forgetter_main(void *arg) {
  segalloc *a = arg;
  pthread_mutex_lock(&a->forgetter.mu);
  while (!a->forgetter.stop) {
    if (!a->forgetter.wanted) {
      pthread_cond_wait(&a->forgetter.cv, &a->forgetter.mu);
      continue;
    }
    a->forgetter.wanted = 0;
    pthread_mutex_unlock(&a->forgetter.mu);
    forget_freed(a);
    pthread_mutex_lock(&a->forgetter.mu);
  }
  pthread_mutex_unlock(&a->forgetter.mu);
  return NULL;
}

void segalloc_start_forgetter(segalloc *a) {
  assert(!a->forgetter.running);
  a->forgetter.stop = a->forgetter.wanted = 0;
  if (pthread_create(&a->forgetter.thread, NULL, forgetter_main, a)) return;
  pthread_setname_np(a->forgetter.thread, "par-forget");
  pthread_mutex_lock(&a->mu);
  a->forgetter.running = 1;
  pthread_mutex_unlock(&a->mu);
}

void segalloc_stop_forgetter(segalloc *a) {
  pthread_mutex_lock(&a->mu);
  int running = a->forgetter.running;
  a->forgetter.running = 0; /* frees from now on drop their own pages */
  pthread_mutex_unlock(&a->mu);
  if (!running) return;
  pthread_mutex_lock(&a->forgetter.mu);
  a->forgetter.stop = 1;
  pthread_cond_signal(&a->forgetter.cv);
  pthread_mutex_unlock(&a->forgetter.mu);
  pthread_join(a->forgetter.thread, NULL);
  forget_freed(a);
}

int segalloc_pin(segalloc *a, const uint32_t *segs, uint32_t n) {
  pthread_mutex_lock(&a->mu);
  assert(!a->pinned);
  uint32_t words = a->nsegs / 64 + 1;
  a->pinned = calloc(words, sizeof *a->pinned);
  a->deferred = calloc(words, sizeof *a->deferred);
  int rc = a->pinned && a->deferred ? PAR_OK : par_error(PAR_ENOMEM, "checkpoint pin set");
  if (!rc) {
    a->pin_cap = words * 64;
    for (uint32_t i = 0; i < n; i++) {
      assert(segs[i] < a->nsegs && test_bit(a, segs[i]));
      a->pinned[segs[i] / 64] |= 1ull << (segs[i] % 64);
    }
  } else {
    free(a->pinned);
    free(a->deferred);
    a->pinned = a->deferred = NULL;
  }
  pthread_mutex_unlock(&a->mu);
  return rc;
}

void segalloc_unpin(segalloc *a) {
  pthread_mutex_lock(&a->mu);
  uint64_t *deferred = a->deferred;
  uint32_t cap = a->pin_cap;
  free(a->pinned);
  a->pinned = a->deferred = NULL;
  a->pin_cap = 0;
  pthread_mutex_unlock(&a->mu);
  for (uint32_t s = 0; deferred && s < cap; s++)
    if (test_pin(deferred, s)) segalloc_free(a, s);
  free(deferred);
}

int segalloc_mark(segalloc *a, uint32_t seg) {
  int rc = PAR_OK;
  pthread_mutex_lock(&a->mu);
  if (seg == 0 || seg >= a->nsegs)
    rc = par_error(PAR_ECORRUPT,
                   "catalog references segment %u, but the volume file of %llu bytes holds %u segments "
                   "(truncated or damaged)",
                   seg, (unsigned long long)a->file->size, a->nsegs);
  else if (test_bit(a, seg))
    rc = par_error(PAR_ECORRUPT, "catalog references segment %u twice", seg);
  else {
    set_bit(a, seg);
    a->used++;
  }
  pthread_mutex_unlock(&a->mu);
  return rc;
}

int segalloc_in_use(segalloc *a, uint32_t seg) {
  pthread_mutex_lock(&a->mu);
  int r = seg < a->nsegs && test_bit(a, seg);
  pthread_mutex_unlock(&a->mu);
  return r;
}

void segalloc_counts(segalloc *a, uint32_t *total, uint32_t *used) {
  pthread_mutex_lock(&a->mu);
  *total = a->nsegs;
  *used = a->used;
  pthread_mutex_unlock(&a->mu);
}

uint64_t segalloc_room(segalloc *a) {
  pthread_mutex_lock(&a->mu);
  uint64_t max_segs = a->file->limit / SEG;
  uint64_t room = (uint64_t)(a->nsegs - a->used) + (max_segs > a->nsegs ? max_segs - a->nsegs : 0);
  pthread_mutex_unlock(&a->mu);
  return room;
}

uint32_t segalloc_released(segalloc *a) {
  pthread_mutex_lock(&a->mu);
  uint32_t n = a->nholes;
  pthread_mutex_unlock(&a->mu);
  return n;
}

/* The highest run (at most max long) of free segments that keep their
 * blocks, or 0 (lock held). */
static uint32_t highest_kept_run(const segalloc *a, uint32_t max, uint32_t *first) {
  uint32_t s = a->nsegs;
  while (s > 1 && (test_bit(a, s - 1) || test_hole(a, s - 1))) {
    /* A word with no kept free segment goes at once: the lock is held, and
     * a large volume has most of its segments in use. */
    uint32_t w = (s - 1) / 64;
    if (s % 64 == 0 && s >= 128 && (a->bits[w] | a->holes[w]) == ~0ull) s -= 64;
    else s--;
  }
  if (s <= 1) return 0;
  uint32_t e = s;
  while (s > 1 && e - s < max && !test_bit(a, s - 1) && !test_hole(a, s - 1)) s--;
  *first = s;
  return e - s;
}

static _Atomic uint32_t min_floor = SEGALLOC_MIN_FLOOR;

void segalloc_set_min_floor(uint32_t segs) { min_floor = segs; }

uint32_t segalloc_trim_floor(uint32_t used) { return used / 16 > min_floor ? used / 16 : min_floor; }

uint32_t segalloc_rest_floor(uint32_t used) {
  uint32_t keep = used / 64 > SEGALLOC_REST_MIN ? used / 64 : SEGALLOC_REST_MIN;
  uint32_t floor = segalloc_trim_floor(used);
  return keep < floor ? keep : floor;
}

/* The reserve of free segments that keep their blocks (lock held); ends
 * the current stretch of allocations unless at_rest. */
static uint32_t trim_keep(segalloc *a, int at_rest) {
  if (at_rest) return segalloc_rest_floor(a->used);
  uint32_t keep = segalloc_trim_floor(a->used);
  uint32_t window = sizeof a->demand / sizeof *a->demand;
  a->demand[a->ndemand++ % window] = a->allocs;
  a->allocs = 0;
  for (uint32_t i = 0; i < window; i++)
    if (a->demand[i] > keep) keep = a->demand[i];
  return keep;
}

void segalloc_trim(segalloc *a, int at_rest) {
  pthread_mutex_lock(&a->mu);
  uint32_t keep = trim_keep(a, at_rest);
  pthread_mutex_unlock(&a->mu);
  /* Runs of at most 16 segments (32 MiB): the lock is not held while the
   * file system punches, and an allocation meanwhile skips them. */
  for (;;) {
    pthread_mutex_lock(&a->mu);
    uint32_t kept = a->nsegs - a->used - a->releasing - a->nholes;
    uint32_t first = 0, n = 0;
    if (!a->stopped && !a->cannot_release && kept > keep)
      n = highest_kept_run(a, kept - keep < 16 ? kept - keep : 16, &first);
    for (uint32_t s = first; s < first + n; s++) set_bit(a, s);
    a->releasing += n;
    pthread_mutex_unlock(&a->mu);
    if (!n) return;

    int rc = file_release(a->file, seg_offset(first), seg_offset(n));
    pthread_mutex_lock(&a->mu);
    for (uint32_t s = first; s < first + n; s++) {
      clear_bit(a, s);
      if (!rc) a->holes[s / 64] |= 1ull << (s % 64);
    }
    a->releasing -= n;
    assert(a->used + a->releasing + a->nholes + (rc ? 0 : n) <= a->nsegs);
    if (rc) a->cannot_release = 1;
    else a->nholes += n;
    if (first < a->hint) a->hint = first;
    pthread_mutex_unlock(&a->mu);
    if (rc) return;
  }
}

void segalloc_settle(segalloc *a) {
  segalloc_trim(a, 1);
  pthread_mutex_lock(&a->mu);
  for (uint32_t s = 1; s < a->nsegs;) {
    if (test_bit(a, s) || test_hole(a, s)) {
      s++;
      continue;
    }
    uint32_t e = s + 1;
    while (e < a->nsegs && !test_bit(a, e) && !test_hole(a, e)) e++;
    if (file_reserve(a->file, seg_offset(s), seg_offset(e - s)) != PAR_OK) {
      for (uint32_t k = s; k < e; k++) a->holes[k / 64] |= 1ull << (k % 64);
      a->nholes += e - s;
    }
    s = e;
  }
  pthread_mutex_unlock(&a->mu);
}
