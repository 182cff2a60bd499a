/*
 * replication.h — the hooks a primary/backup replication layer needs
 * (Talos, "send index"): read a region's log from an LSN, apply shipped log
 * records on a backup keeping the primary's LSNs, export the levels a
 * primary's compactions built and install them on a backup by rewriting the
 * segment addresses inside their nodes, and promote a backup.
 *
 * Roles of a region:
 *  PRIMARY            an ordinary region (the default): writes, reads,
 *                     compactions. Its log can be read from any LSN it
 *                     still holds (par_repl_cursor_*), its levels exported.
 *  BACKUP_SEND_INDEX  takes shipped records (par_repl_apply) into its WAL
 *                     only, and its levels from the primary
 *                     (par_repl_install_*); it never compacts, and
 *                     refuses the caller's writes (PAR_EINVAL: par_put,
 *                     par_delete, par_delete_range, par_write,
 *                     par_write_volume), whose LSNs would be the primary's.
 *  BACKUP_BUILD_INDEX takes shipped records into its WAL and L0 and compacts
 *                     its own copy, as a primary does (for comparison).
 * A backup becomes PRIMARY through par_repl_set_role, which replays the
 * records its L0 lacks from its log copy.
 *
 * Shipped records ("log stream") are a sequence of
 *   lsn u64 | count u32 | len u32 | count x op
 * (little-endian), an op being type u8 (1 put, 2 delete, 3 large put, 6
 * range delete) | key length varint | value length varint | key | value:
 * the WAL's records. A large put's value is the value's place in the
 * primary's large log (segment u32 | offset u32 | incarnation u32 | record
 * size u32) followed by the value, read back from there.
 *
 * A replicated region takes ordinary logged writes only: the cursor refuses
 * (PAR_EINVAL) a log holding writes made without it (PAR_NO_WAL) or a
 * cross-region batch's part.
 *
 * Send-index mode takes any placement: with the levels go the medium-log
 * segments their leaves point into (each copied once while the backup's
 * levels point into it, however many installed trees do), and a backup's
 * large log mirrors the
 * primary's (Talos's log map), each leaf's pointer rewritten to the
 * backup's copy. A send-index backup writes a shipped large value into its
 * mirror at its place as the record is applied, and its log copy keeps a
 * pointer to it (Talos's value log: an install then copies none of a
 * segment apply wrote from its first record); a value that does not extend
 * its mirror's records (the backup started after the segment's first one)
 * goes into the log copy whole. A value larger than a segment, which the
 * primary writes alone into a run of segments, is written whole into a run
 * of the mirror as it arrives; an install copies a run the backup lacks
 * part by part (par_repl_export_segment on each of its segments) and checks
 * the record whole at the commit. Send index takes values up to
 * PAR_MAX_VALUE_SIZE.
 */
#ifndef PARALLAX_REPLICATION_H
#define PARALLAX_REPLICATION_H

#include "parallax/parallax.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum par_repl_role {
  PAR_REPL_PRIMARY = 0,
  PAR_REPL_BACKUP_SEND_INDEX = 1,
  PAR_REPL_BACKUP_BUILD_INDEX = 2
} par_repl_role;

/* Changes the region's role. PRIMARY -> a backup role: the region stops
 * compacting (send-index) and accepts par_repl_apply; it should be new (its
 * LSNs then follow the primary's). A backup -> PRIMARY (promotion): the
 * records its L0 lacks are replayed from its log copy into L0, compactions
 * resume; the caller sends no write to the region until this returns.
 * During the replay the region flushes and merges but takes no LSN (it
 * reports BACKUP_BUILD_INDEX: no GC relocation) and becomes a PRIMARY once
 * every shipped record is in L0. A
 * promotion that fails (its log copy cannot be read to its end) leaves the
 * region a send-index backup, never a PRIMARY short of its log copy; a
 * retry replays again from what L0 took. A send-index backup whose
 * installed leaves point into a large-log segment it never had is not
 * promoted until its log copy holds the relocations that moved those values
 * (PAR_EBUSY; see par_repl_install_begin).
 * SEND_INDEX -> BUILD_INDEX replays the same way (a build-index backup's
 * state transfer: levels and log as a send-index backup, then its own L0
 * and compactions); BUILD_INDEX -> SEND_INDEX is refused (PAR_EINVAL). A role lasts
 * while the region is open: a reopened region is a PRIMARY until told
 * otherwise (its log copy and installed levels are kept). A PRIMARY that
 * took an LSN of its own since it was opened (a write, or a relocation by
 * its large-log GC, which runs on primaries only and may start as soon as
 * the region opens) cannot become a backup (PAR_EBUSY): the shipped records
 * of those LSNs would be taken for ones it holds. So a region to reopen as
 * a hybrid build-index backup is opened with GC held off
 * (gc_threshold_pct 100) until its role is set. */
PAR_API int par_repl_set_role(par_region *r, int role);

/* ---- the log stream (primary) ------------------------------------------ */

typedef struct par_repl_cursor par_repl_cursor;
/* A reader of the region's log from from_lsn (>= 1), which must be the
 * first LSN of a record (the LSN after the last one read, in practice). */
PAR_API int par_repl_cursor_open(par_region *r, uint64_t from_lsn, par_repl_cursor **out);
/* A live cursor keeps the WAL segments it still needs (a replication slot):
 * from the first LSN of the last chunk it returned (from_lsn before its
 * first read), so that its reader can resend that chunk through a new
 * cursor opened there before closing this one. Compactions free the
 * segments they cover once no cursor needs them. A cursor that would keep
 * more than its limit of segments the levels cover (a stalled reader) is
 * released instead, so that the log does not grow without bound: its reads
 * then fail with PAR_ENOENT. The limit is PAR_REPL_CURSOR_LIMIT segments
 * unless set (> 0) with par_repl_cursor_set_limit. */
#define PAR_REPL_CURSOR_LIMIT 64u
PAR_API int par_repl_cursor_set_limit(par_repl_cursor *c, uint32_t segments);
/* From now on the cursor returns records once the WAL writer has written
 * them to the file, before they are durable, and a read pushes what writers
 * appended since to the file itself (one write, no fdatasync: the writer
 * syncs within durability_interval_ms). A primary that acknowledges a write
 * once its backups hold it (Talos: the copies in the backups' memory are
 * what makes it safe) writes without PAR_SYNC and ships from here, so no
 * fdatasync is on a write's path. A power cut of the primary may then lose
 * records a backup holds: its volume must not come back as the same copy
 * (the replication module discards a restarted server's volume). */
PAR_API int par_repl_cursor_ship_written(par_repl_cursor *c);
/* Copies the next whole durable records (as shipped records) into buf, at
 * most cap bytes: *len bytes, the last record ending at LSN *last_lsn
 * (*len = 0 when no durable record follows yet). PAR_ETOOBIG with *len =
 * the size needed when the next record alone does not fit in cap;
 * PAR_ENOENT when the next LSN is no longer in the log (a compaction covered
 * it before the cursor was opened, or after the cursor was released: the
 * backup needs the levels first). */
PAR_API int par_repl_cursor_read(par_repl_cursor *c, void *buf, size_t cap, size_t *len,
                                 uint64_t *last_lsn);
/* Releases the cursor's pin; a region's cursors are closed before it is.
 * A live cursor also keeps the large-log segments holding values of the
 * records from its pin on, dead ones included, which GC would otherwise
 * drop: a reader that stalls holds at most its limit's worth of them. */
PAR_API void par_repl_cursor_close(par_repl_cursor *c);

/* ---- applying the stream (backup) -------------------------------------- */

/* Applies shipped records in order, each with its own LSN, into the
 * backup's log copy; *applied_lsn is then the newest LSN of the region's
 * log. flags: 0 or PAR_SYNC. Without PAR_SYNC the records are held as a
 * write without PAR_SYNC is (in the WAL's tail, written with its next 256
 * KiB buffer or within durability_interval_ms): Talos's backups hold the
 * log in memory and persist it when a segment fills. They become durable
 * at the next apply with PAR_SYNC, at a promotion (par_repl_set_role syncs
 * the log copy before it replays it), or when the region closes. With
 * PAR_SYNC this returns once every record up to *applied_lsn is durable
 * (with no records: the log copy is made durable).
 * A record the region already holds (LSNs up to its newest) is skipped, so
 * re-delivery is harmless. PAR_EINVAL for a gap (a record that does not
 * start at the next LSN), a region that is not a backup, or another flag;
 * PAR_ECORRUPT for malformed bytes (a large value's place included). Records
 * before the bad one stay applied. On a send-index backup every large value
 * of the call is written to the mirror before any record is logged; calls
 * on one region run one at a time. */
PAR_API int par_repl_apply(par_region *r, const void *records, size_t len, uint32_t flags,
                           uint64_t *applied_lsn);

/* ---- send index -------------------------------------------------------- */

/* The primary's device levels at one moment, kept alive (segments included)
 * until closed: the layout (every tree: level, slot, an id, root, height,
 * counts, segments, medium-log segments; the large log's segments; the
 * newest LSN a relocation out of a segment GC dropped took) and covered
 * LSN, and the bytes of each segment. GC drops no segment while an export
 * is open. */
typedef struct par_repl_export par_repl_export;
PAR_API int par_repl_export_open(par_region *r, par_repl_export **out);
/* The encoded layout; PAR_ETOOBIG with *len = the size needed when cap is
 * too small. */
PAR_API int par_repl_export_layout(par_repl_export *x, void *buf, size_t cap, size_t *len);
/* The LSN the exported levels cover. */
PAR_API uint64_t par_repl_export_covered(const par_repl_export *x);
/* Copies segment seg (one of the layout's; PAR_EINVAL otherwise) into buf,
 * PAR_SEGMENT_SIZE bytes, and sets *len (when len is not NULL) to how many
 * of them an install needs: the rest may go unsent (a tree's last segment,
 * a medium set's and a large-log head are mostly unused). */
PAR_API int par_repl_export_segment(par_repl_export *x, uint32_t seg, void *buf, size_t *len);
PAR_API void par_repl_export_close(par_repl_export *x);

/* Installs a layout on a send-index backup: begin parses it and allocates a
 * segment of the backup for every segment of each tree it does not hold yet
 * and every large-log segment it has no copy of (par_repl_install_needed
 * lists those, and the primary's large-log heads, copied again as they
 * grow, by the primary's numbers); each needed segment's bytes (as many as
 * the export said) then go to
 * par_repl_install_segment, which copies it, rewriting the child addresses
 * of index nodes and the log pointers of leaves through the segment map
 * (log records get checksums seeded with the backup's region id); commit
 * makes the levels and the large log the region's (replacing the trees the
 * layout no longer has) and trims the log copy up to the covered LSN, in
 * one catalog record. No compaction runs. A large-log segment the primary
 * dropped stays while the backup's log copy lacks the relocations that
 * moved its live values; a backup whose leaves point into one it never had
 * is promoted only once its log copy holds them (par_repl_set_role:
 * PAR_EBUSY until then). A layout covering fewer LSNs than the
 * backup's levels (from a primary promoted with older levels than this
 * backup's) installs nothing: begin needs no segment and commit changes
 * nothing, since the log copy no longer holds the LSNs in between. close
 * frees the handle and, without a commit,
 * the segments it allocated. PAR_EBUSY from commit (or from a segment of a
 * head): the region's levels or large log changed since begin (another
 * install). */
typedef struct par_repl_install par_repl_install;
PAR_API int par_repl_install_begin(par_region *r, const void *layout, size_t len,
                                   par_repl_install **out);
/* Writes min(cap, count) segment numbers to segs; returns the count. */
PAR_API size_t par_repl_install_needed(const par_repl_install *in, uint32_t *segs, size_t cap);
/* data: the segment's first len bytes (at most PAR_SEGMENT_SIZE; the rest
 * are taken as zeros), as par_repl_export_segment gave them. */
PAR_API int par_repl_install_segment(par_repl_install *in, uint32_t seg, const void *data, size_t len);
PAR_API int par_repl_install_commit(par_repl_install *in);
PAR_API void par_repl_install_close(par_repl_install *in);

/* ---- state transfer by snapshot (build index) -------------------------- */

/* A build-index backup can be made from the primary's pairs instead of its
 * levels, which works for every value size (shipped levels take values up
 * to a segment): the primary takes a snapshot with
 * par_repl_snapshot, whose pairs (read with a scanner) go to a new region
 * set to BACKUP_BUILD_INDEX as writes without the log (PAR_NO_WAL);
 * par_repl_rebase(lsn) then makes the copy the state at the snapshot's LSN,
 * and shipped records follow from lsn + 1 (open the primary's cursor there
 * before the snapshot's LSN can be trimmed: at the primary's L0 LSN before
 * the snapshot, say, and move on from lsn + 1 once it is known). */

/* A snapshot of the region and the newest LSN it sees, every record up to
 * which is durable in the region's WAL when this returns (a snapshot of a
 * primary holds nothing a crash could roll back). Released with
 * par_snapshot_release. */
PAR_API int par_repl_snapshot(par_region *r, par_snapshot **out, uint64_t *lsn);
/* On a build-index backup loaded from a snapshot at lsn: flushes L0 (the
 * loaded pairs become durable in the levels), then, in one catalog record,
 * makes lsn the LSN the levels cover and drops the log (the load's records
 * of writes without it), so that the next shipped record is lsn + 1.
 * PAR_EINVAL when the region is not a build-index backup or holds an LSN
 * past lsn; PAR_EBUSY when it was written meanwhile. */
PAR_API int par_repl_rebase(par_region *r, uint64_t lsn);

/* ---- counters ---------------------------------------------------------- */

enum {
  PAR_REPL_STAT_ROLE = 0,        /* the par_repl_role                         */
  PAR_REPL_STAT_LOG_LSN,         /* newest LSN in the region's log            */
  PAR_REPL_STAT_L0_LSN,          /* newest LSN in L0 (below LOG_LSN on a
                                    send-index backup)                        */
  PAR_REPL_STAT_COVERED_LSN,     /* LSNs the device levels cover              */
  PAR_REPL_STAT_RECORDS_APPLIED, /* shipped records applied                   */
  PAR_REPL_STAT_RECORDS_SKIPPED, /* shipped records already held              */
  PAR_REPL_STAT_TREES_INSTALLED,
  PAR_REPL_STAT_SEGMENTS_INSTALLED,
  PAR_REPL_STAT_COMPACTIONS,     /* compactions completed since the open      */
  PAR_REPL_STAT_MIRROR_BYTES,    /* bytes written to the large-log mirror
                                    since the open: by apply (shipped large
                                    values) and by installs                   */
  PAR_REPL_STAT_MEDIUM_SEGMENTS, /* medium-log segments installs copied since
                                    the open (a copy the backup holds already
                                    is shared, not copied again)              */
  PAR_REPL_STAT_SEGMENT_BYTES,   /* bytes installs wrote for the segments they
                                    copied since the open: the blocks their
                                    nodes and records reach (the mirror bytes
                                    installs wrote included)                  */
  PAR_REPL_STAT_COUNT
};
/* Writes min(cap, PAR_REPL_STAT_COUNT) counters to out; returns the count. */
PAR_API size_t par_repl_stats(par_region *r, uint64_t *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
