/* Recovery of an opening region: its device levels from the catalog, its L0
 * by replaying the WAL from the LSN the levels cover. */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "util/coding.h"
#include "util/status.h"

typedef struct replay_ctx {
  par_region *r;
  const region_desc *d;
  uint64_t skip_last; /* ops up to this LSN belong to a part that did not commit */
  crash_losses *lost; /* their large-log values; unflushed unlogged writes */
} replay_ctx;

static int replay_op(void *arg, uint64_t lsn, const wal_op *op) {
  replay_ctx *c = arg;
  par_region *r = c->r;
  int rc = PAR_OK;
  if (op->type == WAL_TXN) {
    /* A cross-region batch's part: applied only if the batch committed. */
    uint64_t last = dec64(op->value);
    if (!txn_part_committed(c->d, lsn, last)) c->skip_last = last;
    return PAR_OK;
  }
  if (op->type == WAL_GAP) {
    /* Writes without the log that the levels do not cover: lost. */
    uint64_t first = lsn > c->d->covered_lsn ? lsn : c->d->covered_lsn + 1;
    return crash_losses_add_unlogged(c->lost, first, lsn + dec64(op->value) - 1);
  }
  if (lsn <= c->skip_last) {
    if (op->type == WAL_PUT_LARGE) garbage_add(&c->lost->values, vptr_decode(op->value));
    return PAR_OK;
  }
  memtable *m;
  while (!(m = region_make_room(r, &rc)) && rc == PAR_EBUSY)
    if ((rc = region_wait_room(r))) return rc;
  if (!m) return rc;
  rc = memtable_insert(m, lsn, op->type, op->key, op->key_len, op->value, op->value_len);
  if (!rc) atomic_store(&r->last_lsn, lsn);
  return rc;
}

static int build_view(par_region *r, const region_desc *d) {
  view *w = view_create(r);
  if (!w) return par_error(PAR_ENOMEM, "view");
  r->view = w;
  w->active = memtable_create();
  if (!w->active) return par_error(PAR_ENOMEM, "L0");
  memtable_set_budget(w->active, &r->vol->budget);
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      if (!tree_desc_present(&d->level[i][j])) continue;
      tree_desc t;
      if (tree_desc_copy(&t, &d->level[i][j])) return par_error(PAR_ENOMEM, "tree");
      w->tree[i][j] = dtree_create(&r->vol->alloc, &t);
      if (!w->tree[i][j]) {
        tree_desc_free(&t);
        return par_error(PAR_ENOMEM, "tree");
      }
    }
  return PAR_OK;
}

int region_recover(par_region *r, const region_desc *d, uint64_t *last, crash_losses *lost) {
  int rc = build_view(r, d);
  *last = d->covered_lsn;
  replay_ctx ctx = {r, d, 0, lost};
  if (!rc) rc = wal_replay(&r->vol->file, d, replay_op, &ctx, last);
  if (!rc) rc = wal_check_end(&r->vol->file, d, *last);
  return rc;
}
