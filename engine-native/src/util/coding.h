/* Little-endian fixed-width encoding; every on-disk integer goes through these. */
#ifndef PAR_UTIL_CODING_H
#define PAR_UTIL_CODING_H

#include <stdint.h>
#include <string.h>

static inline void enc16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void enc32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void enc64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline uint16_t dec16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t dec32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t dec64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the on-disk format is little-endian; add byte swaps for this target"
#endif

/* Byte-wise key order (memcmp, shorter first on a common prefix). */
static inline int key_cmp(const void *a, size_t alen, const void *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c;
  return alen < blen ? -1 : alen > blen;
}

#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

/* LEB128 varints, for lengths in log records and leaves. */
static inline size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

static inline uint8_t *put_varint(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

/* Decodes a 32-bit varint; NULL when it is malformed or runs past end. */
static inline const uint8_t *get_varint32(const uint8_t *p, const uint8_t *end, uint32_t *v) {
  uint32_t r = 0;
  for (int shift = 0; shift <= 28 && p < end; shift += 7) {
    uint8_t b = *p++;
    r |= (uint32_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return p;
    }
  }
  return NULL;
}

#endif
