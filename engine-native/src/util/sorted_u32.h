/* Sorted arrays of uint32_t (large-log incarnations). */
#ifndef PAR_UTIL_SORTED_U32_H
#define PAR_UTIL_SORTED_U32_H

#include <stdint.h>

static inline int sorted_u32_contains(const uint32_t *v, uint32_t n, uint32_t x) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (v[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && v[lo] == x;
}

#endif
