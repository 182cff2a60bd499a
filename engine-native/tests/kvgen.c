#include "kvgen.h"

#include <stdio.h>
#include <string.h>

#include "testutil.h"

#define KV_HDR 12u

size_t kv_key(uint64_t i, char *out) { return (size_t)snprintf(out, 32, "kv%08llu", (unsigned long long)i); }

static size_t size_of(uint64_t i) {
  static const size_t sizes[3] = {24, 400, KV_MAX_VALUE};
  return sizes[i % 3];
}

size_t kv_value(uint64_t i, uint32_t ver, uint8_t *out) {
  size_t n = size_of(i);
  memcpy(out, &i, 8);
  memcpy(out + 8, &ver, 4);
  tu_fill_pattern(out + KV_HDR, n - KV_HDR, i << 20 ^ ver);
  return n;
}

int kv_put(par_region *r, uint64_t i, uint32_t ver, unsigned flags) {
  char k[32];
  uint8_t v[KV_MAX_VALUE];
  size_t kl = kv_key(i, k), vl = kv_value(i, ver, v);
  return par_put(r, k, kl, v, vl, flags);
}

int kv_parse(uint64_t i, const void *v, size_t len, uint32_t *ver) {
  uint64_t got_i;
  if (len != size_of(i)) return KV_WRONG;
  memcpy(&got_i, v, 8);
  memcpy(ver, (const uint8_t *)v + 8, 4);
  if (got_i != i || *ver == 0 || !tu_check_pattern((const uint8_t *)v + KV_HDR, len - KV_HDR, i << 20 ^ *ver))
    return KV_WRONG;
  return PAR_OK;
}

int kv_read(par_region *r, uint64_t i, uint32_t *ver) {
  char k[32];
  uint8_t v[KV_MAX_VALUE];
  size_t kl = kv_key(i, k), len = 0;
  *ver = 0;
  int rc = par_get(r, NULL, k, kl, v, sizeof v, &len);
  if (rc) return rc;
  return len > sizeof v ? KV_WRONG : kv_parse(i, v, len, ver);
}
