/* The send-index layout (Talos §4): what a primary's export ships
 * (repl/export.c) and a backup's install parses (repl/install.c). The
 * encoding, little-endian, is in the definitions below.
 *
 * Trees are known by an id the primary derives from the tree's description,
 * its root node's checksum and the number its tree object got when built or
 * loaded (dtree.uid): a backup that holds a tree of the layout (an earlier
 * install shipped it) keeps it instead of copying it again. The description
 * and root alone do not tell trees apart: rewriting the same keys with
 * values of the same size builds trees of one shape, and every other one
 * takes the same segment, so a backup kept an older tree for a newer one
 * and lost the writes between (test_rebuilt_tree_not_taken_as_held). The
 * id is 32 bits: two trees share one with odds of 2^-32 per comparison.
 *
 * A tree's range tombstones (format 4: a set of key ranges in its catalog
 * description, not in its nodes) travel in the layout after its segment
 * list; a tree of range tombstones alone has no root and no segments. */
#ifndef PAR_REPL_LAYOUT_H
#define PAR_REPL_LAYOUT_H

#include "repl/repl.h"

#define SEG ((uint32_t)PAR_SEGMENT_SIZE)
#define LAYOUT_MAGIC 0x344c5850u /* "PXL4" */
/* magic u32 | covered u64 | ntrees u32 | region id u32 | next_inc u32 | nvlog u32 |
 * dropped_lsn u64 (GC's dropped LSN, gc/gc.h), then the trees, then nvlog large-log segments. */
#define LAYOUT_HDR 36u
/* level u8 | slot u8 | pad u16 | id u32 | root u64 | height u32 | entries u64 | bytes u64 |
 * nsegs u32 | rtombs_len u32 | nmsegs u32 | medium_bytes u64, then nsegs x segment u32,
 * nmsegs x medium-log segment (segment u32 | its set's uid u64) and rtombs_len bytes of
 * its range tombstones (range_set_encode; 0 bytes: none). */
#define TREE_HDR 56u
#define MSEG_ENTRY 12u
/* segment u32 | incarnation u32 | garbage u64 | open u32 | nsegs u32 (1, or a run's) */
#define VLOG_ENTRY 24u
/* The longest run: a record of the largest key and value. */
#define MAX_RUN ((uint32_t)((VLOG_HDR + 10 + PAR_MAX_KEY_SIZE + (uint64_t)PAR_MAX_VALUE_SIZE + SEG - 1) / SEG))
#define MAX_TREES (PAR_MAX_LEVELS * LEVEL_TREES)

#endif
