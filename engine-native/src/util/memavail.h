/* How much memory this process can still take: what a warm-up (api/warm.c)
 * may fill with pages of the volume without pushing out what is in use.
 *
 * The bound is the tighter of the machine's MemAvailable and, where the
 * process runs in a memory cgroup with a limit (v1 or v2), that limit less
 * the group's usage (page cache included, as the kernel charges it). Only
 * the process's own group is read, not its ancestors'. */
#ifndef PAR_MEMAVAIL_H
#define PAR_MEMAVAIL_H

#include <stddef.h>
#include <stdint.h>

/* Bytes available now; 0 when nothing could be read. */
uint64_t mem_available(void);

/* The parts, on the files' text (tests feed them their own). */

/* MemAvailable of a /proc/meminfo text, in bytes; 0 if it has none. */
uint64_t meminfo_available(const char *meminfo);
/* The directory holding the memory controller's files of the group that a
 * /proc/self/cgroup text names, written to out (cap bytes): under
 * /sys/fs/cgroup/memory for v1, /sys/fs/cgroup for v2 (*v2 set to 1).
 * 0, or -1 when the text names no memory group. */
int cgroup_memory_dir(const char *proc_self_cgroup, char *out, size_t cap, int *v2);
/* Limit less usage, from the texts of the group's limit and usage files
 * (v1 memory.limit_in_bytes and memory.usage_in_bytes, v2 memory.max and
 * memory.current); UINT64_MAX when there is no limit ("max", or v1's
 * near-2^63 value), 0 when usage is at or over it. */
uint64_t cgroup_headroom(const char *limit, const char *usage);

#endif
