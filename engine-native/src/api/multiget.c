/* Multi-get: many keys looked up in one snapshot in one call. The keys are
 * sorted first, then each source (the two L0s, then the device trees from
 * L1 down) is visited once, its still unresolved keys in key order, so
 * consecutive lookups walk the same index nodes and leaves while they are
 * in the cache; a key stops at the newest source that has it. */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "io/mapguard.h"
#include "util/coding.h"
#include "util/status.h"

typedef struct mg_key {
  uint64_t pfx; /* the first 8 bytes, big-endian, zero-padded: most comparisons stop here */
  const uint8_t *key;
  size_t len;
  size_t idx; /* the caller's index */
} mg_key;

static int cmp_mg_key(const void *a, const void *b) {
  const mg_key *x = a, *y = b;
  if (x->pfx != y->pfx) return x->pfx < y->pfx ? -1 : 1;
  return key_cmp(x->key, x->len, y->key, y->len);
}

static uint64_t prefix_of(const void *key, size_t len) {
  uint8_t b[8] = {0};
  memcpy(b, key, len < 8 ? len : 8);
  return __builtin_bswap64(dec64(b));
}

/* Sorts the valid keys into *out (statuses[] gets the others' errors and
 * PAR_NOT_FOUND for the rest); returns how many are valid. */
static size_t sort_keys(size_t n, const void *const *keys, const size_t *key_lens, int *statuses, mg_key *out) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    statuses[i] = region_check_key(keys[i], key_lens[i]);
    if (statuses[i]) continue;
    statuses[i] = PAR_NOT_FOUND;
    out[m++] = (mg_key){prefix_of(keys[i], key_lens[i]), keys[i], key_lens[i], i};
  }
  qsort(out, m, sizeof *out, cmp_mg_key);
  return m;
}

/* Looks the unresolved keys of k[0..m) up in one source; a key found there
 * (a tombstone too: it hides the older sources) is resolved, and so is a
 * key the source's range tombstones hide (absent). Returns how
 * many stay unresolved; k[] keeps those, in order. kp, kl and found are
 * scratch arrays of m entries. */
static size_t lookup_memtable(memtable *mt, uint64_t lsn, mg_key *k, size_t m, tree_entry *ents,
                              int *statuses, const void **kp, size_t *kl, const mt_entry **found) {
  for (size_t j = 0; j < m; j++) {
    kp[j] = k[j].key;
    kl[j] = k[j].len;
  }
  memtable_get_many(mt, m, kp, kl, lsn, found);
  size_t left = 0;
  for (size_t j = 0; j < m; j++) {
    const mt_entry *e = found[j];
    if (memtable_range_hides(mt, k[j].key, k[j].len, lsn, e ? e->lsn : 0)) continue; /* resolved: absent */
    if (!e) {
      k[left++] = k[j];
      continue;
    }
    ents[k[j].idx] = (tree_entry){.cat = mt_category(e), .key = mt_key(e), .key_len = e->key_len,
                                  .value = mt_value(e), .value_len = e->value_len};
    statuses[k[j].idx] = ents[k[j].idx].cat == CAT_TOMBSTONE ? PAR_NOT_FOUND : PAR_OK;
  }
  return left;
}

/* The same for a device tree, through tree_get_batch; kp, kl, te and rc are
 * scratch arrays of m entries. */
static size_t lookup_tree(par_region *r, dtree *t, mg_key *k, size_t m, tree_entry *ents, int *statuses,
                          const void **kp, size_t *kl, tree_entry *te, int *rc) {
  for (size_t j = 0; j < m; j++) {
    kp[j] = k[j].key;
    kl[j] = k[j].len;
  }
  tree_get_batch(&r->keys, &t->d, &t->checks, m, kp, kl, te, rc);
  size_t left = 0;
  for (size_t j = 0; j < m; j++) {
    if (rc[j] == PAR_NOT_FOUND && range_set_covers(&t->d.rtombs, k[j].key, k[j].len)) continue;
    if (rc[j] == PAR_NOT_FOUND) {
      k[left++] = k[j];
      continue;
    }
    ents[k[j].idx] = te[j];
    statuses[k[j].idx] = rc[j] ? rc[j] : te[j].cat == CAT_TOMBSTONE ? PAR_NOT_FOUND : PAR_OK;
  }
  return left;
}

typedef struct mg_call {
  par_snapshot *s;
  size_t n;
  const void *const *keys;
  const size_t *key_lens;
  const void **values;
  size_t *value_lens;
  int *statuses;
  uint8_t *mem; /* the scratch block described in par_multi_get */
} mg_call;

/* The lookups and value reads, guarded (io/mapguard.h). */
static int multi_lookup(void *arg) {
  mg_call *c = arg;
  size_t n = c->n;
  par_snapshot *s = c->s;
  mg_key *k = (mg_key *)c->mem;
  tree_entry *ents = (tree_entry *)(k + n), *te = ents + n;
  const void **kp = (const void **)(te + n);
  size_t *kl = (size_t *)(kp + n);
  const mt_entry **found = (const mt_entry **)(kl + n);
  int *rc = (int *)(found + n);
  int *statuses = c->statuses;
  par_region *r = s->region;
  size_t m = sort_keys(n, c->keys, c->key_lens, statuses, k);
  const view *w = s->v;
  memtable *mts[2] = {w->active, w->frozen};
  for (int i = 0; i < 2 && m; i++)
    if (mts[i]) m = lookup_memtable(mts[i], s->lsn, k, m, ents, statuses, kp, kl, found);
  for (int i = 1; i <= PAR_MAX_LEVELS && m; i++)
    for (int j = 0; j < LEVEL_TREES && m; j++)
      if (w->tree[i][j]) m = lookup_tree(r, w->tree[i][j], k, m, ents, statuses, kp, kl, te, rc);
  for (size_t i = 0; i < n; i++) {
    c->values[i] = NULL;
    c->value_lens[i] = 0;
    if (statuses[i] != PAR_OK) continue;
    const uint8_t *v;
    uint32_t vl;
    statuses[i] = snapshot_value(s, &ents[i], &v, &vl);
    if (statuses[i] == PAR_OK) {
      c->values[i] = v;
      c->value_lens[i] = vl;
    }
  }
  return PAR_OK;
}

PAR_API int par_multi_get(par_snapshot *s, size_t n, const void *const *keys, const size_t *key_lens,
                          const void **values, size_t *value_lens, int *statuses) {
  if (!s || (n && (!keys || !key_lens || !values || !value_lens || !statuses)))
    return par_error(PAR_EINVAL, "par_multi_get: NULL argument");
  if (!n) return PAR_OK;
  /* One block: the sorted keys, the entries found, and the lookups'
   * scratch (key pointers and lengths, entries or L0 entry pointers,
   * statuses). */
  size_t per = sizeof(mg_key) + 2 * sizeof(tree_entry) + sizeof(void *) + sizeof(size_t) +
               sizeof(const mt_entry *) + sizeof(int);
  mg_call c = {.s = s, .n = n, .keys = keys, .key_lens = key_lens, .values = values,
               .value_lens = value_lens, .statuses = statuses, .mem = malloc(n * per)};
  if (!c.mem) return par_error(PAR_ENOMEM, "par_multi_get: %zu keys", n);
  int rc = mapguard_run(multi_lookup, &c);
  if (rc) /* a faulted read: no key's result is known */
    for (size_t i = 0; i < n; i++) {
      values[i] = NULL;
      value_lens[i] = 0;
      statuses[i] = rc;
    }
  atomic_fetch_add(&s->region->stats.gets, n);
  free(c.mem);
  return rc;
}
