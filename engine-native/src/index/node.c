#include "index/node.h"

#include <string.h>

#include "alloc/segalloc.h"
#include "io/file.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/status.h"

int node_header(const uint8_t *node, uint64_t off, node_hdr *h) {
  h->type = dec16(node + 4);
  h->height = dec16(node + 6);
  h->pages = dec32(node + 8);
  h->nslots = dec32(node + 12);
  h->data_start = dec32(node + 16);
  uint64_t size = (uint64_t)h->pages * PAR_BLOCK;
  uint64_t in_seg = off % PAR_SEGMENT_SIZE;
  if ((h->type != NODE_LEAF && h->type != NODE_INDEX) || !h->pages || off % PAR_BLOCK ||
      in_seg + size > PAR_SEGMENT_SIZE || h->data_start > size ||
      NODE_HDR + 4ull * h->nslots > h->data_start || (h->type == NODE_LEAF) != (h->height == 0) ||
      h->height >= NODE_MAX_HEIGHT)
    return par_error(PAR_ECORRUPT, "B+-tree node at offset %llu is damaged", (unsigned long long)off);
  return PAR_OK;
}

uint32_t node_crc(const uint8_t *node, uint32_t size) { return crc32c(0, node + 4, size - 4); }

static int bad_entry(const uint8_t *node, uint32_t i) {
  (void)node;
  return par_error(PAR_ECORRUPT, "B+-tree node entry %u lies outside its node", i);
}

int leaf_entry(const uint8_t *node, const node_hdr *h, uint32_t i, tree_entry *e) {
  uint32_t slot = dec32(node + NODE_HDR + 4 * i);
  uint32_t off = SLOT_OFF(slot), size = h->pages * PAR_BLOCK;
  if (off < h->data_start || off >= size) return bad_entry(node, i);
  const uint8_t *end = node + size, *p = node + off;
  uint32_t kl = 0, vl = 0;
  p = get_varint32(p, end, &kl);
  if (p) p = get_varint32(p, end, &vl);
  if (!p || kl > PAR_MAX_KEY_SIZE) return bad_entry(node, i);
  int cat = (int)SLOT_CAT(slot);
  uint16_t stored = entry_stored_len(cat, (uint16_t)kl);
  if ((size_t)(end - p) < (size_t)stored + vl) return bad_entry(node, i);
  e->cat = cat;
  e->key = p;
  e->key_len = stored;
  e->full_len = stored < kl ? (uint16_t)kl : 0;
  e->value = p + stored;
  e->value_len = vl;
  e->ks = NULL;
  return PAR_OK;
}

int leaf_lower_bound(const uint8_t *node, const node_hdr *h, const key_source *ks, const void *key,
                     size_t key_len, int exclusive, uint32_t *idx) {
  uint32_t lo = 0, hi = h->nslots;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    tree_entry e;
    int c, rc = leaf_entry(node, h, mid, &e);
    e.ks = ks;
    if (!rc) rc = entry_cmp_key(&e, key, key_len, &c);
    if (rc) return rc;
    if (c < 0 || (exclusive && c == 0)) lo = mid + 1;
    else hi = mid;
  }
  *idx = lo;
  return PAR_OK;
}

size_t leaf_entry_encode(uint8_t *dst, const void *key, uint16_t stored_len, uint16_t key_len,
                         const void *value, uint32_t value_len) {
  uint8_t *p = put_varint(dst, key_len);
  p = put_varint(p, value_len);
  memcpy(p, key, stored_len);
  if (value_len) memcpy(p + stored_len, value, value_len);
  return (size_t)(p - dst) + stored_len + value_len;
}

int index_entry(const uint8_t *node, const node_hdr *h, uint32_t i, uint64_t *child,
                const uint8_t **key, uint16_t *key_len) {
  uint32_t off = dec32(node + NODE_HDR + 4 * i), size = h->pages * PAR_BLOCK;
  if (off < h->data_start || (uint64_t)off + INDEX_ENTRY_HDR > size) return bad_entry(node, i);
  uint16_t kl = dec16(node + off + 8);
  if ((uint64_t)off + INDEX_ENTRY_HDR + kl > size) return bad_entry(node, i);
  *child = dec64(node + off);
  *key = node + off + INDEX_ENTRY_HDR;
  *key_len = kl;
  return PAR_OK;
}

int index_child_for(const uint8_t *node, const node_hdr *h, const void *key, size_t key_len,
                    uint32_t *idx) {
  if (!h->nslots) return par_error(PAR_ECORRUPT, "empty B+-tree index node");
  uint32_t lo = 1, hi = h->nslots; /* find the first pivot > key, in [1, n] */
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    uint64_t child;
    const uint8_t *k = NULL;
    uint16_t kl = 0;
    int rc = index_entry(node, h, mid, &child, &k, &kl);
    if (rc) return rc;
    if (key_cmp(k, kl, key, key_len) <= 0) lo = mid + 1;
    else hi = mid;
  }
  *idx = lo - 1;
  return PAR_OK;
}
