#include "util/crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <arm_acle.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

/* Table-driven fallback plus the CPU's CRC32C instruction when it has one: SSE4.2 on x86_64,
 * the CRC extension (ARMv8.1, optional in v8.0) on aarch64. The library is built for the
 * baseline of each architecture, so the instruction is chosen at run time. */
static uint32_t table[256];
static int have_hw;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    table[i] = c;
  }
#if defined(__x86_64__)
  unsigned a, b, c, d;
  have_hw = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
#elif defined(__aarch64__)
  have_hw = (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#endif
}

#if defined(__x86_64__)
/* Clang 14+ names the instruction's own feature; GCC knows it as part of sse4.2 only. */
#if defined(__clang__)
#define CRC_TARGET "sse4.2,crc32"
#else
#define CRC_TARGET "sse4.2"
#endif
__attribute__((target(CRC_TARGET))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p,
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
#elif defined(__aarch64__)
#if defined(__clang__)
#define CRC_TARGET "crc"
#else
#define CRC_TARGET "+crc"
#endif
__attribute__((target(CRC_TARGET))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p,
                                                           size_t len) {
  while (len >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    crc = __crc32cd(crc, v);
    p += 8;
    len -= 8;
  }
  while (len--) crc = __crc32cb(crc, *p++);
  return crc;
}
#endif

uint32_t crc32c(uint32_t crc, const void *data, size_t len) {
  pthread_once(&once, init);
  const uint8_t *p = data;
  crc = ~crc;
#if defined(__x86_64__) || defined(__aarch64__)
  if (have_hw) return ~crc_hw(crc, p, len);
#endif
  while (len--) crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}
