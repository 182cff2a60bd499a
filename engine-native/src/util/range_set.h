/* A set of key ranges [begin, end), kept sorted and disjoint: the range
 * tombstones of one device tree. Adding a range merges it with every range
 * it overlaps or touches, so a set never holds more ranges than were added
 * and a lookup is one binary search. */
#ifndef PAR_UTIL_RANGE_SET_H
#define PAR_UTIL_RANGE_SET_H

#include <stddef.h>
#include <stdint.h>

typedef struct key_range {
  uint8_t *begin, *end; /* malloc'd, owned by the set */
  uint16_t begin_len, end_len;
} key_range;

typedef struct range_set {
  key_range *v; /* sorted by begin; v[i].end < v[i + 1].begin */
  uint32_t n, cap;
} range_set;

/* Adds [begin, end); an empty range (begin >= end) changes nothing.
 * PAR_ENOMEM leaves the set as it was. */
int range_set_add(range_set *s, const void *begin, size_t begin_len, const void *end, size_t end_len);
/* Adds every range of src. */
int range_set_union(range_set *dst, const range_set *src);
/* Whether some range holds key. */
int range_set_covers(const range_set *s, const void *key, size_t key_len);
int range_set_copy(range_set *dst, const range_set *src);
void range_set_free(range_set *s);
/* Bytes of its encoding: count u32 | count x (begin_len u16, begin, end_len u16, end). */
size_t range_set_encoded_size(const range_set *s);
/* Writes the encoding (range_set_encoded_size bytes) to out; returns the
 * byte after it. */
uint8_t *range_set_encode(const range_set *s, uint8_t *out);
/* Decodes exactly len bytes into an empty set: PAR_ECORRUPT unless they are
 * one encoding of non-empty ranges, sorted and disjoint, keys of 1 ..
 * PAR_MAX_KEY_SIZE bytes (the set is then left empty). */
int range_set_decode(range_set *s, const uint8_t *in, size_t len);

#endif
