/* The superblock: two 4 KiB copies at the start of segment 0. Each names
 * the head segment of the current redo-log stream; the valid copy with the
 * highest epoch wins, and updates always overwrite the other copy, so a torn
 * superblock write leaves the previous one intact. Once that write is
 * durable the update is mirrored into the other copy too: the older stream
 * is freed right after an update, so falling back to an older copy would
 * replay a stale catalog over reused segments; two equal copies let a
 * damaged one fall back to an identical one. */
#ifndef PAR_META_SUPERBLOCK_H
#define PAR_META_SUPERBLOCK_H

#include <stdint.h>

#include "io/file.h"

#define PAR_FORMAT_VERSION 6u /* 2: leaves keep key prefixes of log pairs;
                                 3: large-log segments say whether they are a head;
                                 4: range tombstones (a WAL op, the trees' lists in
                                    the catalog);
                                 5: a region's large-log incarnation reservation;
                                 6: large-log heads parked at a clean close */
/* The oldest format this engine opens: a format 3 volume is format 6
 * without range tombstones, reservations and parked heads, a format 4 one
 * without the last two, a format 5 one without parked heads; each becomes
 * format 6 at the superblock update every open makes. */
#define PAR_FORMAT_VERSION_MIN 3u

typedef struct superblock {
  uint64_t epoch;
  uint64_t stream_id;   /* records of the current redo stream carry it */
  uint32_t stream_head; /* first segment of the redo stream            */
} superblock;

/* PAR_ENOTVOLUME when neither copy carries the magic, PAR_ECORRUPT when
 * none of those that do is intact. */
int superblock_read(par_file *f, superblock *sb);
/* Writes copy (epoch % 2) and syncs: the update is durable once this returns. */
int superblock_write(par_file *f, const superblock *sb);
/* Writes the same contents into the other copy and syncs. */
int superblock_mirror(par_file *f, const superblock *sb);

/* A checkpoint being written (api/checkpoint.c) carries a marker in both
 * copies instead of a superblock until its own superblock replaces them:
 * opening a checkpoint cut short fails with PAR_ENOTVOLUME, naming it. */
int superblock_mark_incomplete(par_file *f);
/* What the start of a file holds, for a checkpoint deciding whether it may
 * overwrite it: nothing (an empty file), a volume (a superblock's magic in
 * either copy, intact or not), an incomplete checkpoint, or anything else. */
enum { SB_EMPTY, SB_VOLUME, SB_INCOMPLETE, SB_FOREIGN };
int superblock_probe(par_file *f, int *kind);

#endif
