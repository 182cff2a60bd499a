#include "alloc/segalloc.h"

#include <assert.h>
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
  a->cap = cap;
  return PAR_OK;
}

static int test_bit(const segalloc *a, uint32_t s) { return (a->bits[s / 64] >> (s % 64)) & 1; }
static void set_bit(segalloc *a, uint32_t s) { a->bits[s / 64] |= 1ull << (s % 64); }
static void clear_bit(segalloc *a, uint32_t s) { a->bits[s / 64] &= ~(1ull << (s % 64)); }

int segalloc_init(segalloc *a, par_file *file) {
  memset(a, 0, sizeof *a);
  pthread_mutex_init(&a->mu, NULL);
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
  free(a->bits);
  free(a->pinned);
  free(a->deferred);
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
retry:
  for (uint32_t s = a->hint; s < a->nsegs; s++) {
    if (!test_bit(a, s)) {
      set_bit(a, s);
      a->used++;
      a->hint = s + 1;
      *seg = s;
      pthread_mutex_unlock(&a->mu);
      return PAR_OK;
    }
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
  int rc = ensure_cap(a, start + n);
  if (!rc) rc = file_grow(a->file, (uint64_t)(start + n) * SEG);
  if (rc) {
    pthread_mutex_unlock(&a->mu);
    return rc == PAR_ENOSPC ? par_error(PAR_ENOSPC, "no room for %u consecutive segments", n) : rc;
  }
  a->nsegs += need;
found:
  for (uint32_t s = start; s < start + n; s++) set_bit(a, s);
  a->used += n;
  *first = start;
  pthread_mutex_unlock(&a->mu);
  return PAR_OK;
}

static int test_pin(const uint64_t *bits, uint32_t s) { return (bits[s / 64] >> (s % 64)) & 1; }

void segalloc_free(segalloc *a, uint32_t seg) {
  pthread_mutex_lock(&a->mu);
  if (a->pinned && seg < a->pin_cap && test_pin(a->pinned, seg)) {
    a->deferred[seg / 64] |= 1ull << (seg % 64);
  } else if (seg && seg < a->nsegs && test_bit(a, seg)) {
    clear_bit(a, seg);
    a->used--;
    if (seg < a->hint) a->hint = seg;
  }
  pthread_mutex_unlock(&a->mu);
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
