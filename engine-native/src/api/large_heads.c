/* The large logs' heads across sessions (format 6).
 *
 * A clean close parks each log's head: the catalog keeps the segment a
 * head, marked parked with the offset where its records end, every one of
 * them durable (the WAL stopped, and its last flush wrote and synced them).
 * The next open resumes appending there. Before, a close counted the heads'
 * unwritten tails as garbage and every session started fresh segments, so a
 * session that wrote little left two mostly empty segments, which GC then
 * collected by relocating their records (a lookup, a put and a WAL record
 * each): in a run of sessions that only read, each moved about a segment's
 * records and held two more segments until L0's next flush.
 *
 * The open marks a parked head open (VLOG_OPEN) in the catalog before the
 * first append to it, so a crash after appends into it is counted like any
 * open head's (gc_count_crash_garbage), and only a clean close parks. */
#include <assert.h>
#include <stdlib.h>

#include "api/internal.h"
#include "util/status.h"

typedef struct head_state {
  uint32_t inc, state, end;
} head_state;

/* Heads whose state changes, and heads closed: their tails become garbage. */
typedef struct head_edit {
  head_state *set;
  vptr *closed;
  uint32_t nset, nclosed;
} head_edit;

static int edit_heads(region_desc *d, void *arg, seg_list *freed) {
  (void)freed;
  const head_edit *e = arg;
  for (uint32_t i = 0; i < e->nset; i++) {
    vlog_seg *s = region_desc_find_vlog(d, e->set[i].inc);
    if (!s) continue;
    assert(s->open && s->nsegs == 1);
    s->open = e->set[i].state;
    s->end = e->set[i].end;
  }
  for (uint32_t i = 0; i < e->nclosed; i++) garbage_close_head(d, e->closed[i]);
  return PAR_OK;
}

/* The unwritten tail of a head whose records end at end. */
static vptr tail_from(uint32_t seg, uint32_t inc, uint32_t end) {
  uint32_t used = ALIGN_UP(end, PAR_BLOCK);
  return (vptr){seg, used, inc, PAR_SEGMENT_SIZE - used};
}

int large_heads_park(par_region *r) {
  pthread_mutex_lock(&r->vol->meta_mu);
  uint64_t covered = catalog_find_id(&r->vol->cat, r->id)->covered_lsn;
  pthread_mutex_unlock(&r->vol->meta_mu);
  head_state set[2];
  vptr closed[2];
  head_edit e = {set, closed, 0, 0};
  vlog *heads[2] = {&r->hot, &r->cold};
  const uint32_t parked[2] = {VLOG_PARKED_HOT, VLOG_PARKED_COLD};
  for (int i = 0; i < 2; i++) {
    vlog *h = heads[i];
    int rc = vlog_list_pending(h, UINT64_MAX, covered);
    if (rc) return rc;
    assert(!h->sealed); /* the WAL's last flush wrote it */
    if (!h->seg) continue;
    uint32_t end = h->base + h->fill;
    assert(end < PAR_SEGMENT_SIZE); /* a full head is left when sealed */
    if (h->head_unlogged > covered) /* the close's flush failed: no later session may write after them */
      closed[e.nclosed++] = tail_from(h->seg, h->inc, end);
    else {
      set[e.nset].inc = h->inc;
      set[e.nset].state = parked[i];
      set[e.nset++].end = end;
    }
  }
  return e.nset || e.nclosed ? region_persist(r, edit_heads, &e) : PAR_OK;
}

int large_heads_resume(par_region *r) {
  pthread_mutex_lock(&r->vol->meta_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  uint32_t n = d ? d->nvlog : 0;
  vlog_seg *heads = malloc((n + 1) * sizeof *heads);
  uint32_t nparked = 0;
  for (uint32_t i = 0; heads && i < n; i++)
    if (d->vlog[i].open == VLOG_PARKED_HOT || d->vlog[i].open == VLOG_PARKED_COLD) heads[nparked++] = d->vlog[i];
  pthread_mutex_unlock(&r->vol->meta_mu);
  if (!heads) return par_error(PAR_ENOMEM, "large-log heads");
  head_edit e = {malloc((nparked + 1) * sizeof *e.set), malloc((nparked + 1) * sizeof *e.closed), 0, 0};
  vlog *resume[2] = {NULL, NULL};
  int rc = e.set && e.closed ? PAR_OK : par_error(PAR_ENOMEM, "large-log heads");
  for (uint32_t i = 0; !rc && i < nparked; i++) {
    int hot = heads[i].open == VLOG_PARKED_HOT;
    if (resume[!hot]) {
      /* A second parked head of a log (a session whose resume could not
       * be persisted parked its own): closed. */
      e.closed[e.nclosed++] = tail_from(heads[i].seg, heads[i].inc, heads[i].end);
      continue;
    }
    resume[!hot] = hot ? &r->hot : &r->cold;
    e.set[e.nset].inc = heads[i].inc;
    e.set[e.nset].state = VLOG_OPEN;
    e.set[e.nset++].end = 0;
  }
  /* Open in the catalog before the logs may append to them. */
  if (!rc && (e.nset || e.nclosed)) rc = region_persist(r, edit_heads, &e);
  for (uint32_t i = 0, k = 0; !rc && i < nparked && k < e.nset; i++) {
    if (heads[i].inc != e.set[k].inc) continue;
    k++;
    int hot = heads[i].open == VLOG_PARKED_HOT;
    rc = vlog_resume(hot ? &r->hot : &r->cold, heads[i].seg, heads[i].inc, heads[i].end);
    /* The cold head's records survived a collection (take_cold). */
    if (!rc && !hot) gc_note_settled(&r->gc, heads[i].inc);
  }
  free(e.set);
  free(e.closed);
  free(heads);
  return rc;
}
