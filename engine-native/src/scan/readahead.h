/* Readahead for scans of data larger than memory.
 *
 * The volume's map is advised MADV_RANDOM (docs/architecture.md, Read
 * path), so a scan that walks cold data waits for one device read per page
 * it touches, one after the other: a large value (or a medium record, whose
 * key the scan needs) every few entries, and the next leaf. These reads are
 * independent, and the device serves many at once. A tree cursor therefore
 * asks (posix_fadvise WILLNEED, which returns before the reads complete)
 * for the log records of the next entries of its leaf (a window growing from
 * SCAN_RA_FIRST to SCAN_RA_ENTRIES as the cursor keeps moving), and for the
 * next leaf once it comes within that distance of the leaf's end,
 * in the scan's direction: when the scan reaches them they are in memory.
 *
 * When the caller said how many entries it reads after a seek
 * (par_scanner_set_readahead), the seek asks for all of them at once
 * instead (scan_readahead_span): every level's records of those entries and,
 * where they run past the leaf, the next leaf. The small growing windows
 * exist because a scan's length is unknown; with it known, the scan waits
 * for the device about twice (the leaves, then the records) instead of once
 * per window.
 *
 * Asking costs a system call per record (adjacent records share one), which
 * a scan of cached data does not need. A scanner asks only once one of its
 * steps had to wait, or one of its region's reads did within the last few
 * seconds (region_reads_wait). The bytes
 * asked for are those the scan is about to read, so in memory-limited runs
 * the device bytes per scanned entry do not grow (test_readpath checks). */
#ifndef PAR_SCAN_READAHEAD_H
#define PAR_SCAN_READAHEAD_H

#include <stdint.h>

#include "index/tree.h"
#include "io/file.h"

#define SCAN_RA_FIRST 2u    /* entries asked for ahead at first */
#define SCAN_RA_ENTRIES 8u /* and at most */
/* A record larger than this is asked for up to this much: its read streams. */
#define SCAN_RA_MAX_RECORD (256u << 10)

typedef void (*scan_ra_ask_fn)(void *ctx, uint64_t off, uint64_t len);

/* Requests gathered before they are sorted, merged and asked for: a step
 * asks for at most the current record, a window of records and a leaf; a
 * span asks in batches of this many. */
#define SCAN_RA_PENDING (4 * SCAN_RA_ENTRIES)
/* The most entries a span asks for (par_scanner_set_readahead caps to it). */
#define SCAN_RA_SPAN_MAX 1024u
/* A span's hidden entries (scan_readahead_span): positions 0..SCAN_RA_HIDDEN_MAX - 1
 * from the cursor's entry, a bit each. */
#define SCAN_RA_HIDDEN_MAX 256u
typedef uint64_t scan_hidden[SCAN_RA_HIDDEN_MAX / 64];

typedef struct range {
  uint64_t off, len;
} range;

typedef struct scan_readahead {
  scan_ra_ask_fn ask; /* file_prefetch, or a test's recorder */
  void *ctx;
  const uint8_t *leaf; /* the leaf of the last step (NULL: none yet) */
  int reverse;         /* the direction asked in */
  /* Slots of leaf already asked for: forward [.., asked), reverse [asked, ..). */
  uint32_t asked;
  uint32_t window;   /* entries ahead of the cursor to ask for */
  int sibling_asked; /* the next leaf in the scan's direction was asked for */
  /* A span (scan_readahead_span): entries still to ask for in the leaves
   * the cursor enters next, and the key past which (before which, in
   * reverse) this level's entries are not asked for (NULL: none). While a
   * span covers the leaf, steps ask for nothing past it: the caller reads
   * no further unless the cursor gets there. */
  uint32_t span_left;
  int spanning;
  const uint8_t *bound;
  uint16_t bound_len;
  /* While the span's first leaf is asked for: the entries a newer level
   * hides, by position from the cursor's (NULL: none), and the slot of
   * position 0. */
  const uint64_t *hidden;
  uint32_t hidden_from;
  range pending[SCAN_RA_PENDING]; /* this step's requests, gathered */
  uint32_t npending;
} scan_readahead;

/* Asks through posix_fadvise on f. */
void scan_readahead_init(scan_readahead *ra, const par_file *f);
/* After cursor c moved (it is valid): asks for what its next steps read. */
void scan_readahead_step(scan_readahead *ra, const tree_cursor *c, int reverse);
/* After a seek left c valid: asks for the records of its next n entries
 * (at most SCAN_RA_SPAN_MAX) in the scan's direction, keys within bound
 * (bound_len bytes; NULL: unbounded), and for the next leaf where they run
 * past this one; the rest of the span when the cursor enters it. The
 * entries of c's leaf set in hidden (by position from c's entry, which is
 * 0; NULL: none) are not asked for: a newer level holds their keys, so the
 * scan never reads their records. */
void scan_readahead_span(scan_readahead *ra, const tree_cursor *c, int reverse, uint32_t n,
                         const uint8_t *bound, uint16_t bound_len, const scan_hidden *hidden);
/* The key of c's entry j steps ahead in the scan's direction (j = 0: the
 * current one): 1 with it, or 0 if c's leaf ends first, with the key of the
 * leaf's last (first, in reverse) entry. With j = n - 1, where a span of n
 * entries of this level ends, as far as its leaf tells. The key may be a
 * prefix (index/entry.h). */
int scan_key_ahead(const tree_cursor *c, int reverse, uint32_t j, const uint8_t **key, uint16_t *key_len);

#endif
