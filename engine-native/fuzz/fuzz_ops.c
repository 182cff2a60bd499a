/* libFuzzer target: the input is a sequence of operations on one region —
 * put, delete, range delete, get, batch, scan (forward or reverse), flush,
 * sync, reopen —
 * over 64 keys with values of all three size classes, checked after every
 * step against a plain array model. Any disagreement or engine error aborts. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <parallax/parallax.h>

#define NKEYS 64
#define MAX_VAL 1500

typedef struct slot {
  int present;
  uint32_t len;
  uint8_t seed;
} slot;

static char g_path[4096];
static slot model[NKEYS];
static par_volume *vol;
static par_region *reg;

#define CHECK(c, ...)                                                                        \
  do {                                                                                       \
    if (!(c)) {                                                                              \
      fprintf(stderr, "fuzz_ops: " __VA_ARGS__);                                             \
      fprintf(stderr, " (last error: %s)\n", par_last_error());                              \
      abort();                                                                               \
    }                                                                                        \
  } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *base = getenv("PAR_FUZZ_DIR");
  snprintf(g_path, sizeof g_path, "%s/fuzz_ops.%d.px", base && *base ? base : "/tmp", (int)getpid());
  return 0;
}

static void fill(uint8_t *v, uint32_t len, uint8_t seed) {
  for (uint32_t i = 0; i < len; i++) v[i] = (uint8_t)(seed * 31u + i * 7u);
}

static size_t key_of(uint32_t k, char *out) { return (size_t)snprintf(out, 16, "key%02u", k); }

static void open_all(void) {
  par_options o;
  par_options_init(&o);
  o.l0_size = 64u << 10;
  o.durability_interval_ms = 1;
  CHECK(par_open(g_path, &o, &vol) == PAR_OK, "open");
  CHECK(par_region_open(vol, "r", 1, &reg) == PAR_OK, "region open");
}

static void close_all(void) {
  CHECK(par_region_close(reg) == PAR_OK, "region close");
  CHECK(par_close(vol) == PAR_OK, "close");
}

static void check_get(uint32_t k) {
  char key[16];
  static uint8_t buf[MAX_VAL], want[MAX_VAL];
  size_t len = 0;
  int rc = par_get(reg, NULL, key, key_of(k, key), buf, sizeof buf, &len);
  if (!model[k].present) {
    CHECK(rc == PAR_NOT_FOUND, "get %u: %d, expected not found", k, rc);
    return;
  }
  CHECK(rc == PAR_OK && len == model[k].len, "get %u: %d len %zu, expected %u", k, rc, len, model[k].len);
  fill(want, model[k].len, model[k].seed);
  CHECK(memcmp(buf, want, len) == 0, "get %u: wrong bytes", k);
}

/* Scans from key `from` to the end, or (reverse) from it back to the first
 * key with PAR_SEEK_LE and prev, against the model. */
static void check_scan(uint32_t from, int reverse) {
  par_scanner *s;
  char key[16];
  static uint8_t want[MAX_VAL];
  CHECK(par_scanner_open(reg, NULL, &s) == PAR_OK, "scanner");
  CHECK(par_scanner_seek(s, key, key_of(from, key), reverse ? PAR_SEEK_LE : PAR_SEEK_GE) == PAR_OK, "seek");
  for (uint32_t i = 0; reverse ? i <= from : from + i < NKEYS; i++) {
    uint32_t k = reverse ? from - i : from + i;
    if (!model[k].present) continue;
    const void *kp, *vp;
    size_t kl, vl;
    CHECK(par_scanner_valid(s), "scan ended before key %u", k);
    CHECK(par_scanner_key(s, &kp, &kl) == PAR_OK && par_scanner_value(s, &vp, &vl) == PAR_OK, "scan entry");
    CHECK(kl == key_of(k, key) && memcmp(kp, key, kl) == 0, "scan: expected key %u", k);
    fill(want, model[k].len, model[k].seed);
    CHECK(vl == model[k].len && memcmp(vp, want, vl) == 0, "scan: wrong value of key %u", k);
    CHECK((reverse ? par_scanner_prev(s) : par_scanner_next(s)) == PAR_OK, "scan step");
  }
  CHECK(!par_scanner_valid(s), "scan returned an extra key");
  par_scanner_close(s);
}

static uint32_t value_len(uint8_t b) {
  static const uint32_t classes[3] = {8, 300, MAX_VAL}; /* small, medium, large */
  return classes[b % 3] - (b / 3) % 8;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unlink(g_path);
  memset(model, 0, sizeof model);
  open_all();
  static uint8_t val[MAX_VAL];
  char key[16];
  for (size_t i = 0; i + 2 < size; i += 3) {
    uint8_t op = data[i] % 10, a = data[i + 1], b = data[i + 2];
    uint32_t k = a % NKEYS;
    switch (op) {
    case 0:
    case 1: { /* put (sync when op is 1) */
      uint32_t len = value_len(b);
      fill(val, len, a);
      CHECK(par_put(reg, key, key_of(k, key), val, len, op ? PAR_SYNC : 0) == PAR_OK, "put");
      model[k] = (slot){1, len, a};
      break;
    }
    case 2:
      CHECK(par_delete(reg, key, key_of(k, key), 0) == PAR_OK, "delete");
      model[k].present = 0;
      break;
    case 3: check_get(k); break;
    case 4: { /* a batch of b % 8 + 1 puts and deletes on consecutive keys */
      par_batch *bt;
      CHECK(par_batch_create(&bt) == PAR_OK, "batch");
      slot next[NKEYS];
      memcpy(next, model, sizeof next);
      for (uint32_t j = 0; j <= b % 8u; j++) {
        uint32_t kk = (k + j) % NKEYS;
        if ((b >> 3) & (1u << (j % 5))) {
          CHECK(par_batch_delete(bt, key, key_of(kk, key)) == PAR_OK, "batch delete");
          next[kk].present = 0;
        } else {
          uint32_t len = value_len((uint8_t)(b + j));
          fill(val, len, (uint8_t)(a + j));
          CHECK(par_batch_put(bt, key, key_of(kk, key), val, len) == PAR_OK, "batch put");
          next[kk] = (slot){1, len, (uint8_t)(a + j)};
        }
      }
      CHECK(par_write(reg, bt, b & 1 ? PAR_SYNC : 0) == PAR_OK, "write");
      par_batch_destroy(bt);
      memcpy(model, next, sizeof model);
      break;
    }
    case 5: check_scan(k, b & 1); break;
    case 6: CHECK((a & 1 ? par_compact(reg) : par_flush(reg)) == PAR_OK, "flush"); break;
    case 7: CHECK(par_sync(reg) == PAR_OK, "sync"); break;
    case 8: close_all(); open_all(); break; /* a clean close keeps every write */
    case 9: { /* a range delete of keys k .. k + b % 8 - 1 (none when b % 8 is 0) */
      char end[16];
      uint32_t w = b % 8u;
      CHECK(par_delete_range(reg, key, key_of(k, key), end, key_of(k + w, end), 0) == PAR_OK, "delete range");
      for (uint32_t j = k; j < k + w && j < NKEYS; j++) model[j].present = 0;
      break;
    }
    }
  }
  for (uint32_t k = 0; k < NKEYS; k++) check_get(k);
  check_scan(0, 0);
  check_scan(NKEYS - 1, 1);
  close_all();
  unlink(g_path);
  return 0;
}
