/* K-way merge of sorted sources, newest first. For each key the newest
 * source's entry wins and older entries of that key are skipped. Scans skip
 * tombstones; compactions keep them unless they build the last level.
 * Entries hidden by a newer range tombstone (scan/rangedel.h) are skipped
 * by both.
 *
 * Scans also go backwards: every source of a scanner can seek to the last
 * key <= (or <) a key and step back; a merge that changes direction seeks
 * every source just past the current key the other way. */
#ifndef PAR_SCAN_MERGE_H
#define PAR_SCAN_MERGE_H

#include <stdint.h>

#include "index/memtable.h"
#include "index/tree.h"
#include "parallax/parallax.h"
#include "scan/readahead.h"

typedef struct kv_source kv_source;
struct kv_source {
  int (*next)(kv_source *s);
  int (*seek)(kv_source *s, const void *key, size_t key_len, int exclusive);
  /* Reverse: the last key <= key (< key when exclusive; the last key when
   * key is NULL), then descending keys. NULL for compaction streams. A
   * source steps only in the direction of its last seek. */
  int (*prev)(kv_source *s);
  int (*seek_rev)(kv_source *s, const void *key, size_t key_len, int exclusive);
  void (*close)(kv_source *s);
  /* Asks for what the next steps in this direction read (scan/readahead.h);
   * NULL where there is nothing to ask for. Call only while valid. */
  void (*readahead)(kv_source *s, int reverse);
  /* After a seek, the caller reading about n entries: asks for their reads
   * at once but those of the entries hidden marks (scan_readahead_span).
   * NULL where readahead is. Call only while valid. */
  void (*readahead_span)(kv_source *s, int reverse, uint32_t n, const uint8_t *bound, uint16_t bound_len,
                         const scan_hidden *hidden);
  /* The key j entries ahead, in the scan's direction, as far as the source
   * has them at hand (a tree: its current leaf, scan_key_ahead; an L0: its
   * batch): 1 with it, or 0 with the last key it has. The caller sets from
   * these where a span ends and which entries newer sources hide. NULL for
   * compaction streams. Call only while valid, in the last seek's
   * direction. */
  int (*key_ahead)(kv_source *s, int reverse, uint32_t j, const uint8_t **key, uint16_t *key_len);
  /* An L0's part of a span: asks (on f) for the large-log records of its
   * next n entries at hand, the current one first, but those hidden marks
   * (NULL: none). NULL for trees, which ask through readahead_span. */
  void (*ask_records)(kv_source *s, const par_file *f, uint32_t n, const scan_hidden *hidden);
  uint64_t entries; /* a device tree's entries, else 0: the largest tree bounds a span */
  int valid;
  tree_entry e; /* its key may be a prefix (index/entry.h) */
  uint64_t lsn; /* an L0 source's: the LSN of e (range tombstones compare it) */
  uint64_t bytes_read; /* device bytes read so far */
};

/* Receives every entry a merge skips because a newer source has its key. */
typedef void (*shadowed_fn)(void *arg, const tree_entry *e);

/* An L0 memtable at snapshot snap, refilled in small batches under its
 * read lock so writers are never blocked for long. Holds a reference.
 * Older versions inside the memtable go to shadowed, if not NULL. */
kv_source *memtable_source(memtable *m, uint64_t snap, shadowed_fn shadowed, void *arg);
/* A device tree walked through the memory map (scans). */
kv_source *tree_cursor_source(const key_source *ks, dtree *t);
/* A device tree streamed with direct reads (compaction): PAR_OK and *out,
 * or the status of the first read. */
int tree_stream_source(par_file *f, const key_source *ks, const tree_desc *t, kv_source **out);

typedef struct merge_iter {
  kv_source **src;
  int n;
  int cur; /* source holding the current entry, -1 at the end */
  int skip_tombstones;
  shadowed_fn shadowed; /* may be NULL */
  void *shadowed_arg;
  /* Range tombstones of the sources, in the same order, or NULL. An entry
   * they hide is skipped (and given to shadowed, being dead). */
  const struct rdel *rd;
  int reverse; /* the direction of the last seek or turn (sources follow it) */
  uint8_t turn_key[PAR_MAX_KEY_SIZE]; /* the key a change of direction seeks from */
} merge_iter;

/* After the sources are positioned: finds the first entry. */
int merge_settle(merge_iter *m);
int merge_next(merge_iter *m);
int merge_seek(merge_iter *m, const void *key, size_t key_len, int exclusive);
/* Scans only: the last entry <= key (< key when exclusive; the last entry
 * when key is NULL), and the one before the current entry. */
int merge_seek_rev(merge_iter *m, const void *key, size_t key_len, int exclusive);
int merge_prev(merge_iter *m);
/* The current entry; its key may be a prefix until entry_resolve_key. */
static inline tree_entry *merge_entry(const merge_iter *m) { return &m->src[m->cur]->e; }

#endif
