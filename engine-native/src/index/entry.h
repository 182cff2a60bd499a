/* An entry of a level as readers see it (Parallax §3.1, Kreon §3.2).
 *
 * Leaves keep only the first KEY_PREFIX bytes of the key of a medium pair:
 * its transient-log record holds the whole key next to the value. Most
 * comparisons are decided by the prefix; the rest read the key from the
 * record through the memory map. That is safe because a medium-log segment
 * lives as long as any tree that points into it, shadowed entries included.
 *
 * Large pairs keep their whole key. GC frees a large-log segment once its
 * live records moved, while older, shadowed pointers into it may still sit
 * in deeper levels until a merge drops them: such an entry must compare
 * without reading its record. Next to a value of 1 KiB or more the key is
 * a small part of the pair anyway. */
#ifndef PAR_INDEX_ENTRY_H
#define PAR_INDEX_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "io/file.h"

#define KEY_PREFIX 12u

/* Where the records of one region's logs are. */
typedef struct key_source {
  const par_file *file;
  uint32_t region_id;
} key_source;

typedef struct tree_entry {
  int cat;
  const uint8_t *key, *value;
  uint16_t key_len;  /* bytes at key */
  uint32_t value_len;
  uint16_t full_len; /* the key's length when key holds only a prefix of it (> key_len); else 0 */
  const key_source *ks; /* reads the whole key of a prefix entry */
} tree_entry;

static inline int entry_is_prefix(const tree_entry *e) { return e->full_len > e->key_len; }
static inline uint16_t entry_key_len(const tree_entry *e) {
  return entry_is_prefix(e) ? e->full_len : e->key_len;
}
/* Bytes of the key a leaf stores for a pair of this category and key length. */
uint16_t entry_stored_len(int cat, uint16_t key_len);

/* Points e->key at the whole key (in its log record); no-op for a whole key. */
int entry_resolve_key(tree_entry *e);
/* *c = sign of a - b, resolving keys only when their prefixes tie. */
int entry_cmp(tree_entry *a, tree_entry *b, int *c);
/* *c = sign of e's key - key. */
int entry_cmp_key(tree_entry *e, const void *key, size_t key_len, int *c);

#endif
