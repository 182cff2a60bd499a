#include "log/sorted_run.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "util/coding.h"
#include "util/status.h"

#define SEG ((uint32_t)PAR_SEGMENT_SIZE)

void sorted_run_init(sorted_run *s, par_file *f, segalloc *alloc, uint32_t region_id, sorted_run_take_fn take,
                     void *ctx) {
  memset(s, 0, sizeof *s);
  s->file = f;
  s->alloc = alloc;
  s->region_id = region_id;
  s->take = take;
  s->ctx = ctx;
}

/* Writes the segment being filled: its records, then zeros to the block. */
static int write_last(sorted_run *s) {
  sorted_run_seg *last = &s->segs[s->nsegs - 1];
  uint32_t len = ALIGN_UP(last->used, PAR_BLOCK);
  memset(s->buf + last->used, 0, len - last->used);
  return file_write(s->file, s->buf, len, seg_offset(last->seg));
}

static int take_next(sorted_run *s) {
  if (!s->buf && !(s->buf = file_buf_alloc(SEG))) return par_error(PAR_ENOMEM, "sorted-run buffer");
  if (s->nsegs == s->cap) {
    uint32_t cap = s->cap ? s->cap * 2 : 16;
    void *v = realloc(s->segs, cap * sizeof *s->segs);
    if (!v) return par_error(PAR_ENOMEM, "sorted-run segments");
    s->segs = v;
    s->cap = cap;
  }
  uint32_t seg, inc;
  int rc = s->take(s->ctx, s->nsegs, &seg, &inc);
  if (rc) return rc;
  s->segs[s->nsegs++] = (sorted_run_seg){seg, inc, 0};
  s->seed = vlog_seed(s->region_id, inc);
  return PAR_OK;
}

int sorted_run_append(sorted_run *s, const vlog_record *rec, vptr *out) {
  assert(rec->size <= SEG);
  if (s->stopped) return PAR_ENOSPC;
  int rc = PAR_OK;
  if (!s->nsegs || s->segs[s->nsegs - 1].used + rec->size > SEG) {
    if (s->nsegs) rc = write_last(s);
    if (!rc) rc = take_next(s);
    if (rc == PAR_ENOSPC || rc == PAR_ELIMIT) s->stopped = 1;
    if (rc) return rc;
  }
  sorted_run_seg *last = &s->segs[s->nsegs - 1];
  size_t n = vlog_encode(s->buf + last->used, s->seed, rec->lsn, rec->key, rec->key_len, rec->value, rec->value_len);
  assert(n == rec->size);
  *out = (vptr){last->seg, last->used, last->inc, (uint32_t)n};
  last->used += (uint32_t)n;
  s->bytes += n;
  return PAR_OK;
}

int sorted_run_finish(sorted_run *s) { return s->nsegs && s->segs[s->nsegs - 1].used ? write_last(s) : PAR_OK; }

void sorted_run_abort(sorted_run *s) {
  for (uint32_t i = 0; i < s->nsegs; i++) segalloc_free(s->alloc, s->segs[i].seg);
  s->nsegs = 0;
}

void sorted_run_free(sorted_run *s) {
  free(s->buf);
  free(s->segs);
  memset(s, 0, sizeof *s);
}
