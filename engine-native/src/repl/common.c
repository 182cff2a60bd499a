#include <stdlib.h>
#include <string.h>

#include "repl/repl.h"
#include "util/status.h"

int repl_wal_list(par_region *r, wal_list *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&r->vol->meta_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  int rc = d ? PAR_OK : par_error(PAR_ENOENT, "region %u is not in the catalog", r->id);
  if (!rc) {
    out->covered = d->covered_lsn;
    out->n = d->nwal;
    out->w = malloc((d->nwal ? d->nwal : 1) * sizeof *out->w);
    if (!out->w) rc = par_error(PAR_ENOMEM, "WAL list");
    else memcpy(out->w, d->wal, d->nwal * sizeof *out->w);
  }
  pthread_mutex_unlock(&r->vol->meta_mu);
  return rc;
}

void repl_wal_list_free(wal_list *l) {
  free(l->w);
  l->w = NULL;
}

int repl_trim_wal(par_region *r, region_desc *d, int drop_all, seg_list *freed, seg_list *wal_freed) {
  uint32_t drop = region_wal_trimmable(r, d, d->covered_lsn, drop_all);
  for (uint32_t i = 0; i < drop; i++)
    if (seg_list_push(freed, d->wal[i].seg) || seg_list_push(wal_freed, d->wal[i].seg)) return PAR_ENOMEM;
  if (drop) memmove(d->wal, d->wal + drop, (d->nwal - drop) * sizeof *d->wal);
  d->nwal -= drop;
  return PAR_OK;
}
