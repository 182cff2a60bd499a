/* The redo log: a stream of checksummed records in a chain of segments that
 * records every change of the catalog — region created, dropped, or given a
 * new description by a compaction or a new WAL segment. A record is written
 * to fresh, block-aligned space and synced before the change it describes
 * takes effect, so after a crash the log replays to the last durable change.
 *
 * A checkpoint writes the whole catalog as the start of a new stream and
 * then flips the superblock to it; the old stream's segments are freed.
 * Every open checkpoints, so writers never append after a torn tail. */
#ifndef PAR_META_REDOLOG_H
#define PAR_META_REDOLOG_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "alloc/segalloc.h"
#include "io/file.h"
#include "meta/catalog.h"
#include "meta/superblock.h"

/* The largest record payload appended: 2 MiB less two blocks and a header
 * (a record fits one segment), which bounds a region's description to some
 * 100 K large-log segments. Tests lower it to reach the limit; loading
 * accepts any record that fits a segment. */
extern uint32_t redolog_payload_limit;

/* Bytes of redolog_payload_limit that new large-log segments for user
 * writes leave to the changes through which a description shrinks: merges
 * (which find the dead values and drop old trees), GC (a relocation may need
 * a new cold-log segment before it can drop the segment it empties) and the
 * WAL (whose segments go once L0 is flushed). About 200 large-log
 * segments' entries. */
#define REDO_DESC_RESERVE 4096u

/* Payload bytes of a region record for d with nfreed freed segments. */
size_t redolog_region_payload(const region_desc *d, uint32_t nfreed);

/* Commits checkpoint the redo log once it holds this many bytes. */
#define REDO_CHECKPOINT_BYTES (4u * PAR_SEGMENT_SIZE)

typedef struct catalog {
  uint32_t next_region_id;
  uint32_t n, cap;
  region_desc **regions; /* in creation order */
} catalog;

region_desc *catalog_find(const catalog *c, const char *name);
region_desc *catalog_find_id(const catalog *c, uint32_t id);
/* Adds or replaces (by id) a description, taking over its memory. */
int catalog_set(catalog *c, region_desc *d);
void catalog_remove(catalog *c, uint32_t id);
void catalog_free(catalog *c);

typedef struct redolog {
  par_file *file;
  segalloc *alloc;
  superblock sb;
  seg_list segs;  /* segments of the current stream, in order */
  uint32_t off;   /* write position in the last segment        */
  uint64_t seq;   /* sequence number of the next record        */
  uint64_t bytes; /* bytes appended since the checkpoint       */
  uint8_t *buf;   /* block-aligned staging buffer               */
  uint32_t buf_cap;
  /* A write or sync of a record (or of the superblock) failed, so whether
   * it is durable is unknown: nothing more is appended, and the allocator
   * is stopped (segalloc_stop), until the volume is reopened. */
  _Atomic int failed;
  uint64_t writes; /* record writes issued */
  /* Record writes an fdatasync is known to cover: redolog_sync runs
   * without the caller's lock, so that commits share their syncs. */
  _Atomic uint64_t durable_writes;
  /* The stream was recovered and not rewritten yet: its tail may hide a
   * torn record, so the next append first checkpoints cat (the catalog the
   * stream was loaded into). Open checkpoints at once; on a full volume
   * that waits until a change needs it. */
  int stale;
  const catalog *cat;
} redolog;

/* Creates the first stream of a new volume (an empty catalog). */
int redolog_format(redolog *log, par_file *f, segalloc *a);
/* Reads the superblock and replays the stream into c; marks the stream's
 * segments in a. The caller marks the catalog's and then checkpoints. The
 * stream ends at its first invalid record, which only a torn last write
 * can leave: PAR_ECORRUPT when a valid later record of the stream follows
 * it in its segment, or when the stream holds no record at all. */
int redolog_load(redolog *log, par_file *f, segalloc *a, catalog *c);
/* Starts a new stream holding all of c, flips the superblock, frees the old one. */
int redolog_checkpoint(redolog *log, const catalog *c);
void redolog_close(redolog *log);

/* Writes a region's new description; *ticket names the write for
 * redolog_sync, and the record is durable only once that returns: the
 * caller may change the in-memory catalog at once (later records are built
 * from it and land after this one), but must not act on the change outside
 * the catalog (free a segment, publish a view that a crash could take
 * back) before. freed lists segments the new description stops using. */
int redolog_put_region(redolog *log, const region_desc *d, const uint32_t *freed, uint32_t nfreed,
                       uint64_t *ticket);
/* Makes the records up to ticket durable. Called without the lock that
 * serializes appends; a failure fails the log, as a failed append does. */
int redolog_sync(redolog *log, uint64_t ticket);
/* Each returns once the record is durable; only then may the in-memory
 * catalog change. */
int redolog_drop_region(redolog *log, uint32_t id);
int redolog_next_id(redolog *log, uint32_t next_id);
/* Commits a cross-region batch: one record naming each region's part (the
 * LSN range of its WAL record); the caller adds them to the catalog once it
 * is durable. */
typedef struct txn_part {
  uint32_t region_id;
  uint64_t first, last;
} txn_part;
int redolog_commit_parts(redolog *log, const txn_part *parts, uint32_t n);

#endif
