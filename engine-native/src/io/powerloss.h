/* Power-loss simulation for the volume file, for tests only.
 *
 * A kill -9 keeps every write that reached the kernel, so it cannot show
 * what a power cut shows: writes since the last fdatasync lost, torn, or
 * persisted out of order. In the spirit of RocksDB's FaultInjectionTestFS
 * and LevelDB's fault-injection test, a process that arms this layer
 * journals every write it makes to its volume (offset, old bytes, new bytes)
 * to a side file, and marks in it each fdatasync that covered them. After
 * the process is killed, powerloss_crash() turns the volume into one a power
 * cut at that moment could have left: every write the last completed
 * fdatasync covered stays; every 512-byte sector written after it ends up
 * holding any one of its versions since then — the durable one, the newest,
 * or one in between — chosen at random and independently per sector, so
 * writes are lost, torn at sector boundaries and reordered. (File size
 * changes are not reverted: the volume only grows, and readers check offsets
 * against what the catalog says.)
 *
 * Process-wide and for one volume file per process, like io/fault.h; the
 * symbols are internal, reachable from the static library the tests link. */
#ifndef PAR_IO_POWERLOSS_H
#define PAR_IO_POWERLOSS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define POWERLOSS_SECTOR 512u

/* Starts journaling writes to journal_path (created or truncated). 0 or an errno. */
int powerloss_arm(const char *journal_path);
/* Whether the layer is armed: the fast path of io/file.c reads only this. */
int powerloss_armed(void);

/* For io/file.c when armed: pwrite and fdatasync that keep the journal. */
ssize_t powerloss_pwrite(int fd, const void *buf, size_t len, uint64_t off);
int powerloss_fdatasync(int fd);

typedef struct powerloss_stats {
  uint64_t unsynced_writes;  /* writes after the last completed fdatasync */
  uint64_t sectors;          /* distinct sectors they touched */
  uint64_t sectors_durable;  /* ... that went back to their durable version */
  uint64_t sectors_newest;   /* ... that kept their newest version */
} powerloss_stats;

/* Applies a power cut to volume_path from the journal a killed process left;
 * seed picks the sectors' versions. 0 or an errno (EINVAL: a damaged journal). */
int powerloss_crash(const char *volume_path, const char *journal_path, uint64_t seed,
                    powerloss_stats *stats);

#endif
