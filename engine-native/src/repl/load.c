/* A build-index backup's state transfer by snapshot: the primary's pairs at
 * one LSN are written into a new copy as writes without the log, and
 * par_repl_rebase then makes the copy that LSN's state.
 *
 * Shipped levels (send index) are the primary's leaves byte for byte, so
 * they can only hold values in place. Loaded pairs take the backup's own
 * placement instead: a large value goes to the backup's large log as any
 * write's does, which is why a build-index region may use hybrid placement
 * and values up to PAR_MAX_VALUE_SIZE.
 *
 * The loaded writes take the backup's LSNs 1..N, and N <= the snapshot's
 * LSN X (each live pair was written by at least one op up to X), so every
 * record shipped afterwards (X + 1 on) is newer than every loaded pair. */
#include <assert.h>

#include "repl/repl.h"
#include "util/status.h"

PAR_API int par_repl_snapshot(par_region *r, par_snapshot **out, uint64_t *lsn) {
  if (!r || !out || !lsn) return par_error(PAR_EINVAL, "par_repl_snapshot: NULL argument");
  *out = NULL;
  par_snapshot *s;
  int rc = par_snapshot_create(r, &s);
  if (rc) return rc;
  /* A backup must never hold a record its primary's crash could roll back:
   * the primary's successor would reuse those LSNs for other writes, which
   * the backup would then skip as held. */
  rc = wal_sync(&r->wal, s->lsn);
  if (rc) {
    par_snapshot_release(s);
    return rc;
  }
  *out = s;
  *lsn = s->lsn;
  return PAR_OK;
}

typedef struct rebase_edit {
  par_region *r;
  uint64_t lsn;
  seg_list wal_freed;
} rebase_edit;

/* The levels cover lsn; the log (the load's gap records) goes. */
static int edit_rebase(region_desc *d, void *arg, seg_list *freed) {
  rebase_edit *e = arg;
  assert(e->lsn >= d->covered_lsn);
  d->covered_lsn = e->lsn;
  return repl_trim_wal(e->r, d, 1, freed, &e->wal_freed);
}

PAR_API int par_repl_rebase(par_region *r, uint64_t lsn) {
  if (!r) return par_error(PAR_EINVAL, "par_repl_rebase: NULL region");
  pthread_mutex_lock(&r->write_mu);
  int role = r->repl_role;
  uint64_t last = r->next_lsn - 1;
  pthread_mutex_unlock(&r->write_mu);
  if (role != PAR_REPL_BACKUP_BUILD_INDEX)
    return par_error(PAR_EINVAL, "region '%s' is not a build-index backup", r->name);
  if (last > lsn)
    return par_error(PAR_EINVAL, "region '%s' holds LSN %llu, past the snapshot's %llu", r->name,
                     (unsigned long long)last, (unsigned long long)lsn);
  /* The loaded pairs, written without the log, become durable in the levels. */
  int rc = par_flush(r);
  if (rc) return rc;
  /* write_mu: no write or shipped record while the log restarts. */
  pthread_mutex_lock(&r->write_mu);
  pthread_mutex_lock(&r->view_mu);
  if (r->next_lsn - 1 != last || r->view->frozen || r->view->active->entries)
    rc = par_error(PAR_EBUSY, "region '%s' was written during its rebase", r->name);
  if (!rc) rc = wal_restart(&r->wal);
  rebase_edit e = {r, lsn, {0}};
  if (!rc) rc = region_persist(r, edit_rebase, &e);
  if (!rc) {
    wal_skip_to(&r->wal, lsn);
    for (uint32_t i = 0; i < e.wal_freed.n; i++) segalloc_free(&r->vol->alloc, e.wal_freed.v[i]);
    r->next_lsn = lsn + 1;
    atomic_store(&r->last_lsn, lsn);
  }
  pthread_mutex_unlock(&r->view_mu);
  pthread_mutex_unlock(&r->write_mu);
  seg_list_free(&e.wal_freed);
  return rc;
}
