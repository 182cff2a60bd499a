/* The memory budget of a volume (par_options.memory_budget_mib): one count
 * of the bytes held by every L0 of every region of the volume, which the
 * regions' writers keep under the limit together (api/budget.c), like
 * RocksDB's WriteBufferManager.
 *
 * An L0 (index/memtable.c) charges what it allocates as it grows and is
 * discharged once, when the flush that merged it leaves the region's view
 * or when it is freed, whichever comes first (a reader that still holds it
 * keeps its memory alive but no longer counted). */
#ifndef PAR_ALLOC_MEMBUDGET_H
#define PAR_ALLOC_MEMBUDGET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct mem_budget {
  uint64_t limit;             /* bytes; 0: no budget (used is still counted) */
  atomic_uint_fast64_t used;  /* bytes charged now                           */
  atomic_uint_fast64_t peak;  /* the most ever charged at once               */
  pthread_mutex_t mu;         /* with cv: writers waiting for used < limit   */
  pthread_cond_t cv;
} mem_budget;

void membudget_init(mem_budget *b, uint64_t limit);
void membudget_destroy(mem_budget *b);
void membudget_charge(mem_budget *b, uint64_t bytes);
/* Gives bytes back and wakes the writers waiting for room. */
void membudget_discharge(mem_budget *b, uint64_t bytes);
/* Whether a limit is set and reached. */
int membudget_over(mem_budget *b);
/* Waits until used drops below the limit or ms milliseconds pass. */
void membudget_wait(mem_budget *b, unsigned ms);

#endif
