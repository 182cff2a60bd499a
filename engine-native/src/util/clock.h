/* Clock readings as integers: the monotonic clock for intervals and
 * deadlines, the realtime one where a condition variable keeps the default
 * clock (pthread_cond_timedwait). */
#ifndef PAR_UTIL_CLOCK_H
#define PAR_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static inline uint64_t clock_mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

static inline uint64_t clock_mono_ms(void) { return clock_mono_ns() / 1000000u; }

#endif
