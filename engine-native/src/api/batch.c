/* Write batches: puts, deletes and range deletes buffered by the caller and applied as one
 * WAL record (region_apply); ops added with par_batch_put_in/delete_in name
 * their region, for par_write_volume (api/txn.c). */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "util/status.h"

struct par_batch {
  wal_op *ops;
  par_region **regions; /* per op: its region (par_batch_put_in), or NULL */
  uint32_t n, cap;
  uint8_t *data; /* keys and values, copied */
  size_t len, data_cap, encoded;
};

PAR_API int par_batch_create(par_batch **out) {
  if (!out) return par_error(PAR_EINVAL, "par_batch_create: NULL out");
  *out = calloc(1, sizeof **out);
  return *out ? PAR_OK : par_error(PAR_ENOMEM, "batch");
}

static int batch_add(par_batch *b, par_region *r, uint8_t type, const void *key, size_t key_len,
                     const void *value, size_t value_len) {
  /* The WAL record holds a pointer for a value that always goes to the large log. */
  size_t enc = wal_op_size(key_len, value_len > PAR_MAX_INLINE_VALUE ? VPTR_SIZE : value_len);
  if (b->encoded + enc > PAR_MAX_BATCH_SIZE)
    return par_error(PAR_ETOOBIG, "batch would exceed %u encoded bytes", PAR_MAX_BATCH_SIZE);
  if (b->n == b->cap) {
    uint32_t cap = b->cap ? b->cap * 2 : 16;
    wal_op *ops = realloc(b->ops, cap * sizeof *ops);
    if (!ops) return par_error(PAR_ENOMEM, "batch");
    b->ops = ops;
    par_region **regions = realloc(b->regions, cap * sizeof *regions);
    if (!regions) return par_error(PAR_ENOMEM, "batch");
    b->regions = regions;
    b->cap = cap;
  }
  if (b->len + key_len + value_len > b->data_cap) {
    size_t cap = b->data_cap ? b->data_cap : 4096;
    while (cap < b->len + key_len + value_len) cap *= 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d) return par_error(PAR_ENOMEM, "batch");
    b->data = d;
    b->data_cap = cap;
  }
  /* Pointers are stored as offsets until par_write: data may move. */
  b->regions[b->n] = r;
  wal_op *op = &b->ops[b->n++];
  op->type = type;
  op->key_len = (uint16_t)key_len;
  op->value_len = (uint32_t)value_len;
  op->key = (const void *)(uintptr_t)b->len;
  memcpy(b->data + b->len, key, key_len);
  b->len += key_len;
  op->value = (const void *)(uintptr_t)b->len;
  if (value_len) memcpy(b->data + b->len, value, value_len);
  b->len += value_len;
  b->encoded += enc;
  return PAR_OK;
}

PAR_API int par_batch_put(par_batch *b, const void *key, size_t key_len, const void *value, size_t value_len) {
  if (!b) return par_error(PAR_EINVAL, "par_batch_put: NULL batch");
  int rc = region_check_key(key, key_len);
  if (!rc) rc = region_check_value(value, value_len);
  return rc ? rc : batch_add(b, NULL, WAL_PUT, key, key_len, value, value_len);
}

PAR_API int par_batch_delete(par_batch *b, const void *key, size_t key_len) {
  if (!b) return par_error(PAR_EINVAL, "par_batch_delete: NULL batch");
  int rc = region_check_key(key, key_len);
  return rc ? rc : batch_add(b, NULL, WAL_DELETE, key, key_len, NULL, 0);
}

PAR_API int par_batch_put_in(par_batch *b, par_region *r, const void *key, size_t key_len, const void *value,
                             size_t value_len) {
  if (!b || !r) return par_error(PAR_EINVAL, "par_batch_put_in: NULL batch or region");
  int rc = region_check_key(key, key_len);
  if (!rc) rc = region_check_value(value, value_len);
  return rc ? rc : batch_add(b, r, WAL_PUT, key, key_len, value, value_len);
}

PAR_API int par_batch_delete_in(par_batch *b, par_region *r, const void *key, size_t key_len) {
  if (!b || !r) return par_error(PAR_EINVAL, "par_batch_delete_in: NULL batch or region");
  int rc = region_check_key(key, key_len);
  return rc ? rc : batch_add(b, r, WAL_DELETE, key, key_len, NULL, 0);
}

PAR_API int par_batch_delete_range(par_batch *b, const void *begin, size_t begin_len, const void *end,
                                   size_t end_len) {
  if (!b) return par_error(PAR_EINVAL, "par_batch_delete_range: NULL batch");
  int rc = region_check_range(begin, begin_len, end, end_len);
  return rc ? rc : batch_add(b, NULL, WAL_DELETE_RANGE, begin, begin_len, end, end_len);
}

PAR_API int par_batch_delete_range_in(par_batch *b, par_region *r, const void *begin, size_t begin_len,
                                      const void *end, size_t end_len) {
  if (!b || !r) return par_error(PAR_EINVAL, "par_batch_delete_range_in: NULL batch or region");
  int rc = region_check_range(begin, begin_len, end, end_len);
  return rc ? rc : batch_add(b, r, WAL_DELETE_RANGE, begin, begin_len, end, end_len);
}

PAR_API void par_batch_clear(par_batch *b) {
  if (!b) return;
  b->n = 0;
  b->len = 0;
  b->encoded = 0;
}

PAR_API size_t par_batch_count(const par_batch *b) { return b ? b->n : 0; }

PAR_API void par_batch_destroy(par_batch *b) {
  if (!b) return;
  free(b->ops);
  free(b->regions);
  free(b->data);
  free(b);
}

wal_op *batch_resolve(const par_batch *b, par_region *const **regions) {
  wal_op *ops = malloc(b->n * sizeof *ops);
  if (!ops) {
    par_error(PAR_ENOMEM, "batch");
    return NULL;
  }
  for (uint32_t i = 0; i < b->n; i++) {
    ops[i] = b->ops[i];
    ops[i].key = b->data + (uintptr_t)b->ops[i].key;
    ops[i].value = b->data + (uintptr_t)b->ops[i].value;
  }
  *regions = b->regions;
  return ops;
}

PAR_API int par_write(par_region *r, const par_batch *b, unsigned flags) {
  if (!r || !b) return par_error(PAR_EINVAL, "par_write: NULL argument");
  if (!b->n) return PAR_OK;
  for (uint32_t i = 0; i < b->n; i++)
    if (b->regions[i] && b->regions[i] != r)
      return par_error(PAR_EINVAL, "par_write: the batch holds ops for region '%s' (par_write_volume writes "
                       "batches across regions)", b->regions[i]->name);
  par_region *const *regions;
  wal_op *ops = batch_resolve(b, &regions);
  if (!ops) return PAR_ENOMEM;
  int rc = region_apply(r, ops, b->n, flags);
  free(ops);
  return rc;
}
