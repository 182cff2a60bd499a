/* Bottom-up B+-tree construction (Parallax §3, "compaction ... builds the
 * new level bottom-up"): pairs arrive in key order, fill leaves to the
 * brim, and every finished node hands its first key to a parent being
 * filled the same way. Nodes are packed into a 2 MiB segment buffer that is
 * written with one write when full, through the page cache (see direct).
 * No node is ever read back or descended into while building. */
#ifndef PAR_INDEX_BUILDER_H
#define PAR_INDEX_BUILDER_H

#include "alloc/segalloc.h"
#include "index/node.h"
#include "io/file.h"
#include "meta/catalog.h"

typedef struct build_level {
  uint8_t *buf;
  uint32_t size;      /* bytes of the node being filled     */
  uint32_t nslots;
  uint32_t data_start;
} build_level;

typedef struct tree_builder {
  par_file *file;
  segalloc *alloc;
  uint8_t *seg_buf;
  uint32_t seg, fill; /* seg == 0: no segment yet */
  /* medium values written to the transient log, in key order */
  uint8_t *mbuf;
  uint32_t mseg, mfill, mseed;
  tree_desc out;
  build_level lvl[NODE_MAX_HEIGHT];
  int levels;         /* index levels with a node open, plus the leaf level */
  uint8_t *jumbo;     /* a leaf for a single pair larger than LEAF_SIZE */
  uint8_t first_key[PAR_MAX_KEY_SIZE]; /* whole first key of the open leaf */
  uint16_t first_len;
  /* Nodes written with direct I/O, not through the page cache: for a region
   * whose logs a cursor ships (their writes then go through the page cache,
   * repl/log.c). Trees through the page cache as well cost such a primary
   * more than they saved (docs/replication.md, "Merges and the page
   * cache"). */
  int direct;
} tree_builder;

int builder_init(tree_builder *b, par_file *f, segalloc *a);
/* Adds a pair; keys must strictly increase. A leaf keeps only a prefix of
 * the key of a medium or large pair (index/entry.h). */
int builder_add(tree_builder *b, int cat, const void *key, uint16_t key_len, const void *value,
                uint32_t value_len);
/* Adds an entry read from another tree, whose key may be a prefix; it is
 * resolved only if it starts a leaf. */
int builder_add_entry(tree_builder *b, tree_entry *e);
/* Writes a medium value to the tree's transient medium-log segments (they
 * end up in out->msegs) and adds a CAT_MEDIUM pointer to it. */
int builder_add_medium(tree_builder *b, uint32_t region_id, const void *key, uint16_t key_len,
                       const void *value, uint32_t value_len);
/* Writes the remaining nodes, syncs, and moves the tree into *out (root 0
 * when no pair was added). */
int builder_finish(tree_builder *b, tree_desc *out);
/* Frees the builder and the segments it allocated (after an error). */
void builder_abort(tree_builder *b);

#endif
