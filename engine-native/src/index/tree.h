/* Reading a device level's B+-tree.
 *
 * Point reads and scans walk the tree through the volume's memory map (no
 * user-space cache: the page cache holds hot nodes), checking each node's
 * checksum the first time any reader reaches it. Compaction instead
 * streams a tree's segments in write order with 2 MiB reads through the
 * page cache (where a recent merge often left the tree) — leaves were
 * written in key order, so this yields the pairs sorted — and checks every
 * node's checksum on the way. */
#ifndef PAR_INDEX_TREE_H
#define PAR_INDEX_TREE_H

#include <stdatomic.h>
#include <stdint.h>

#include "alloc/segalloc.h"
#include "index/node.h"
#include "io/file.h"
#include "meta/catalog.h"

/* Transient medium-log segments written by one flush. Trees that keep
 * pointers into them share the set: a merge above the merge level passes
 * the pointers (and the set) down, a merge at the merge level copies the
 * values into its leaves. The segments are freed when the last tree
 * referring to them is dropped, if every tree that referred to them was
 * retired (none is left in the catalog). */
typedef struct mseg_set {
  atomic_int refs;
  atomic_int unretired; /* referring trees not retired yet */
  seg_list segs;
  segalloc *alloc;
  /* A number no other set of this process takes (the sequence of
   * dtree.uid). The segments are written before the set is made and freed
   * only with it, so a segment and its set's uid name the same bytes for
   * as long as the set lives: a send-index backup keeps one copy per
   * (segment, uid) across installs (repl/install.c). */
  uint64_t uid;
} mseg_set;

mseg_set *mseg_set_create(segalloc *a, seg_list *segs); /* takes segs' memory */
void mseg_set_ref(mseg_set *s);
void mseg_set_unref(mseg_set *s);

/* Which nodes of a tree passed their checksum: one bit per 4 KiB page of
 * its segments (a node starts on a page), found through the segments in
 * sorted order. Nodes never change once written, so a bit once set stays
 * true; readers set bits concurrently with an atomic OR. */
typedef struct node_checks {
  uint32_t nsegs;
  uint32_t *segs; /* sorted */
  _Atomic uint64_t *bits;
} node_checks;

int node_checks_init(node_checks *c, const seg_list *segs);
void node_checks_free(node_checks *c);

/* A tree shared by the region's views. Once a compaction has durably
 * replaced it, it is retired, and the last reference frees its segments
 * (so a scanner keeps the segments it reads alive). A tree that is merely
 * dropped from memory (region close) keeps them: the catalog owns them. */
typedef struct dtree {
  atomic_int refs;
  atomic_int retired;
  tree_desc d;      /* d.msegs lists every segment of its sets */
  segalloc *alloc;
  mseg_set **sets;  /* the medium-log segments its pointers refer to */
  uint32_t nsets;
  node_checks checks;
  /* Tells this tree apart from every other one this process built or
   * loaded, even of the same shape in the same segments (repl/layout.h's
   * tree ids): a process-wide sequence from a random start. */
  uint64_t uid;
} dtree;

/* Takes d's memory; the tree owns one set made of d->msegs (recovery). */
dtree *dtree_create(segalloc *a, tree_desc *d);
/* Takes d's memory and one reference to each of the n sets, whose
 * segments d->msegs must list. */
dtree *dtree_create_shared(segalloc *a, tree_desc *d, mseg_set **sets, uint32_t n);
void dtree_ref(dtree *t);
void dtree_unref(dtree *t);
void dtree_retire(dtree *t);
/* For a tree that never reached the catalog and is being dropped (an
 * install that failed): its sets stop counting it, as at a retirement, but
 * its own segments stay its maker's to free. */
void dtree_forget(dtree *t);

/* PAR_OK with *e set (its key whole), PAR_NOT_FOUND, or PAR_ECORRUPT.
 * checks, if not NULL, records the nodes whose checksum was verified.
 * With leaf_buf (LEAF_SIZE bytes), the leaf is read into it with pread
 * rather than through the map, and *e points into it (docs/architecture.md,
 * Read path: why a get under memory pressure does that). */
int tree_get(const key_source *ks, const tree_desc *t, node_checks *checks, const void *key,
             size_t key_len, uint8_t *leaf_buf, tree_entry *e);

/* tree_get of n keys, sorted, with rc[i] the status of keys[i]: their
 * lookups are interleaved, a group at a time, so that the cache misses of
 * different keys' leaves overlap (each leaf's header, slots and first
 * binary-search probes are prefetched before any key of the group searches
 * its leaf). */
void tree_get_batch(const key_source *ks, const tree_desc *t, node_checks *checks, size_t n,
                    const void *const *keys, const size_t *lens, tree_entry *e, int *rc);

/* The offset of the leaf that holds key if t has it (index nodes read, the
 * leaf not): PAR_OK, PAR_NOT_FOUND for an empty tree, or a node's error. */
int tree_find_leaf(const key_source *ks, const tree_desc *t, node_checks *checks, const void *key,
                   size_t key_len, uint64_t *leaf);

/* The share of t's entries in [begin, end) (NULL: the first key / past the
 * last), estimated from where each bound's leaf lies among the tree's
 * bytes in write order and where the bound falls in that leaf
 * (docs/architecture.md gives the accuracy). O(height) nodes read; 0 for
 * an empty range, 1 for one covering the tree. */
int tree_range_share(const key_source *ks, const tree_desc *t, node_checks *checks, const void *begin,
                     size_t begin_len, const void *end, size_t end_len, double *share);

/* Cursor and stream entries may hold a key prefix (index/entry.h). */
typedef struct tree_cursor {
  const key_source *ks;
  const tree_desc *tree;
  node_checks *checks;
  int depth; /* entries in path; 0 = not positioned */
  struct {
    const uint8_t *node;
    node_hdr h;
    uint32_t idx;
  } path[NODE_MAX_HEIGHT];
  tree_entry cur;
} tree_cursor;

void tree_cursor_init(tree_cursor *c, const key_source *ks, const tree_desc *t, node_checks *checks);
/* Positions at the first key >= key (> key when exclusive; the first key
 * when key is NULL). Sets c->depth = 0 when there is none. */
int tree_cursor_seek(tree_cursor *c, const void *key, size_t key_len, int exclusive);
int tree_cursor_next(tree_cursor *c);
/* Positions at the last key <= key (< key when exclusive; the last key
 * when key is NULL). Sets c->depth = 0 when there is none. */
int tree_cursor_seek_rev(tree_cursor *c, const void *key, size_t key_len, int exclusive);
/* Moves to the previous key; past the first one the cursor is invalid.
 * next and prev may alternate: the path holds the position either way. */
int tree_cursor_prev(tree_cursor *c);
static inline int tree_cursor_valid(const tree_cursor *c) { return c->depth > 0; }

typedef struct tree_stream {
  par_file *file;
  const key_source *ks;
  const tree_desc *tree;
  uint8_t *buf;     /* one segment */
  uint32_t seg_idx; /* next segment of tree->segs to read */
  uint32_t off;     /* node being read, inside buf */
  node_hdr h;
  uint32_t slot;
  int valid;
  tree_entry cur;
  uint64_t bytes_read;
} tree_stream;

int tree_stream_open(tree_stream *s, par_file *f, const key_source *ks, const tree_desc *t);
int tree_stream_next(tree_stream *s);
void tree_stream_close(tree_stream *s);

#endif
