/* Maintenance and counters: flush, compact, region statistics. */
#include <string.h>

#include "api/internal.h"
#include "util/status.h"

PAR_API int par_flush(par_region *r) {
  if (!r) return par_error(PAR_EINVAL, "par_flush: NULL region");
  int rc;
  for (;;) {
    /* Wait for an earlier frozen L0 without holding write_mu (GC needs it). */
    pthread_mutex_lock(&r->view_mu);
    if (failed_for_room(r->failed)) r->failed = 0; /* GC may have made room since: retry */
    int frozen = r->view->frozen != NULL;
    pthread_mutex_unlock(&r->view_mu);
    if (frozen) compaction_schedule(r);
    pthread_mutex_lock(&r->view_mu);
    while (r->view->frozen && !r->failed) pthread_cond_wait(&r->view_cv, &r->view_mu);
    rc = r->failed;
    pthread_mutex_unlock(&r->view_mu);
    if (rc) return par_error(rc, "compaction failed: %s", par_strerror(rc));
    pthread_mutex_lock(&r->write_mu);
    if (r->write_failed) {
      /* L0 may hold part of the write that missed it: it must not reach a level. */
      pthread_mutex_unlock(&r->write_mu);
      return par_error(PAR_EFAILED, "an earlier write is logged but missed L0: reopen the region");
    }
    pthread_mutex_lock(&r->view_mu);
    frozen = r->view->frozen != NULL; /* a writer may have frozen one since */
    if (!frozen && r->view->active->entries) rc = region_freeze(r);
    pthread_mutex_unlock(&r->view_mu);
    pthread_mutex_unlock(&r->write_mu);
    if (!frozen) break;
  }
  if (rc) return rc;
  compaction_schedule(r);
  pthread_mutex_lock(&r->view_mu);
  while (!r->failed && compaction_busy(r)) {
    pthread_mutex_unlock(&r->view_mu);
    compaction_schedule(r);
    pthread_mutex_lock(&r->view_mu);
    if (!r->failed && compaction_busy(r)) pthread_cond_wait(&r->view_cv, &r->view_mu);
  }
  rc = r->failed;
  pthread_mutex_unlock(&r->view_mu);
  return rc ? par_error(rc, "compaction failed: %s", par_strerror(rc)) : PAR_OK;
}

PAR_API int par_compact(par_region *r) {
  int rc = par_flush(r);
  if (rc) return rc;
  pthread_mutex_lock(&r->view_mu);
  compaction_set_all(r, 1);
  pthread_mutex_unlock(&r->view_mu);
  rc = par_flush(r); /* waits until no merge is left to run */
  pthread_mutex_lock(&r->view_mu);
  compaction_set_all(r, 0);
  pthread_mutex_unlock(&r->view_mu);
  return rc;
}

PAR_API int par_region_stats(par_region *r, par_stats *out) {
  if (!r || !out) return par_error(PAR_EINVAL, "par_region_stats: NULL argument");
  memset(out, 0, sizeof *out);
  out->puts = atomic_load(&r->stats.puts);
  out->deletes = atomic_load(&r->stats.deletes);
  out->gets = atomic_load(&r->stats.gets);
  out->scans = atomic_load(&r->stats.scans);
  out->user_bytes_written = atomic_load(&r->stats.user_bytes);
  out->compactions = atomic_load(&r->comp.stats.merges);
  out->write_stalls = atomic_load(&r->stats.stalls);
  out->last_lsn = atomic_load(&r->last_lsn);
  out->small_puts = atomic_load(&r->stats.class_puts[CLASS_SMALL]);
  out->medium_puts = atomic_load(&r->stats.class_puts[CLASS_MEDIUM]);
  out->large_puts = atomic_load(&r->stats.class_puts[CLASS_LARGE]);
  out->small_bytes = atomic_load(&r->stats.class_bytes[CLASS_SMALL]);
  out->medium_bytes = atomic_load(&r->stats.class_bytes[CLASS_MEDIUM]);
  out->large_bytes = atomic_load(&r->stats.class_bytes[CLASS_LARGE]);
  out->gc_runs = atomic_load(&r->gc.stats.runs);
  out->gc_bytes_scanned = atomic_load(&r->gc.stats.scanned);
  out->gc_bytes_relocated = atomic_load(&r->gc.stats.relocated);
  out->gc_segments_freed = atomic_load(&r->gc.stats.freed);
  out->large_log_bytes_sorted = atomic_load(&r->comp.stats.large_sorted);
  out->warm_bytes_read = atomic_load(&r->stats.warm_bytes);
  out->medium_log_bytes_written = atomic_load(&r->comp.stats.medium_written);
  out->medium_log_value_reads = atomic_load(&r->stats.log_value_reads[0]);
  out->large_log_value_reads = atomic_load(&r->stats.log_value_reads[1]);
  pthread_mutex_lock(&r->hot.mu);
  out->large_log_bytes_appended = r->hot.bytes;
  pthread_mutex_unlock(&r->hot.mu);
  pthread_mutex_lock(&r->cold.mu);
  out->large_log_bytes_appended += r->cold.bytes;
  pthread_mutex_unlock(&r->cold.mu);
  pthread_mutex_lock(&r->wal.mu);
  out->wal_bytes_appended = r->wal.bytes;
  out->wal_syncs = r->wal.syncs;
  pthread_mutex_unlock(&r->wal.mu);
  /* Segments the logs took count from then on, listed or not (log/wal.h). */
  out->wal_segments = wal_unlisted(&r->wal);
  out->large_log_segments = vlog_unlisted(&r->hot) + vlog_unlisted(&r->cold);
  pthread_mutex_lock(&r->vol->meta_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  out->wal_segments += d ? d->nwal : 0;
  for (uint32_t i = 0; d && i < d->nvlog; i++) {
    out->large_log_garbage_bytes += d->vlog[i].garbage;
    out->large_log_segments += d->vlog[i].nsegs;
  }
  pthread_mutex_unlock(&r->vol->meta_mu);
  uint64_t lsn;
  view *w = region_acquire_view(r, &lsn);
  out->l0_bytes = atomic_load(&w->active->bytes);
  pthread_rwlock_rdlock(&w->active->lock);
  out->l0_entries = w->active->entries;
  pthread_rwlock_unlock(&w->active->lock);
  out->estimated_keys = out->l0_entries;
  if (w->frozen) {
    pthread_rwlock_rdlock(&w->frozen->lock);
    out->estimated_keys += w->frozen->entries;
    pthread_rwlock_unlock(&w->frozen->lock);
  }
  out->pending_compaction_bytes = compaction_pending_bytes(r, w);
  for (int i = 1; i <= PAR_MAX_LEVELS; i++) {
    par_level_stats *l = &out->level[i];
    for (int j = 0; j < LEVEL_TREES; j++) {
      const dtree *t = w->tree[i][j];
      if (!t) continue;
      l->live_bytes += t->d.bytes;
      out->medium_log_segments += t->d.msegs.n;
      l->entries += t->d.entries;
      out->estimated_keys += t->d.entries;
      l->segments += t->d.segs.n;
      if (t->d.height > l->height) l->height = t->d.height;
      out->levels = (uint32_t)i;
    }
    l->compaction_bytes_read = atomic_load(&r->comp.stats.level[i].read);
    l->compaction_bytes_written = atomic_load(&r->comp.stats.level[i].written);
    out->level_small_bytes[i] = atomic_load(&r->comp.stats.level[i].class_bytes[0]);
    out->level_medium_bytes[i] = atomic_load(&r->comp.stats.level[i].class_bytes[1]);
    out->level_large_bytes[i] = atomic_load(&r->comp.stats.level[i].class_bytes[2]);
  }
  view_unref(w);
  return PAR_OK;
}
