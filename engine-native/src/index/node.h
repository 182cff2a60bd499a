/* On-device B+-tree nodes (Parallax §3, Kreon §3.2).
 *
 * Every node starts block-aligned and never crosses a segment boundary.
 * Layout of a node of `pages` 4 KiB pages:
 *
 *   header (32 B) | slot array (u32 each, grows up) ... free ... data (grows down)
 *
 * header: crc32c u32 (bytes 4..size) | type u16 | height u16 (0 = leaf) |
 *         pages u32 | nslots u32 | data_start u32 | reserved (12 B)
 *
 * Leaf slot:  category (top 3 bits) | offset of the entry (low 29 bits)
 * Leaf entry: key_len varint | value_len varint | key | value
 *   category INLINE: the value itself; TOMBSTONE: no value; MEDIUM and
 *   LARGE: a 16-byte pointer into the medium or large log (segment,
 *   offset, incarnation, size). A MEDIUM entry's key holds only the first
 *   min(key_len, KEY_PREFIX) bytes of the key (index/entry.h).
 * Index slot:  offset of the entry
 * Index entry: child offset u64 | key_len u16 | key  — the first key of the
 *   child's subtree; slot 0's key is a lower bound only.
 *
 * Slots are sorted by key. A leaf holds at least one entry, so a pair larger
 * than LEAF_SIZE gets a leaf of its own (of more pages). A zero header (type
 * 0) marks the unused tail of a segment. */
#ifndef PAR_INDEX_NODE_H
#define PAR_INDEX_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "index/entry.h"
#include "util/coding.h"

#define NODE_HDR 32u
#define LEAF_SIZE 8192u
#define INDEX_SIZE 12288u
#define INDEX_ENTRY_HDR 10u
#define NODE_MAX_HEIGHT 16

enum { NODE_LEAF = 1, NODE_INDEX = 2 };
/* Leaf categories. CAT_LARGE's value is the vptr (16 bytes) of a value in
 * the region's large log. */
enum { CAT_INLINE = 0, CAT_TOMBSTONE = 1, CAT_MEDIUM = 2, CAT_LARGE = 3 };

#define SLOT_CAT(s) ((s) >> 29)
#define SLOT_OFF(s) ((s) & 0x1fffffffu)

typedef struct node_hdr {
  uint16_t type, height;
  uint32_t pages, nslots, data_start;
} node_hdr;

/* Decodes and checks a header found at off (its own bounds, not the crc). */
int node_header(const uint8_t *node, uint64_t off, node_hdr *h);
uint32_t node_crc(const uint8_t *node, uint32_t size);

/* Leaf access; return PAR_ECORRUPT for an entry outside its node. The
 * entry's ks is left NULL for the caller to set. */
int leaf_entry(const uint8_t *node, const node_hdr *h, uint32_t i, tree_entry *e);
/* First slot whose key is >= key (> key when exclusive); h->nslots if none.
 * ks resolves the keys of prefix entries whose prefix ties with key. */
int leaf_lower_bound(const uint8_t *node, const node_hdr *h, const key_source *ks, const void *key,
                     size_t key_len, int exclusive, uint32_t *idx);

int index_entry(const uint8_t *node, const node_hdr *h, uint32_t i, uint64_t *child,
                const uint8_t **key, uint16_t *key_len);
/* Slot of the child that can hold key: the last whose pivot is <= key (0 if none). */
int index_child_for(const uint8_t *node, const node_hdr *h, const void *key, size_t key_len,
                    uint32_t *idx);

/* Bytes a pair takes in a leaf, slot included: stored_len bytes of a key
 * of key_len bytes. */
static inline size_t leaf_entry_size(size_t stored_len, size_t key_len, size_t vlen) {
  return varint_size(key_len) + varint_size(vlen) + stored_len + vlen + 4;
}
/* Writes a leaf entry at dst (stored_len bytes of the key at key); returns
 * its size (without the slot). */
size_t leaf_entry_encode(uint8_t *dst, const void *key, uint16_t stored_len, uint16_t key_len,
                         const void *value, uint32_t value_len);
static inline size_t index_entry_size(size_t klen) { return INDEX_ENTRY_HDR + klen + 4; }

#endif
