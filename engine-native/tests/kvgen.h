/*
 * kvgen.h — a deterministic data set for the reliability tests: key i with
 * version v has a value whose size class cycles with i (small, medium,
 * large) and whose bytes are a pure function of (i, v), so a value read
 * back is either recognised exactly or known to be wrong.
 */
#ifndef PARALLAX_KVGEN_H
#define PARALLAX_KVGEN_H

#include <stddef.h>
#include <stdint.h>

#include <parallax/parallax.h>

#define KV_MAX_VALUE 2048u
/* kv_read's status for bytes that are no version of the key. */
#define KV_WRONG 100

size_t kv_key(uint64_t i, char *out); /* out holds 32 bytes */
size_t kv_value(uint64_t i, uint32_t ver, uint8_t *out); /* out holds KV_MAX_VALUE */
int kv_put(par_region *r, uint64_t i, uint32_t ver, unsigned flags);
/* PAR_OK with *ver (> 0), PAR_NOT_FOUND (*ver = 0), KV_WRONG, or the error
 * par_get returned. */
int kv_read(par_region *r, uint64_t i, uint32_t *ver);
/* Parses a value of key i as kv_read does (for scans). */
int kv_parse(uint64_t i, const void *v, size_t len, uint32_t *ver);

#endif
