/* The region as the large log's GC (gc/gc.c) sees it: an opaque region and
 * the few things GC needs of it. GC keeps its own state (gc/gc.h, the
 * region's gc field) and never reads the region's fields; what it needs
 * of the write path (a relocation is a put), the read path (whether a
 * record is live) and the catalog comes through here.
 *
 * Locks as in api/internal.h: "the views' lock" is the region's view_mu,
 * under which GC's state lives; "the catalog's lock" is vol->meta_mu. */
#ifndef PAR_API_REGION_H
#define PAR_API_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "index/entry.h"
#include "io/file.h"
#include "log/vlog.h"
#include "meta/catalog.h"
#include "parallax/parallax.h"

typedef struct par_region par_region;
typedef struct view view;
typedef struct gc_state gc_state;

uint32_t region_id(const par_region *r);
gc_state *region_gc(par_region *r);
/* The volume's file, for reads of the region's segments. */
par_file *region_file(par_region *r);

/* The views' lock, and its condition: a view change, a finished
 * compaction or collection, a debt GC paid off. region_views_wait waits
 * (the lock held) up to ms milliseconds. */
void region_views_lock(par_region *r);
void region_views_unlock(par_region *r);
void region_views_wait(par_region *r, uint32_t ms);
void region_views_wake(par_region *r);
/* The seq of the oldest view still referenced (by the region or a reader). */
uint64_t view_oldest_seq(par_region *r);
/* Publishes a copy of the current view (the views' lock held); its seq, a
 * view newer than anything a reader started with before, or 0 with
 * PAR_ENOMEM in *rc. */
uint64_t region_republish(par_region *r, int *rc);

/* The region's state as GC and its writers' wait see it (the views' lock
 * held for all but logging): closing, its compactions' failure (0: none;
 * see failed_for_room), whether it is a replication primary (the only
 * role that collects: a relocation takes an LSN, the primary's to give),
 * and whether its logs take appends (not before its WAL replay ends). */
int region_is_closing(const par_region *r);
int region_failure(const par_region *r);
/* A compaction failure that GC can cure by freeing large-log segments: no
 * space for the merge's output, or a region description over the redo
 * record's limit (each large-log segment is listed in it). Compactions
 * stop, GC goes on and clears the failure once it freed segments. */
static inline int failed_for_room(int failed) { return failed == PAR_ENOSPC || failed == PAR_ELIMIT; }
int region_is_primary(const par_region *r);
int region_is_logging(par_region *r);
/* GC freed space (the views' lock held): a region whose compactions failed
 * for want of room lets them run again. */
void region_room_returned(par_region *r);
/* A writer waited for GC (par_stats.write_stalls). */
void region_note_stall(par_region *r);

/* Calls fn with the region's description under the catalog's lock (fn
 * takes no other lock but GC's settled_mu). */
typedef void (*desc_read_fn)(const region_desc *d, void *arg);
void region_read_desc(par_region *r, desc_read_fn fn, void *arg);
/* Persists the region's description via fn, which edits a copy under
 * the catalog's lock; the catalog entry changes once the redo record is
 * written, and the call returns once it is durable (the sync runs without
 * the lock). */
typedef int (*desc_edit_fn)(region_desc *d, void *arg, seg_list *freed);
int region_persist(par_region *r, desc_edit_fn fn, void *arg);
/* Gives segments a persisted edit dropped back to the allocator, and the
 * space past its reserve back to the file system. */
void region_free_segments(par_region *r, uint32_t seg, uint32_t n);
void region_trim(par_region *r);
/* The large-log segments the region's logs hold in memory (vlog_held, up
 * to 4): GC must not read one, or it would miss records not written yet. */
uint32_t region_large_held(par_region *r, uint32_t inc[4]);

/* The lowest pin of the region's live log cursors (UINT64_MAX: none), the
 * catalog's lock held: a cursor may still read the WAL records from its
 * pin on, and the large-log values they point at (repl/log.c). */
uint64_t region_cursors_pin(par_region *r);
/* Log cursors read no record before lsn from here on (repl/log.c). */
void region_raise_log_readable(par_region *r, uint64_t lsn);
/* The newest LSN the region gave (a write's or a relocation's). */
uint64_t region_last_given_lsn(par_region *r);
/* Returns once the WAL is durable up to lsn. */
int region_sync_log(par_region *r, uint64_t lsn);
/* Whether L0 may hold writes made with PAR_NO_WAL: they become durable only
 * when a flush covers them. */
int region_unlogged_in_l0(par_region *r);

/* GC's write (api/write.c). Under the region's write lock, with the current
 * view w at LSN lsn, check decides whether the record rec is still live
 * (*live) and may fail; if it is, rec is re-appended to the cold large log
 * and its key pointed at it at the next LSN, exactly like a put (the WAL
 * record, then L0). *relocated: that LSN, or 0. A region that is no
 * primary now, or refuses writes, relocates nothing and fails; so does a
 * full L0 (PAR_EBUSY: GC runs on a compaction worker, which must never
 * wait for room). */
typedef int (*relocate_check_fn)(void *arg, par_region *r, const view *w, uint64_t lsn, int *live);
int region_relocate(par_region *r, const vlog_record *rec, relocate_check_fn check, void *arg,
                    uint64_t *relocated);

/* The read path (api/read.c): key's newest version in w at lsn, PAR_OK
 * with *e (any category but a tombstone) or PAR_NOT_FOUND (with leaf_buf,
 * LEAF_SIZE bytes, device leaves are read into it with pread, not through
 * the map, and *e may point into it: tree_get); and whether an L0 of w
 * holds a version of key or a range tombstone over it. */
int region_lookup(par_region *r, const view *w, uint64_t lsn, const void *key, size_t key_len,
                  uint8_t *leaf_buf, tree_entry *e);
int view_l0_holds(const view *w, uint64_t lsn, const void *key, size_t key_len);

#endif
