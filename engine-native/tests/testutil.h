/*
 * testutil.h — small helpers shared by the C tests of the Parallax engine:
 * scratch directories, a seeded PRNG, a sorted reference map, assertion
 * macros that print the engine's error message, and a failure counter that
 * threads and forked children can use (cmocka asserts only work on the test's
 * main thread).
 */
#ifndef PARALLAX_TESTUTIL_H
#define PARALLAX_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <cmocka.h>

#include <parallax/parallax.h>

/* ---- assertions (main thread only) ------------------------------------- */

/* Fails the current cmocka test unless expr evaluates to the status expected. */
#define assert_par(expr, expected)                                                          \
  do {                                                                                      \
    int tu_rc_ = (int)(expr);                                                               \
    int tu_exp_ = (int)(expected);                                                          \
    if (tu_rc_ != tu_exp_) {                                                                \
      fail_msg("%s:%d: %s returned %d (%s), expected %d (%s); last error: %s", __FILE__,    \
               __LINE__, #expr, tu_rc_, par_strerror(tu_rc_), tu_exp_,                      \
               par_strerror(tu_exp_), par_last_error());                                    \
    }                                                                                       \
  } while (0)

#define assert_ok(expr) assert_par(expr, PAR_OK)

/* Fails unless expr returns one of two statuses. */
#define assert_par2(expr, exp1, exp2)                                                       \
  do {                                                                                      \
    int tu_rc_ = (int)(expr);                                                               \
    if (tu_rc_ != (int)(exp1) && tu_rc_ != (int)(exp2)) {                                   \
      fail_msg("%s:%d: %s returned %d (%s), expected %s or %s; last error: %s", __FILE__,   \
               __LINE__, #expr, tu_rc_, par_strerror(tu_rc_), par_strerror(exp1),           \
               par_strerror(exp2), par_last_error());                                       \
    }                                                                                       \
  } while (0)

/* ---- checks usable from any thread or a forked child -------------------- */

/* Number of TU_CHECK failures so far in this process. */
int tu_failures(void);
void tu_failf(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Records (and prints) a failure without aborting the thread. */
#define TU_CHECK(cond, fmt, ...)                                                            \
  do {                                                                                      \
    if (!(cond)) tu_failf(__FILE__, __LINE__, #cond, fmt, ##__VA_ARGS__);                  \
  } while (0)

/* ---- scratch directories ------------------------------------------------ */

/* Creates a fresh directory <base>/<name>.XXXXXX where base is $PAR_TEST_DIR
 * (or /tmp when unset). Returns a malloc'ed path; aborts on failure. */
char *tu_make_dir(const char *name);
/* Removes a directory tree (best effort). */
void tu_rm_rf(const char *path);
/* Copies file from to file to (replaced); aborts on failure. */
void tu_copy_file(const char *from, const char *to);
/* Returns a malloc'ed "<dir>/<file>". */
char *tu_path(const char *dir, const char *file);
/* Unsigned integer from the environment, or dflt when unset/invalid. */
uint64_t tu_env_u64(const char *name, uint64_t dflt);

void tu_sleep_ms(uint64_t ms);

/* ---- kill and power-cut loops ------------------------------------------- */

/* fork() for a test's child process: the child is killed (SIGKILL) when the
 * test process dies, so a test killed by its timeout leaves no writer behind
 * (one orphaned checkpoint writer once filled a disk). Output is flushed
 * first, so nothing buffered is written twice. Call it from the thread that
 * outlives the child: Linux signals the child when the forking thread ends. */
pid_t tu_fork(void);

/* The driver of one cycle of the crash loops (test_crash, test_nowal,
 * test_txn); each test keeps its own workload and checks. Forks a child that
 * runs child(arg, ready_fd): it writes one byte to ready_fd once it is
 * writing and never returns. The parent lets it run delay_ms more, kills it
 * with SIGKILL and, when journal is not NULL, cuts the power over path
 * (io/powerloss.h) with cut_seed, describing the cut in *cut (may be NULL
 * when journal is). Fails the test, naming seed and cycle, when the child
 * fails before it is ready or dies by itself. */
typedef void (*tu_child_fn)(void *arg, int ready_fd);
struct powerloss_stats;
void tu_kill_cycle(uint64_t seed, int cycle, tu_child_fn child, void *arg, uint64_t delay_ms,
                   const char *path, const char *journal, uint64_t cut_seed, struct powerloss_stats *cut);

/* ---- random numbers ----------------------------------------------------- */

/* A seed from $PAR_SEED, or from the clock; printed to stderr with the test
 * name so a failing run can be repeated. */
uint64_t tu_seed(const char *test_name);
/* splitmix64: fine statistical quality, trivially reproducible. */
uint64_t tu_rand(uint64_t *state);
/* Uniform in [0, n) (n > 0). */
uint64_t tu_rand_range(uint64_t *state, uint64_t n);
void tu_rand_bytes(uint64_t *state, void *buf, size_t n);
/* A stateless 64-bit hash mix of x. */
uint64_t tu_mix64(uint64_t x);

/* Fills buf[0..n) with bytes that are a pure function of (tag, n), so that a
 * value read back can be recomputed and compared. */
void tu_fill_pattern(void *buf, size_t n, uint64_t tag);
/* 1 when buf[0..n) equals tu_fill_pattern(_, n, tag). */
int tu_check_pattern(const void *buf, size_t n, uint64_t tag);

/* ---- reference map ------------------------------------------------------ */

/* Keys ordered as the engine orders them: bytewise unsigned, a proper prefix
 * before its extensions. */
int tu_key_cmp(const void *a, size_t alen, const void *b, size_t blen);

typedef struct tu_entry {
  uint8_t *key;
  size_t klen;
  uint8_t *val;
  size_t vlen;
} tu_entry;

/* A sorted array of entries: O(log n) lookups, O(n) inserts (plenty fast
 * for the key spaces of these tests). */
typedef struct tu_map {
  tu_entry *e;
  size_t n;
  size_t cap;
} tu_map;

void tu_map_init(tu_map *m);
void tu_map_free(tu_map *m);
void tu_map_clear(tu_map *m);
/* Deep copy of src into dst (dst is (re)initialised). */
void tu_map_copy(tu_map *dst, const tu_map *src);
void tu_map_put(tu_map *m, const void *k, size_t klen, const void *v, size_t vlen);
/* 1 when the key was present. */
int tu_map_del(tu_map *m, const void *k, size_t klen);
/* Deletes every key in [begin, end) (par_delete_range); returns how many. */
size_t tu_map_del_range(tu_map *m, const void *begin, size_t blen, const void *end, size_t elen);
const tu_entry *tu_map_get(const tu_map *m, const void *k, size_t klen);
/* Index of the first entry with key >= k (or > k when strict). */
size_t tu_map_lower_bound(const tu_map *m, const void *k, size_t klen, int strict);

/* ---- verification against the engine ----------------------------------- */

/* Compares the region (through snap, or the latest state when NULL) with m:
 * a full scan must return exactly m's entries in order, and par_get and
 * par_exists must agree with m for every key in m. On a mismatch writes a
 * description into err and returns -1; returns 0 when they agree. */
int tu_verify_region(par_region *r, const par_snapshot *snap, const tu_map *m, char *err,
                     size_t errlen);

/* Returns a printable (escaped, truncated) rendering of a key for messages;
 * uses a static buffer per thread. */
const char *tu_key_str(const void *k, size_t klen);

/* par_options with the defaults, then l0_size/growth_factor overridden. */
par_options tu_options(uint64_t l0_size, uint32_t growth_factor);

/* Bytes this process (all threads) has caused to be read from a device
 * (read_bytes of /proc/self/io); UINT64_MAX where the kernel does not
 * account them. */
uint64_t tu_device_read_bytes(void);

#endif
