#include "index/entry.h"

#include <string.h>

#include "index/node.h"
#include "log/vlog.h"
#include "util/coding.h"
#include "util/status.h"

uint16_t entry_stored_len(int cat, uint16_t key_len) {
  return cat == CAT_MEDIUM && key_len > KEY_PREFIX ? (uint16_t)KEY_PREFIX : key_len;
}

int entry_resolve_key(tree_entry *e) {
  if (!entry_is_prefix(e)) return PAR_OK;
  if (!e->ks || e->value_len != VPTR_SIZE)
    return par_error(PAR_ECORRUPT, "a key prefix without a log pointer");
  vptr p = vptr_decode(e->value);
  vlog_record rec;
  int rc = vlog_read_mapped(e->ks->file, e->ks->region_id, p, &rec);
  if (rc) return rc;
  if (rec.key_len != e->full_len || memcmp(rec.key, e->key, e->key_len) != 0)
    return par_error(PAR_ECORRUPT, "log record at %u:%u belongs to another key", p.seg, p.off);
  e->key = rec.key;
  e->key_len = rec.key_len;
  e->full_len = 0;
  return PAR_OK;
}

/* Compares what the stored bytes tell of two keys: a holds la bytes of a
 * key of fa bytes (la < fa: a prefix), b likewise. Returns -1, 0 or 1, or
 * 2 when only the whole keys can decide. */
static int partial_cmp(const uint8_t *a, size_t la, size_t fa, const uint8_t *b, size_t lb, size_t fb) {
  size_t m = la < lb ? la : lb;
  int c = m ? memcmp(a, b, m) : 0;
  if (c) return c < 0 ? -1 : 1;
  int a_whole = la == fa, b_whole = lb == fb;
  if (a_whole && b_whole) return la < lb ? -1 : la > lb;
  /* A whole key that is no longer than the other's stored bytes is a
   * proper prefix of the other key. */
  if (a_whole && la == m) return -1;
  if (b_whole && lb == m) return 1;
  return 2;
}

int entry_cmp(tree_entry *a, tree_entry *b, int *c) {
  *c = partial_cmp(a->key, a->key_len, entry_key_len(a), b->key, b->key_len, entry_key_len(b));
  if (*c != 2) return PAR_OK;
  int rc = entry_resolve_key(a);
  if (!rc) rc = entry_resolve_key(b);
  if (!rc) *c = key_cmp(a->key, a->key_len, b->key, b->key_len);
  return rc;
}

int entry_cmp_key(tree_entry *e, const void *key, size_t key_len, int *c) {
  *c = partial_cmp(e->key, e->key_len, entry_key_len(e), key, key_len, key_len);
  if (*c != 2) return PAR_OK;
  int rc = entry_resolve_key(e);
  if (!rc) *c = key_cmp(e->key, e->key_len, key, key_len);
  return rc;
}
