/* CRC-32C (Castagnoli): the checksum of every on-disk record and node. */
#ifndef PAR_UTIL_CRC32C_H
#define PAR_UTIL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32c(uint32_t crc, const void *data, size_t len);

#endif
