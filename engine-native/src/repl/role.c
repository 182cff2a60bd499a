/* A region's replication role, promotion of a backup, and the counters. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repl/repl.h"
#include "util/status.h"

typedef struct promote_ctx {
  par_region *r;
  uint64_t in_l0; /* LSNs up to here are in L0 or the levels already */
} promote_ctx;

/* Inserts one logged op into L0, as a write would (never waiting for a
 * compaction while holding write_mu). */
static int promote_op(void *arg, uint64_t lsn, const wal_op *op) {
  promote_ctx *c = arg;
  par_region *r = c->r;
  if (lsn <= c->in_l0 || op->type == WAL_GAP) return PAR_OK;
  /* A log copy holds shipped records only: never a cross-region batch's part. */
  if (op->type == WAL_TXN)
    return par_error(PAR_ECORRUPT, "the log copy of region '%s' holds a cross-region batch", r->name);
  int rc = PAR_OK;
  for (;;) {
    pthread_mutex_lock(&r->write_mu);
    memtable *m = region_make_room(r, &rc);
    if (m) {
      rc = memtable_insert(m, lsn, op->type, op->key, op->key_len, op->value, op->value_len);
      if (!rc) atomic_store(&r->last_lsn, lsn);
    }
    pthread_mutex_unlock(&r->write_mu);
    if (m || rc != PAR_EBUSY) return rc;
    if ((rc = region_wait_room(r))) return rc;
  }
}

/* The log copy of a send-index backup, replayed into L0 from the newest LSN
 * L0 holds (the catalog's covered LSN at the least: wal_replay starts
 * there). */
static int promote_replay(par_region *r) {
  pthread_mutex_lock(&r->write_mu);
  uint64_t log_last = r->next_lsn - 1;
  pthread_mutex_unlock(&r->write_mu);
  int rc = wal_sync(&r->wal, log_last);
  if (rc) return rc;
  par_volume *v = r->vol;
  region_desc d;
  memset(&d, 0, sizeof d);
  pthread_mutex_lock(&v->meta_mu);
  rc = region_desc_copy(&d, catalog_find_id(&v->cat, r->id));
  pthread_mutex_unlock(&v->meta_mu);
  promote_ctx c = {r, atomic_load(&r->last_lsn)};
  uint64_t last = 0;
  if (!rc) rc = wal_replay(&v->file, &d, promote_op, &c, &last);
  region_desc_free(&d);
  if (!rc && last < log_last)
    rc = par_error(PAR_ECORRUPT, "the log copy of region '%s' ends at LSN %llu, not %llu", r->name,
                   (unsigned long long)last, (unsigned long long)log_last);
  if (!rc) atomic_store(&r->last_lsn, log_last);
  return rc;
}

PAR_API int par_repl_set_role(par_region *r, int role) {
  if (!r) return par_error(PAR_EINVAL, "par_repl_set_role: NULL region");
  if (role != PAR_REPL_PRIMARY && role != PAR_REPL_BACKUP_SEND_INDEX && role != PAR_REPL_BACKUP_BUILD_INDEX)
    return par_error(PAR_EINVAL, "%d is not a replication role", role);
  pthread_mutex_lock(&r->write_mu);
  pthread_mutex_lock(&r->view_mu);
  int old = r->repl_role, rc = PAR_OK;
  if (old == PAR_REPL_BACKUP_BUILD_INDEX && role == PAR_REPL_BACKUP_SEND_INDEX)
    rc = par_error(PAR_EINVAL, "region '%s' cannot change from build-index to send-index", r->name);
  else if (old == PAR_REPL_PRIMARY && role != PAR_REPL_PRIMARY && r->next_lsn != r->open_lsn)
    rc = par_error(PAR_EBUSY,
                   "region '%s' took LSNs %llu..%llu of its own (writes or GC relocations) since it was "
                   "opened: as a backup it would skip the shipped records of those LSNs",
                   r->name, (unsigned long long)r->open_lsn, (unsigned long long)r->next_lsn - 1);
  else if (old == PAR_REPL_BACKUP_SEND_INDEX && role != old && r->next_lsn <= r->repl_needs_lsn)
    rc = par_error(PAR_EBUSY,
                   "region '%s' cannot be promoted before its log copy reaches LSN %llu (it holds %llu): its levels "
                   "point into a large-log segment it never had, whose values relocations up to there moved",
                   r->name, (unsigned long long)r->repl_needs_lsn, (unsigned long long)r->next_lsn - 1);
  else if (old == PAR_REPL_BACKUP_SEND_INDEX && role != old) {
    /* The replay below reads the values apply put in the mirror, and runs
     * as a build-index backup does: it flushes and merges what it puts in
     * L0, but takes no LSN of its own. A GC relocation during it would give
     * a value the levels hold an LSN past the whole log copy, shadowing the
     * newer writes still to replay (and a flush covering that LSN would
     * free the log segments not read yet). */
    rc = repl_mirror_settle(r, 0);
    if (!rc) r->repl_role = PAR_REPL_BACKUP_BUILD_INDEX;
  }
  else
    r->repl_role = role;
  pthread_mutex_unlock(&r->view_mu);
  pthread_mutex_unlock(&r->write_mu);
  if (rc || old == role) return rc;
  if (role == PAR_REPL_BACKUP_SEND_INDEX) {
    compaction_drain(r); /* a compaction already running finishes; no other starts */
    return repl_mirror_rebuild(r);
  }
  /* To PRIMARY or BUILD_INDEX: L0 takes the log copy; compactions resume. */
  if (old == PAR_REPL_BACKUP_SEND_INDEX) rc = promote_replay(r);
  if (!rc && old == PAR_REPL_BACKUP_SEND_INDEX && role == PAR_REPL_PRIMARY) {
    pthread_mutex_lock(&r->write_mu);
    pthread_mutex_lock(&r->view_mu);
    assert(r->repl_role == PAR_REPL_BACKUP_BUILD_INDEX);
    r->repl_role = role; /* GC may relocate from now on: every shipped LSN is in L0 or the levels */
    pthread_mutex_unlock(&r->view_mu);
    pthread_mutex_unlock(&r->write_mu);
  }
  if (rc) {
    /* Not promoted: the region stays a send-index backup, so that a caller
     * retrying the promotion replays again (from what L0 took, last_lsn)
     * instead of finding the role changed and serving without its log
     * copy. A flush the replay started finishes; no other starts. */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", par_last_error());
    pthread_mutex_lock(&r->write_mu);
    pthread_mutex_lock(&r->view_mu);
    r->repl_role = PAR_REPL_BACKUP_SEND_INDEX;
    /* A flush may have replaced installed trees: no tree counts as held. */
    memset(r->repl_tree_id, 0, sizeof r->repl_tree_id);
    pthread_mutex_unlock(&r->view_mu);
    pthread_mutex_unlock(&r->write_mu);
    compaction_drain(r);
    return par_error(rc, "promotion of region '%s' failed (it stays a send-index backup): %s", r->name, msg);
  }
  compaction_schedule(r);
  return PAR_OK;
}

PAR_API size_t par_repl_stats(par_region *r, uint64_t *out, size_t cap) {
  if (!r || !out) return PAR_REPL_STAT_COUNT;
  uint64_t s[PAR_REPL_STAT_COUNT];
  pthread_mutex_lock(&r->write_mu);
  s[PAR_REPL_STAT_ROLE] = (uint64_t)r->repl_role;
  s[PAR_REPL_STAT_LOG_LSN] = r->next_lsn - 1;
  pthread_mutex_unlock(&r->write_mu);
  s[PAR_REPL_STAT_L0_LSN] = atomic_load(&r->last_lsn);
  pthread_mutex_lock(&r->vol->meta_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  s[PAR_REPL_STAT_COVERED_LSN] = d ? d->covered_lsn : 0;
  pthread_mutex_unlock(&r->vol->meta_mu);
  s[PAR_REPL_STAT_RECORDS_APPLIED] = atomic_load(&r->repl_stats.applied);
  s[PAR_REPL_STAT_RECORDS_SKIPPED] = atomic_load(&r->repl_stats.skipped);
  s[PAR_REPL_STAT_TREES_INSTALLED] = atomic_load(&r->repl_stats.trees);
  s[PAR_REPL_STAT_SEGMENTS_INSTALLED] = atomic_load(&r->repl_stats.segments);
  s[PAR_REPL_STAT_COMPACTIONS] = atomic_load(&r->comp.stats.merges);
  s[PAR_REPL_STAT_MIRROR_BYTES] = atomic_load(&r->repl_stats.mirror_bytes);
  s[PAR_REPL_STAT_MEDIUM_SEGMENTS] = atomic_load(&r->repl_stats.medium_segments);
  s[PAR_REPL_STAT_SEGMENT_BYTES] = atomic_load(&r->repl_stats.segment_bytes);
  size_t n = cap < PAR_REPL_STAT_COUNT ? cap : PAR_REPL_STAT_COUNT;
  memcpy(out, s, n * sizeof *out);
  return PAR_REPL_STAT_COUNT;
}
