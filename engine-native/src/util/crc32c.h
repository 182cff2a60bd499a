/* CRC-32C (Castagnoli): the checksum of every on-disk record and node. */
#ifndef PAR_UTIL_CRC32C_H
#define PAR_UTIL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* crc32c(seed, data): seed is the CRC of what came before (0 to start), so
 * crc32c(crc32c(0, a), b) == crc32c(0, a + b). */
uint32_t crc32c(uint32_t crc, const void *data, size_t len);

#endif
