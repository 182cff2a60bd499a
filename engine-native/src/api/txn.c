/* Batches across the regions of a volume (par_write_volume) and snapshots of
 * several regions (par_snapshot_create_many).
 *
 * A batch naming several regions commits in three steps, under vol->txn_mu
 * and with every participant's write_mu held (taken in region id order, so
 * two of them never deadlock; single-region writers take one write_mu and
 * never txn_mu):
 *  1. prepare: each region takes LSNs for its ops and appends one WAL record
 *     marked WAL_TXN (large values go to its large log first); nothing
 *     reaches L0 yet;
 *  2. every participant's WAL is synced up to its record;
 *  3. commit: one redo-log record lists every part (region id, LSN range).
 *     Once it is durable the ops are inserted into the L0s and published.
 * Replay applies a WAL_TXN record only if its range is in the region's
 * catalog description (txn_part_committed): a crash before the commit record
 * is durable leaves the batch in no region, after it in all of them. A part
 * that never committed keeps its LSNs (replay steps over them and the region
 * goes on after them), so a range is never reused. A region's list of parts
 * is pruned as soon as its levels cover them (region_persist), and an L0
 * is flushed early when the list grows long, which bounds it.
 *
 * Readers: the ops reach every L0 while all participants' write_mus are
 * held, and par_snapshot_create_many holds txn_mu while it takes its
 * snapshots, so no batch commits between two of them: such a snapshot sees
 * a cross-region batch wholly or not at all. (Snapshots of one region see
 * that region's part wholly or not at all, as for any batch.) */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "util/status.h"

/* A region's list of committed parts that makes its L0 flush early. */
#define TXN_PARTS_FLUSH 4096u

typedef struct part {
  par_region *r;
  wal_op *ops;
  uint32_t n;
  wal_op *logged;   /* ops as the WAL record holds them: what L0 gets */
  uint8_t *ptrs;    /* n large-value pointers they may point at */
  memtable *m;  /* the L0 to insert into, write_mu held */
  uint64_t lsn; /* first LSN of its ops */
} part;

int txn_part_committed(const region_desc *d, uint64_t first, uint64_t last) {
  return region_desc_has_part(d, first, last);
}

static int region_is_open(par_volume *v, const par_region *r) {
  for (const par_region *o = v->open; o; o = o->next_open)
    if (o == r) return 1;
  return 0;
}

static int cmp_part(const void *a, const void *b) {
  uint32_t x = ((const part *)a)->r->id, y = ((const part *)b)->r->id;
  return x < y ? -1 : x > y;
}

static void free_parts(part *p, uint32_t np) {
  for (uint32_t i = 0; i < np; i++) {
    free(p[i].ops);
    free(p[i].logged);
    free(p[i].ptrs);
  }
  free(p);
}

/* Groups the ops by region, in region id order, each region's ops in batch
 * order; checks every region is an open region of v. */
static int group(par_volume *v, const wal_op *ops, par_region *const *regions, uint32_t n, part **out,
                 uint32_t *nparts) {
  part *p = NULL;
  uint32_t np = 0;
  int rc = PAR_OK;
  pthread_mutex_lock(&v->meta_mu);
  for (uint32_t i = 0; i < n && !rc; i++) {
    if (!regions[i]) {
      rc = par_error(PAR_EINVAL, "par_write_volume: op %u names no region (par_batch_put_in)", i);
      break;
    }
    uint32_t k = 0;
    while (k < np && p[k].r != regions[i]) k++;
    if (k < np) {
      p[k].n++;
      continue;
    }
    /* Compared by address before anything is read through the pointer. */
    if (!region_is_open(v, regions[i])) {
      rc = par_error(PAR_EINVAL, "par_write_volume: op %u names a region that is closed or belongs to "
                     "another volume", i);
      break;
    }
    part *q = realloc(p, (np + 1) * sizeof *q);
    if (!q) {
      rc = par_error(PAR_ENOMEM, "batch parts");
      break;
    }
    p = q;
    p[np++] = (part){.r = regions[i], .n = 1};
  }
  pthread_mutex_unlock(&v->meta_mu);
  for (uint32_t k = 0; k < np && !rc; k++) {
    p[k].ops = malloc(p[k].n * sizeof *p[k].ops);
    p[k].logged = malloc(p[k].n * sizeof *p[k].logged);
    p[k].ptrs = malloc((size_t)p[k].n * VPTR_SIZE);
    if (!p[k].ops || !p[k].logged || !p[k].ptrs) rc = par_error(PAR_ENOMEM, "batch parts");
    p[k].n = 0;
  }
  if (rc) {
    free_parts(p, np);
    return rc;
  }
  qsort(p, np, sizeof *p, cmp_part);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t k = 0;
    while (p[k].r != regions[i]) k++;
    p[k].ops[p[k].n++] = ops[i];
  }
  *out = p;
  *nparts = np;
  return PAR_OK;
}

static void unlock_parts(part *p, uint32_t k) {
  while (k--) pthread_mutex_unlock(&p[k].r->write_mu);
}

/* Takes every participant's write_mu, in id order, each with room in its
 * L0; a full one is waited for holding none of them (GC needs write_mu). */
static int lock_parts(part *p, uint32_t np) {
  for (;;) {
    int rc = PAR_OK;
    uint32_t i;
    for (i = 0; i < np; i++) {
      pthread_mutex_lock(&p[i].r->write_mu);
      if (!(p[i].m = region_make_room(p[i].r, &rc))) {
        pthread_mutex_unlock(&p[i].r->write_mu);
        break;
      }
    }
    if (i == np) return PAR_OK;
    unlock_parts(p, i);
    if (rc != PAR_EBUSY) return rc;
    if ((rc = region_wait_room(p[i].r))) return rc;
  }
}

/* Step 3's record, and the parts in the catalog's descriptions. They are
 * added first and taken back if the record fails, so that a durable record
 * is never missing from the catalog (a later checkpoint writes the catalog). */
static int commit(par_volume *v, const part *p, uint32_t np) {
  txn_part *tp = malloc(np * sizeof *tp);
  if (!tp) return par_error(PAR_ENOMEM, "commit record");
  int rc = PAR_OK;
  uint32_t added = 0;
  pthread_mutex_lock(&v->meta_mu);
  for (; added < np && !rc; added++) {
    tp[added] = (txn_part){p[added].r->id, p[added].lsn, p[added].lsn + p[added].n - 1};
    region_desc *d = catalog_find_id(&v->cat, p[added].r->id);
    if (!d) rc = par_error(PAR_ENOENT, "region %u is not in the catalog", p[added].r->id);
    else rc = region_desc_add_part(d, tp[added].first, tp[added].last);
    if (rc) break;
  }
  if (!rc) rc = redolog_commit_parts(&v->log, tp, np);
  if (rc)
    for (uint32_t i = 0; i < added; i++) catalog_find_id(&v->cat, tp[i].region_id)->nparts--;
  pthread_mutex_unlock(&v->meta_mu);
  free(tp);
  return rc;
}

/* Inserts a committed part into its L0 and publishes it (write_mu held). */
static int publish(part *p) {
  int rc = PAR_OK;
  for (uint32_t i = 0; i < p->n && !rc; i++) {
    const wal_op *op = &p->logged[i]; /* what replay would insert */
    rc = memtable_insert(p->m, p->lsn + i, op->type, op->key, op->key_len, op->value, op->value_len);
  }
  if (rc) {
    /* Part of the batch may be in L0: no later write may make it visible. */
    p->r->write_failed = rc;
    return par_error(rc, "a committed cross-region batch could not be applied to region '%s' "
                     "(it will be after a reopen, and the region refuses writes until then): %s",
                     p->r->name, par_strerror(rc));
  }
  atomic_store(&p->r->last_lsn, p->lsn + p->n - 1);
  return PAR_OK;
}

/* Freezes the L0 of a region whose list of parts grew long, so that a flush
 * covers them and prunes the list (write_mu held); 1 if it froze one. */
static int flush_early(par_region *r) {
  pthread_mutex_lock(&r->vol->meta_mu);
  region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  int want = d && d->nparts >= TXN_PARTS_FLUSH;
  pthread_mutex_unlock(&r->vol->meta_mu);
  int froze = 0;
  pthread_mutex_lock(&r->view_mu);
  if (want && !r->view->frozen && r->view->active->entries) froze = region_freeze(r) == PAR_OK;
  pthread_mutex_unlock(&r->view_mu);
  return froze;
}

static void count_stats(const part *p) {
  for (uint32_t i = 0; i < p->n; i++) {
    atomic_fetch_add(p->ops[i].type == WAL_DELETE ? &p->r->stats.deletes : &p->r->stats.puts, 1);
    atomic_fetch_add(&p->r->stats.user_bytes, p->ops[i].key_len + p->ops[i].value_len);
  }
}

static int write_parts(par_volume *v, part *p, uint32_t np) {
  pthread_mutex_lock(&v->txn_mu);
  int rc = lock_parts(p, np);
  if (rc) {
    pthread_mutex_unlock(&v->txn_mu);
    return rc;
  }
  for (uint32_t i = 0; i < np && !rc; i++)
    if (p[i].r->write_failed)
      rc = par_error(PAR_EFAILED, "region '%s' refuses writes until it is reopened", p[i].r->name);
  for (uint32_t i = 0; i < np && !rc; i++) rc = region_check_writer(p[i].r);
  for (uint32_t i = 0; i < np && !rc; i++) rc = region_check_range_room(p[i].r, p[i].ops, p[i].n);
  for (uint32_t i = 0; i < np && !rc; i++) {
    par_region *r = p[i].r;
    p[i].lsn = r->next_lsn;
    /* Once its record is in the WAL, the LSNs are taken whatever happens
     * next (region_log_and_insert moves next_lsn past them). */
    rc = region_log_and_insert(r, p[i].m, p[i].lsn, p[i].ops, p[i].n, WRITE_PART, p[i].logged, p[i].ptrs);
  }
  for (uint32_t i = 0; i < np && !rc; i++) rc = wal_sync(&p[i].r->wal, p[i].lsn + p[i].n - 1);
  if (!rc) rc = commit(v, p, np);
  int committed = !rc;
  for (uint32_t i = 0; i < np && committed; i++) {
    int prc = publish(&p[i]);
    if (prc && !rc) rc = prc;
  }
  int froze[np];
  for (uint32_t i = 0; i < np; i++) froze[i] = committed && flush_early(p[i].r);
  unlock_parts(p, np);
  pthread_mutex_unlock(&v->txn_mu);
  for (uint32_t i = 0; i < np; i++) {
    if (froze[i]) compaction_schedule(p[i].r);
    if (committed) count_stats(&p[i]);
  }
  return rc;
}

PAR_API int par_write_volume(par_volume *v, const par_batch *b, unsigned flags) {
  if (!v || !b) return par_error(PAR_EINVAL, "par_write_volume: NULL argument");
  int rc = region_check_flags(flags);
  if (rc) return rc;
  if (flags & PAR_NO_WAL)
    return par_error(PAR_EINVAL, "par_write_volume: a cross-region batch is always logged (PAR_NO_WAL)");
  size_t n = par_batch_count(b);
  if (!n) return PAR_OK;
  budget_admit(v);
  par_region *const *regions;
  wal_op *ops = batch_resolve(b, &regions);
  if (!ops) return PAR_ENOMEM;
  part *p = NULL;
  uint32_t np = 0;
  rc = group(v, ops, regions, (uint32_t)n, &p, &np);
  if (!rc && np == 1) {
    /* One region: an ordinary batch (the sync flag is honoured there). */
    rc = region_apply(p[0].r, p[0].ops, p[0].n, flags);
  } else if (!rc) {
    for (uint32_t i = 0; i < np; i++) gc_admit(p[i].r);
    rc = write_parts(v, p, np); /* durable when it returns: step 2 synced it */
  }
  if (p) free_parts(p, np);
  free(ops);
  return rc;
}

PAR_API int par_snapshot_create_many(size_t n, par_region *const *regions, par_snapshot **out) {
  if (!n || !regions || !out) return par_error(PAR_EINVAL, "par_snapshot_create_many: NULL or empty argument");
  for (size_t i = 0; i < n; i++) {
    if (!regions[i]) return par_error(PAR_EINVAL, "par_snapshot_create_many: region %zu is NULL", i);
    if (regions[i]->vol != regions[0]->vol)
      return par_error(PAR_EINVAL, "par_snapshot_create_many: the regions belong to different volumes");
  }
  par_volume *v = regions[0]->vol;
  int rc = PAR_OK;
  size_t i;
  pthread_mutex_lock(&v->txn_mu);
  for (i = 0; i < n && !rc; i++) rc = par_snapshot_create(regions[i], &out[i]);
  pthread_mutex_unlock(&v->txn_mu);
  if (rc) {
    for (size_t k = 0; k + 1 < i; k++) par_snapshot_release(out[k]);
    for (size_t k = 0; k < n; k++) out[k] = NULL;
  }
  return rc;
}
