#include "scan/rangedel.h"

#include <assert.h>
#include <stdlib.h>

#include "util/coding.h"
#include "util/status.h"

int rdel_add_memtable(rdel *d, memtable *m, uint64_t snap) {
  assert(d->n < RDEL_MAX_SOURCES);
  int i = d->n++;
  int rc = memtable_range_tombs(m, snap, &d->src[i].l0, &d->src[i].nl0);
  d->any |= d->src[i].nl0 != 0;
  return rc;
}

void rdel_add_tree(rdel *d, const range_set *set) {
  assert(d->n < RDEL_MAX_SOURCES);
  d->src[d->n++].set = set;
  d->any |= set->n != 0;
}

void rdel_free(rdel *d) {
  for (int i = 0; i < d->n; i++) free(d->src[i].l0);
  d->n = 0;
  d->any = 0;
}

static int tomb_holds(const mt_entry *t, const void *key, size_t key_len) {
  return key_cmp(mt_key(t), t->key_len, key, key_len) <= 0 && key_cmp(key, key_len, mt_value(t), t->value_len) < 0;
}

int rdel_hides(const rdel *d, int i, uint64_t lsn, const void *key, size_t key_len) {
  if (!d->any) return 0;
  assert(i < d->n);
  for (int s = 0; s <= i; s++) {
    if (d->src[s].set && s < i && range_set_covers(d->src[s].set, key, key_len)) return 1;
    for (uint32_t k = d->src[s].nl0; k-- > 0;) { /* newest first */
      const mt_entry *t = d->src[s].l0[k];
      if (s == i && t->lsn < lsn) break; /* the entry's own L0: only newer tombstones */
      if (tomb_holds(t, key, key_len)) return 1;
    }
  }
  return 0;
}

int rdel_union(const rdel *d, range_set *out) {
  for (int s = 0; s < d->n; s++) {
    int rc = d->src[s].set ? range_set_union(out, d->src[s].set) : PAR_OK;
    for (uint32_t k = 0; !rc && k < d->src[s].nl0; k++) {
      const mt_entry *t = d->src[s].l0[k];
      rc = range_set_add(out, mt_key(t), t->key_len, mt_value(t), t->value_len);
    }
    if (rc) return rc;
  }
  return PAR_OK;
}
