/* The volume's memory budget (par_options.memory_budget_mib): the L0s of
 * all its regions together stay under one limit, instead of each region
 * holding up to 2 x l0_size (alloc/membudget.h counts the bytes).
 *
 * A writer (par_put, par_delete, par_write, par_write_volume) that finds the
 * budget reached waits, holding no lock, before it takes its region's
 * write_mu. Meanwhile the largest L0 of the volume that can be frozen (an
 * active L0 holding entries, of a region with no frozen L0) is frozen by a
 * compaction worker and flushed, as RocksDB's WriteBufferManager flushes the
 * largest memtable; its bytes are given back when the flush commits. The
 * writer goes on once the count is under the limit, so the count exceeds
 * the limit by at most the writes that passed the check at the same time
 * (one per writing thread). It also goes on when nothing can be flushed
 * (no L0 holds entries and none is frozen) and when no L0
 * memory was given back for BUDGET_PATIENCE_MS (a region whose compaction
 * failed keeps its frozen L0: others must not wait for it forever).
 * Replay at region open and GC's relocations do not wait. */
#include <time.h>

#include "api/internal.h"
#include "util/clock.h"

#define BUDGET_PATIENCE_MS 5000u
#define BUDGET_WAIT_MS 10u

/* Asks a worker to freeze the largest freezable L0; returns 1 if a flush
 * is under way or was asked for (used will drop), 0 if there is nothing to
 * flush. */
static int relieve(par_volume *v) {
  par_region *largest = NULL;
  uint64_t most = 0;
  int flushing = 0;
  pthread_mutex_lock(&v->meta_mu);
  for (par_region *r = v->open; r; r = r->next_open) {
    pthread_mutex_lock(&r->cur_mu);
    const view *w = r->view;
    uint64_t bytes = w && w->active ? atomic_load(&w->active->bytes) : 0;
    /* entries changes under the region's write_mu, not held here: a
     * relaxed read is enough to choose (region_freeze_if_wanted checks again). */
    int frozen = w && w->frozen;
    int freezable = w && w->active && !frozen && __atomic_load_n(&w->active->entries, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&r->cur_mu);
    flushing |= frozen;
    if (freezable && bytes > most) {
      most = bytes;
      largest = r;
    }
  }
  /* The pin keeps largest allocated until compaction_schedule returns:
   * a closing region waits for it after leaving the open list. */
  if (largest) atomic_fetch_add(&largest->budget_pins, 1);
  pthread_mutex_unlock(&v->meta_mu);
  if (!largest) return flushing;
  atomic_store(&largest->freeze_wanted, 1);
  compaction_schedule(largest);
  atomic_fetch_sub(&largest->budget_pins, 1);
  return 1;
}

void budget_admit(par_volume *v) {
  mem_budget *b = &v->budget;
  uint64_t low = atomic_load(&b->used), since = 0;
  while (membudget_over(b) && relieve(v)) {
    uint64_t used = atomic_load(&b->used), t = clock_mono_ms();
    if (!since || used < low) {
      low = used;
      since = t;
    } else if (t - since > BUDGET_PATIENCE_MS) {
      return;
    }
    membudget_wait(b, BUDGET_WAIT_MS);
  }
}

