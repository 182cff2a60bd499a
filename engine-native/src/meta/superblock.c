#include "meta/superblock.h"

#include <stdlib.h>
#include <string.h>

#include "util/coding.h"
#include "util/crc32c.h"
#include "util/status.h"

#define SB_MAGIC 0x58414c4c41524150ull /* "PARALLAX" */
#define SB_INCOMPLETE_MAGIC 0x2154504b43524150ull /* "PARCKPT!" */
#define SB_CRC_OFF (PAR_BLOCK - 4)

/* Layout: magic u64 | version u32 | segment size u32 | epoch u64 |
 * stream id u64 | stream head u32 | ... zero ... | crc32c u32 at 4092. */
static void encode(uint8_t *b, const superblock *sb) {
  memset(b, 0, PAR_BLOCK);
  enc64(b, SB_MAGIC);
  enc32(b + 8, PAR_FORMAT_VERSION);
  enc32(b + 12, PAR_SEGMENT_SIZE);
  enc64(b + 16, sb->epoch);
  enc64(b + 24, sb->stream_id);
  enc32(b + 32, sb->stream_head);
  enc32(b + SB_CRC_OFF, crc32c(0, b, SB_CRC_OFF));
}

/* 1 = valid, 0 = not a superblock, -1 = magic but damaged, -2 = unsupported,
 * -3 = an incomplete checkpoint's marker. */
static int decode(const uint8_t *b, superblock *sb) {
  if (dec64(b) == SB_INCOMPLETE_MAGIC) return -3;
  if (dec64(b) != SB_MAGIC) return 0;
  if (dec32(b + SB_CRC_OFF) != crc32c(0, b, SB_CRC_OFF)) return -1;
  uint32_t version = dec32(b + 8);
  if (version < PAR_FORMAT_VERSION_MIN || version > PAR_FORMAT_VERSION || dec32(b + 12) != PAR_SEGMENT_SIZE)
    return -2;
  sb->epoch = dec64(b + 16);
  sb->stream_id = dec64(b + 24);
  sb->stream_head = dec32(b + 32);
  return 1;
}

int superblock_read(par_file *f, superblock *sb) {
  if (f->size < 2 * PAR_BLOCK)
    return par_error(PAR_ENOTVOLUME, "file of %llu bytes is too small to be a volume",
                     (unsigned long long)f->size);
  uint8_t *b = file_buf_alloc(2 * PAR_BLOCK);
  if (!b) return par_error(PAR_ENOMEM, "superblock buffer");
  int rc = file_read(f, b, 2 * PAR_BLOCK, 0);
  if (rc) {
    free(b);
    return rc;
  }
  superblock c[2];
  int r0 = decode(b, &c[0]), r1 = decode(b + PAR_BLOCK, &c[1]);
  free(b);
  if (r0 == -2 || r1 == -2)
    return par_error(PAR_ENOTVOLUME, "volume format or segment size not supported by this version (formats %u to %u)",
                     PAR_FORMAT_VERSION_MIN, PAR_FORMAT_VERSION);
  if (r0 == 1 && (r1 != 1 || c[0].epoch > c[1].epoch)) *sb = c[0];
  else if (r1 == 1) *sb = c[1];
  else if (r0 == -3 || r1 == -3)
    return par_error(PAR_ENOTVOLUME, "an incomplete checkpoint: par_checkpoint was interrupted while writing it; "
                                     "take the checkpoint again");
  else if (r0 == 0 && r1 == 0) return par_error(PAR_ENOTVOLUME, "no Parallax superblock found");
  else return par_error(PAR_ECORRUPT, "both superblock copies fail their checksum");
  return PAR_OK;
}

static int write_copy(par_file *f, const superblock *sb, int copy) {
  uint8_t *b = file_buf_alloc(PAR_BLOCK);
  if (!b) return par_error(PAR_ENOMEM, "superblock buffer");
  encode(b, sb);
  int rc = file_write(f, b, PAR_BLOCK, (uint64_t)copy * PAR_BLOCK);
  free(b);
  return rc ? rc : file_sync(f);
}

int superblock_write(par_file *f, const superblock *sb) { return write_copy(f, sb, (int)(sb->epoch % 2)); }

int superblock_mirror(par_file *f, const superblock *sb) { return write_copy(f, sb, (int)((sb->epoch + 1) % 2)); }

int superblock_mark_incomplete(par_file *f) {
  uint8_t *b = file_buf_alloc(2 * PAR_BLOCK);
  if (!b) return par_error(PAR_ENOMEM, "superblock buffer");
  enc64(b, SB_INCOMPLETE_MAGIC);
  enc64(b + PAR_BLOCK, SB_INCOMPLETE_MAGIC);
  int rc = file_write(f, b, 2 * PAR_BLOCK, 0);
  free(b);
  return rc ? rc : file_sync(f);
}

int superblock_probe(par_file *f, int *kind) {
  *kind = f->size ? SB_FOREIGN : SB_EMPTY;
  if (f->size < 2 * PAR_BLOCK) return PAR_OK;
  uint8_t *b = file_buf_alloc(2 * PAR_BLOCK);
  if (!b) return par_error(PAR_ENOMEM, "superblock buffer");
  int rc = file_read(f, b, 2 * PAR_BLOCK, 0);
  for (int i = 0; !rc && i < 2; i++) {
    uint64_t magic = dec64(b + i * PAR_BLOCK);
    if (magic == SB_MAGIC) *kind = SB_VOLUME;
    else if (magic == SB_INCOMPLETE_MAGIC && *kind != SB_VOLUME) *kind = SB_INCOMPLETE;
  }
  free(b);
  return rc;
}
