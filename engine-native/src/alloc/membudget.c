#include "alloc/membudget.h"

#include <assert.h>
#include <time.h>

void membudget_init(mem_budget *b, uint64_t limit) {
  b->limit = limit;
  atomic_init(&b->used, 0);
  atomic_init(&b->peak, 0);
  pthread_mutex_init(&b->mu, NULL);
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&b->cv, &a);
  pthread_condattr_destroy(&a);
}

void membudget_destroy(mem_budget *b) {
  pthread_mutex_destroy(&b->mu);
  pthread_cond_destroy(&b->cv);
}

void membudget_charge(mem_budget *b, uint64_t bytes) {
  uint64_t now = atomic_fetch_add(&b->used, bytes) + bytes;
  uint64_t peak = atomic_load(&b->peak);
  while (now > peak && !atomic_compare_exchange_weak(&b->peak, &peak, now)) {
  }
}

void membudget_discharge(mem_budget *b, uint64_t bytes) {
  uint64_t before = atomic_fetch_sub(&b->used, bytes);
  assert(before >= bytes);
  (void)before;
  if (!b->limit) return;
  pthread_mutex_lock(&b->mu);
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
}

int membudget_over(mem_budget *b) { return b->limit && atomic_load(&b->used) >= b->limit; }

void membudget_wait(mem_budget *b, unsigned ms) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_nsec += (long)ms * 1000000L;
  ts.tv_sec += ts.tv_nsec / 1000000000L;
  ts.tv_nsec %= 1000000000L;
  pthread_mutex_lock(&b->mu);
  if (membudget_over(b)) pthread_cond_timedwait(&b->cv, &b->mu, &ts);
  pthread_mutex_unlock(&b->mu);
}
