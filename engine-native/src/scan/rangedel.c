#include "scan/rangedel.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "util/status.h"

int rdel_add_memtable(rdel *d, memtable *m, uint64_t snap) {
  assert(d->n < RDEL_MAX_SOURCES);
  int i = d->n++;
  int rc = memtable_range_tombs(m, snap, &d->src[i].l0, &d->src[i].nl0, &d->src[i].l0_cover);
  d->src[i].set = &d->src[i].l0_cover;
  d->any |= d->src[i].nl0 != 0;
  return rc;
}

void rdel_add_tree(rdel *d, const range_set *set) {
  assert(d->n < RDEL_MAX_SOURCES);
  d->src[d->n++].set = set;
  d->any |= set->n != 0;
}

void rdel_free(rdel *d) {
  for (int i = 0; i < d->n; i++) {
    free(d->src[i].l0);
    range_set_free(&d->src[i].l0_cover);
  }
  memset(d, 0, sizeof *d);
}

int rdel_hides(const rdel *d, int i, uint64_t lsn, const void *key, size_t key_len) {
  if (!d->any) return 0;
  assert(i < d->n);
  for (int s = 0; s < i; s++)
    if (range_set_covers(d->src[s].set, key, key_len)) return 1;
  /* The entry's own L0: only tombstones newer than it (newest first). */
  for (uint32_t k = d->src[i].nl0; k-- > 0 && d->src[i].l0[k]->lsn > lsn;)
    if (mt_range_holds(d->src[i].l0[k], key, key_len)) return 1;
  return 0;
}

int rdel_union(const rdel *d, range_set *out) {
  for (int s = 0; s < d->n; s++) {
    int rc = range_set_union(out, d->src[s].set);
    if (rc) return rc;
  }
  return PAR_OK;
}
