/* The region as the large log's GC (gc/gc.c) and compaction
 * (compaction/compaction.c) see it: an opaque region and the things they
 * need of it. Each keeps its own state (gc/gc.h gc_state,
 * compaction/compaction.h compaction_state) and never reads the region's
 * fields; what they need of the write path (a relocation is a put), the
 * read path, the views (api/view.h) and the catalog comes through here.
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
typedef struct compaction_state compaction_state;
typedef struct compaction_workers compaction_workers;
typedef struct segalloc segalloc;

uint32_t region_id(const par_region *r);
gc_state *region_gc(par_region *r);
/* The volume's file, for reads of the region's segments. */
par_file *region_file(par_region *r);

/* The views' lock, and its condition: a view change, a finished
 * compaction or collection, a debt GC paid off. region_views_wait waits
 * (the lock held), region_views_wait_ms up to ms milliseconds. */
void region_views_lock(par_region *r);
void region_views_unlock(par_region *r);
void region_views_wait(par_region *r);
void region_views_wait_ms(par_region *r, uint32_t ms);
void region_views_wake(par_region *r);
/* The seq of the oldest view still referenced (by the region or a reader). */
uint64_t view_oldest_seq(par_region *r);
/* Publishes a copy of the current view (the views' lock held); its seq, a
 * view newer than anything a reader started with before, or 0 with
 * PAR_ENOMEM in *rc. */
uint64_t region_republish(par_region *r, int *rc);

/* The region's state as GC, its writers' wait and compaction see it (the
 * views' lock held, but for logging, and for closing, which a merge polls
 * without it): whether it is closing; its compactions' failure (0: none);
 * whether it is a replication primary (the only role that collects: a
 * relocation takes an LSN, the primary's to give); and whether its logs
 * take appends (not before its WAL replay ends). */
int region_is_closing(const par_region *r);
int region_failure(const par_region *r);
int region_is_primary(const par_region *r);
int region_is_logging(par_region *r);
/* The first step of a close (the views' lock held): merges stop queueing. */
void region_mark_closing(par_region *r);
/* A compaction failure that GC can cure by freeing large-log segments: no
 * space for the merge's output, or a region description over the redo
 * record's limit (each large-log segment is listed in it). Compactions
 * stop, GC goes on and clears the failure once it freed segments. */
static inline int failed_for_room(int failed) { return failed == PAR_ENOSPC || failed == PAR_ELIMIT; }
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


/* ---- what compaction needs besides ---- */

const par_options *region_options(const par_region *r);
compaction_state *region_compaction(par_region *r);
/* The volume's compaction workers, which run the region's merges. */
compaction_workers *region_workers(par_region *r);
/* The volume's segment allocator, which merges build into. */
segalloc *region_alloc(par_region *r);
/* Resolves key prefixes in the region's trees. */
const key_source *region_keys(par_region *r);
/* The region's replication role (a par_repl_role). */
int region_role(const par_region *r);
/* A merge failed (the views' lock held): compactions stop; see
 * failed_for_room for the failures GC can cure. */
void region_set_failure(par_region *r, int rc);
/* One merge commit at a time, taken before the views' lock: a commit
 * builds its layout from the view the previous one published, and syncs
 * it with the views' lock released. */
void region_commit_lock(par_region *r);
void region_commit_unlock(par_region *r);
/* Whether the region's logs are shipped (a replication cursor reads them):
 * merges then write through the page cache too (index/builder.h). */
int region_logs_shipped(par_region *r);
/* A worker's part of the memory budget (api/budget.c): freezes the L0 if a
 * writer asked for it, it holds entries and no frozen L0 waits. */
void region_freeze_if_wanted(par_region *r);

/* region_persist without the sync: durable once region_persist_sync(r,
 * *ticket) returns, and nothing outside the catalog may act on the change
 * before (meta/redolog.h). */
int region_persist_unsynced(par_region *r, desc_edit_fn fn, void *arg, uint64_t *ticket);
int region_persist_sync(par_region *r, uint64_t ticket);
/* repl/log.c: how many of d's first WAL segments may be freed once levels
 * cover LSNs up to covered (the catalog's lock held): those wholly below
 * both covered + 1 and every live log cursor's position. A cursor that
 * would keep more than its limit of segments beyond the covered ones is
 * released instead (its reads fail with PAR_ENOENT): a stalled reader
 * cannot grow the log without bound. drop_all: the log restarts (an
 * install on a backup whose log it skips), every cursor is released. */
uint32_t region_wal_trimmable(par_region *r, const region_desc *d, uint64_t covered, int drop_all);
/* Takes a large-log segment for a spill's sorted run (a
 * sorted_run_take_fn; ctx is the region): PAR_ENOSPC or PAR_ELIMIT, without
 * an error message, when the room the hot head leaves is not there. */
int region_take_sorted(void *ctx, uint32_t ntaken, uint32_t *seg, uint32_t *inc);
/* The value a pointer entry refers to (CAT_LARGE: the large log; CAT_MEDIUM:
 * a transient medium-log segment): a pointer into the memory map, or a
 * malloc'd copy in *owned (to free) when a large record is still in a
 * tail buffer. */
int region_read_large(par_region *r, const tree_entry *e, const uint8_t **value, uint32_t *value_len,
                      uint8_t **owned);

#endif
