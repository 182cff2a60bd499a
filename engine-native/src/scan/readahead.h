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

/* A step asks for at most the current record, a window of records and a leaf. */
#define SCAN_RA_PENDING (SCAN_RA_ENTRIES + 2)

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
  range pending[SCAN_RA_PENDING]; /* this step's requests, gathered */
  uint32_t npending;
} scan_readahead;

/* Asks through posix_fadvise on f. */
void scan_readahead_init(scan_readahead *ra, const par_file *f);
/* After cursor c moved (it is valid): asks for what its next steps read. */
void scan_readahead_step(scan_readahead *ra, const tree_cursor *c, int reverse);

#endif
