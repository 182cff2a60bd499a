/* Fault injection for the volume file's system calls (and L0's memory
 * allocations), for tests only.
 *
 * Disarmed (the default) it costs one relaxed atomic load per call. Tests
 * arm rules that make chosen pwrite/pread/fdatasync/fallocate calls fail
 * with an errno or transfer only part of their bytes. The symbols are
 * internal (the library is built with hidden visibility): only the static
 * library the C tests and fuzzers link can reach them. The rules are
 * process-wide: every open volume is affected. */
#ifndef PAR_IO_FAULT_H
#define PAR_IO_FAULT_H

#include <stddef.h>
#include <stdint.h>

typedef enum fault_op {
  FAULT_PWRITE,
  FAULT_PREAD,
  FAULT_FSYNC,
  FAULT_FALLOCATE,
  FAULT_L0_ENTRY, /* L0 allocates an entry (key and value): fails with ENOMEM */
  FAULT_L0_NODE   /* L0 allocates a tree node: fails with ENOMEM           */
} fault_op;

/* A call matches a rule when it is of the rule's op, touches [lo, hi)
 * (hi 0: any offset; an fsync touches every offset) and transfers at least
 * min_len bytes (pread/pwrite; 0: any). The rule lets `skip`
 * matching calls through, then fires on the next `times` ones (0: on every
 * one from then on). Firing fails the call with errno `err`, or when err
 * is 0 (pread/pwrite only) makes it transfer only the first half of its
 * bytes (rounded down to a block when that leaves any), as a disk that
 * fills mid-write does. */
typedef struct fault_rule {
  fault_op op;
  uint64_t skip;
  uint64_t times;
  uint64_t lo, hi;
  int err;
  size_t min_len;
} fault_rule;

#define FAULT_MAX_RULES 8

/* Arms a rule; returns its id, or -1 when FAULT_MAX_RULES are armed. */
int fault_arm(const fault_rule *r);
/* How often rule id has fired. */
uint64_t fault_fired(int id);
/* Disarms every rule. */
void fault_reset(void);

/* Calls fn(arg) on the syncing thread before every fdatasync (fn NULL:
 * none), for tests that check what a thread holds while it syncs. Cleared
 * by fault_reset too. */
void fault_observe_syncs(void (*fn)(void *), void *arg);
/* The same before every pread of the volume file. */
void fault_observe_reads(void (*fn)(void *), void *arg);

/* Calls fn(arg, off, len) for every readahead request (file_prefetch),
 * for tests that check what scans ask for. Cleared by fault_reset too. */
void fault_observe_prefetches(void (*fn)(void *, uint64_t off, uint64_t len), void *arg);
/* For io/file.c: tells the prefetch observer, if any. */
void fault_prefetch_seen(uint64_t off, uint64_t len);

/* For io/file.c: 0 to proceed with *len bytes (possibly shortened), or the
 * errno the call must fail with. */
int fault_check(fault_op op, uint64_t off, size_t *len);

#endif
