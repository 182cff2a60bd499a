#include "util/crc32c.h"

#include <pthread.h>
#include <string.h>

/* Table-driven fallback plus the SSE4.2 instruction when the CPU has it. */
static uint32_t table[256];
static int have_sse42;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    table[i] = c;
  }
#if defined(__x86_64__)
  __builtin_cpu_init();
  have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p,
                                                          size_t len) {
  uint64_t c = crc;
  while (len >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
    p += 8;
    len -= 8;
  }
  uint32_t c32 = (uint32_t)c;
  while (len--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}
#endif

uint32_t crc32c(uint32_t crc, const void *data, size_t len) {
  pthread_once(&once, init);
  const uint8_t *p = data;
  crc = ~crc;
#if defined(__x86_64__)
  if (have_sse42) return ~crc_hw(crc, p, len);
#endif
  while (len--) crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}
