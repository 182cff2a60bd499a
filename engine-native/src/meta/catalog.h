/* The catalog: the durable description of every region — its device levels
 * (B+-tree roots and the segments each owns), its write-ahead log segments
 * and the log position that the levels already cover.
 *
 * A region_desc is a plain value: the redo log stores it whole, so replaying
 * a record is "overwrite this region's description", which is idempotent. */
#ifndef PAR_META_CATALOG_H
#define PAR_META_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "parallax/parallax.h"
#include "util/range_set.h"

typedef struct seg_list {
  uint32_t *v;
  uint32_t n, cap;
} seg_list;

int seg_list_push(seg_list *l, uint32_t seg);
void seg_list_free(seg_list *l);
int seg_list_copy(seg_list *dst, const seg_list *src);

/* One on-device B+-tree. root == 0 means it holds no entries (it may still
 * hold range tombstones). */
typedef struct tree_desc {
  uint64_t root;    /* byte offset of the root node in the volume */
  uint32_t height;  /* 1 = the root is a leaf                     */
  uint64_t entries; /* pairs, tombstones included                 */
  uint64_t bytes;   /* bytes of all nodes                         */
  seg_list segs;    /* in write order: leaves appear in key order */
  seg_list msegs;   /* transient medium-log segments the tree owns    */
  uint64_t medium_bytes; /* record bytes its medium pointers refer to */
  /* Range tombstones (par_delete_range): they hide every entry of the
   * trees below this one, never its own (a merge drops the entries they
   * cover before it builds the tree). */
  range_set rtombs;
} tree_desc;

/* Whether the description has anything to record: entries or range tombstones. */
static inline int tree_desc_present(const tree_desc *t) { return t->root || t->rtombs.n; }

/* A WAL segment: entries in it carry gen, and the first one has first_lsn. */
typedef struct wal_seg {
  uint32_t seg;
  uint32_t gen;
  uint64_t first_lsn;
} wal_seg;

/* A segment of the large (value) log. inc is unique within the region and
 * is part of every pointer into the segment, so a pointer left behind in
 * an old level never matches a later use of the same segment. */
typedef struct vlog_seg {
  uint32_t seg;
  uint32_t inc;
  uint64_t garbage; /* record bytes known to be dead */
  uint32_t nsegs;   /* 1, or the length of a run holding one huge value */
  uint32_t open;    /* a vlog_head_state: whether the segment is a log's head */
  uint32_t end;     /* a parked head: where its records end */
} vlog_seg;

/* A head's unwritten tail is not counted as garbage while it is a head.
 *  VLOG_OPEN: a log's head when last persisted; the log counts the tail
 *    when it moves on, and after a crash the next open counts it with the
 *    records the crash lost (gc_count_crash_garbage).
 *  VLOG_PARKED_HOT, VLOG_PARKED_COLD (format 6): the hot or cold log's head
 *    at a clean close, whose records [0, end) are all durable and covered;
 *    the next open resumes appending at end (api/large_heads.c), so sessions
 *    do not each leave a tail for GC to collect. */
enum vlog_head_state { VLOG_CLOSED = 0, VLOG_OPEN = 1, VLOG_PARKED_HOT = 2, VLOG_PARKED_COLD = 3 };

/* Trees per level: [0] is the level's active tree, [1] the older tree being
 * spilled into the next level (empty most of the time). */
#define LEVEL_TREES 2

typedef struct region_desc {
  uint32_t id;
  char name[PAR_MAX_REGION_NAME + 1];
  uint64_t covered_lsn; /* WAL entries up to here are in the device levels */
  uint32_t wal_gen;     /* generation of the newest WAL segment            */
  uint32_t nwal, wal_cap;
  wal_seg *wal;
  tree_desc level[PAR_MAX_LEVELS + 1][LEVEL_TREES]; /* [0] unused */
  uint32_t next_inc;    /* the newest large-log incarnation listed */
  /* Incarnations up to here may be taken already, by a session that died
   * before listing them and wrote records into their segments all the same:
   * a session takes only incarnations past both, reserved here first, so
   * that no segment is ever taken again under an incarnation (the seed of
   * its records' checksums) an earlier use had (api/region.c). */
  uint32_t inc_reserved;
  uint32_t nvlog, vlog_cap;
  vlog_seg *vlog;       /* in allocation order */
  /* The LSN ranges of this region's parts of committed cross-region
   * batches that the levels do not cover yet (last > covered_lsn), in LSN
   * order: replay applies a part record only if its range is listed here
   * (api/txn.c). */
  uint32_t nparts, parts_cap;
  struct lsn_range { uint64_t first, last; } *parts;
} region_desc;

void region_desc_free(region_desc *d);
int region_desc_copy(region_desc *dst, const region_desc *src);
int region_desc_add_wal(region_desc *d, wal_seg w);
int region_desc_add_vlog(region_desc *d, vlog_seg v);
int region_desc_add_part(region_desc *d, uint64_t first, uint64_t last);
/* Whether [first, last] is a committed part. */
int region_desc_has_part(const region_desc *d, uint64_t first, uint64_t last);
/* Forgets the parts the levels cover (last <= covered_lsn). */
void region_desc_prune_parts(region_desc *d);
/* The large-log segment with incarnation inc, or NULL. */
vlog_seg *region_desc_find_vlog(region_desc *d, uint32_t inc);
/* Calls fn for every segment the region references. */
int region_desc_for_each_seg(const region_desc *d, int (*fn)(void *arg, uint32_t seg), void *arg);

/* Encoding: returns the encoded size; writes only when out != NULL. */
size_t region_desc_encode(const region_desc *d, uint8_t *out);
/* PAR_ECORRUPT when the bytes do not form a description. */
int region_desc_decode(region_desc *d, const uint8_t *in, size_t len);

void tree_desc_free(tree_desc *t);
int tree_desc_copy(tree_desc *dst, const tree_desc *src);

#endif
