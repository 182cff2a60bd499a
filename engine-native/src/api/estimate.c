/* Range estimates: the entries and bytes of a key range, from a descent of
 * each tree to the range's bounds instead of a scan (docs/architecture.md,
 * "Estimates"). */
#include <string.h>

#include "api/internal.h"
#include "io/mapguard.h"
#include "util/coding.h"
#include "util/status.h"

/* A bound is a key, or NULL with length 0 for "unbounded". */
static int check_bound(const void *key, size_t key_len, const char *name) {
  if (!key) return key_len ? par_error(PAR_EINVAL, "par_estimate_range: %s is NULL with a length", name) : PAR_OK;
  if (!key_len) return par_error(PAR_EINVAL, "par_estimate_range: %s is empty (keys are 1 byte or more)", name);
  if (key_len > PAR_MAX_KEY_SIZE)
    return par_error(PAR_ETOOBIG, "par_estimate_range: %s of %zu bytes exceeds the key limit of %u", name,
                     key_len, PAR_MAX_KEY_SIZE);
  return PAR_OK;
}

typedef struct share_call {
  par_region *r;
  dtree *t;
  const void *begin;
  size_t begin_len;
  const void *end;
  size_t end_len;
  double share;
} share_call;

/* tree_range_share reads nodes through the map: guarded (io/mapguard.h). */
static int share_guarded(void *arg) {
  share_call *c = arg;
  return tree_range_share(&c->r->keys, &c->t->d, &c->t->checks, c->begin, c->begin_len, c->end, c->end_len,
                          &c->share);
}

PAR_API int par_estimate_range(par_region *r, const void *begin, size_t begin_len, const void *end,
                               size_t end_len, par_range_estimate *out) {
  if (!r || !out) return par_error(PAR_EINVAL, "par_estimate_range: NULL argument");
  memset(out, 0, sizeof *out);
  int rc = check_bound(begin, begin_len, "begin");
  if (!rc) rc = check_bound(end, end_len, "end");
  if (rc) return rc;
  if (begin && end && key_cmp(begin, begin_len, end, end_len) > 0)
    return par_error(PAR_EINVAL, "par_estimate_range: begin is after end");
  uint64_t lsn;
  view *w = region_acquire_view(r, &lsn);
  /* Sum the shares as reals and round once: a range covering everything
   * then adds up to each tree's exact count. */
  double entries = 0, bytes = 0;
  memtable *l0[2] = {w->active, w->frozen};
  for (int i = 0; i < 2; i++) {
    if (!l0[i]) continue;
    uint64_t n;
    double share = memtable_range_share(l0[i], begin, begin_len, end, end_len, &n);
    entries += share * (double)n;
    bytes += share * (double)atomic_load(&l0[i]->bytes);
  }
  for (int i = 1; i <= PAR_MAX_LEVELS && !rc; i++)
    for (int j = 0; j < LEVEL_TREES && !rc; j++) {
      dtree *t = w->tree[i][j];
      share_call c = {r, t, begin, begin_len, end, end_len, 0};
      if (!t || (rc = mapguard_run(share_guarded, &c))) continue;
      entries += c.share * (double)t->d.entries;
      bytes += c.share * (double)t->d.bytes;
    }
  view_unref(w);
  if (rc) return rc;
  out->entries = (uint64_t)(entries + 0.5);
  out->bytes = (uint64_t)(bytes + 0.5);
  return PAR_OK;
}
