/*
 * testutil.c — implementation of the shared test helpers (see testutil.h).
 * Nothing here knows the engine's internals; it only uses the public API.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io/powerloss.h"

/* ---- failures ------------------------------------------------------------ */

static atomic_int g_failures;

int tu_failures(void) { return atomic_load(&g_failures); }

void tu_failf(const char *file, int line, const char *cond, const char *fmt, ...) {
  /* Print only the first few failures in full: a broken engine can produce
   * millions of them. */
  int n = atomic_fetch_add(&g_failures, 1);
  if (n >= 20) {
    if (n == 20) fprintf(stderr, "(further check failures suppressed)\n");
    return;
  }
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "CHECK FAILED %s:%d: %s: %s (last error: %s)\n", file, line, cond, msg,
          par_last_error());
  fflush(stderr);
}

/* ---- directories ----------------------------------------------------------- */

static void mkdir_p(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p == '/') {
      *p = 0;
      (void)mkdir(buf, 0755);
      *p = '/';
    }
  }
  (void)mkdir(buf, 0755);
}

char *tu_make_dir(const char *name) {
  const char *base = getenv("PAR_TEST_DIR");
  if (base == NULL || *base == 0) base = "/tmp";
  mkdir_p(base);
  char *path = NULL;
  if (asprintf(&path, "%s/%s.XXXXXX", base, name) < 0) abort();
  if (mkdtemp(path) == NULL) {
    fprintf(stderr, "mkdtemp(%s): %s\n", path, strerror(errno));
    abort();
  }
  return path;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  (void)remove(path);
  return 0;
}

void tu_rm_rf(const char *path) {
  if (path == NULL) return;
  (void)nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void tu_copy_file(const char *from, const char *to) {
  int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || out < 0) abort();
  ssize_t n;
  while ((n = copy_file_range(in, NULL, out, NULL, 1u << 30, 0)) > 0) {
  }
  if (n < 0) abort();
  close(in);
  close(out);
}

char *tu_path(const char *dir, const char *file) {
  char *p = NULL;
  if (asprintf(&p, "%s/%s", dir, file) < 0) abort();
  return p;
}

uint64_t tu_env_u64(const char *name, uint64_t dflt) {
  const char *s = getenv(name);
  if (s == NULL || *s == 0) return dflt;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno != 0 || end == s || *end != 0) return dflt;
  return (uint64_t)v;
}

/* ---- random ------------------------------------------------------------------ */

uint64_t tu_mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t tu_seed(const char *test_name) {
  uint64_t seed;
  const char *s = getenv("PAR_SEED");
  if (s != NULL && *s != 0) {
    seed = strtoull(s, NULL, 0);
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    seed = tu_mix64(t ^ ((uint64_t)getpid() << 32)) % 1000000000ull;
  }
  fprintf(stderr, "[%s] seed %llu (repeat with PAR_SEED=%llu)\n", test_name,
          (unsigned long long)seed, (unsigned long long)seed);
  fflush(stderr);
  return seed;
}

uint64_t tu_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t tu_rand_range(uint64_t *state, uint64_t n) { return n == 0 ? 0 : tu_rand(state) % n; }

void tu_rand_bytes(uint64_t *state, void *buf, size_t n) {
  uint8_t *p = buf;
  while (n >= 8) {
    uint64_t x = tu_rand(state);
    memcpy(p, &x, 8);
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t x = tu_rand(state);
    memcpy(p, &x, n);
  }
}

void tu_fill_pattern(void *buf, size_t n, uint64_t tag) {
  uint64_t st = tu_mix64(tag ^ ((uint64_t)n << 40));
  tu_rand_bytes(&st, buf, n);
}

int tu_check_pattern(const void *buf, size_t n, uint64_t tag) {
  uint64_t st = tu_mix64(tag ^ ((uint64_t)n << 40));
  const uint8_t *p = buf;
  while (n > 0) {
    uint64_t x = tu_rand(&st);
    size_t c = n < 8 ? n : 8;
    if (memcmp(p, &x, c) != 0) return 0;
    p += c;
    n -= c;
  }
  return 1;
}

/* ---- reference map --------------------------------------------------------- */

int tu_key_cmp(const void *a, size_t alen, const void *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  if (c != 0) return c < 0 ? -1 : 1;
  return alen < blen ? -1 : (alen > blen ? 1 : 0);
}

void tu_map_init(tu_map *m) { memset(m, 0, sizeof *m); }

void tu_map_clear(tu_map *m) {
  for (size_t i = 0; i < m->n; i++) {
    free(m->e[i].key);
    free(m->e[i].val);
  }
  m->n = 0;
}

void tu_map_free(tu_map *m) {
  tu_map_clear(m);
  free(m->e);
  tu_map_init(m);
}

static uint8_t *dup_bytes(const void *p, size_t n) {
  uint8_t *d = malloc(n ? n : 1);
  if (d == NULL) abort();
  if (n) memcpy(d, p, n);
  return d;
}

void tu_map_copy(tu_map *dst, const tu_map *src) {
  tu_map_init(dst);
  dst->cap = src->n ? src->n : 1;
  dst->e = malloc(dst->cap * sizeof(tu_entry));
  if (dst->e == NULL) abort();
  for (size_t i = 0; i < src->n; i++) {
    dst->e[i].key = dup_bytes(src->e[i].key, src->e[i].klen);
    dst->e[i].klen = src->e[i].klen;
    dst->e[i].val = dup_bytes(src->e[i].val, src->e[i].vlen);
    dst->e[i].vlen = src->e[i].vlen;
  }
  dst->n = src->n;
}

size_t tu_map_lower_bound(const tu_map *m, const void *k, size_t klen, int strict) {
  size_t lo = 0, hi = m->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = tu_key_cmp(m->e[mid].key, m->e[mid].klen, k, klen);
    if (c < 0 || (strict && c == 0))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

size_t tu_map_del_range(tu_map *m, const void *begin, size_t blen, const void *end, size_t elen) {
  size_t i = tu_map_lower_bound(m, begin, blen, 0), j = i;
  while (j < m->n && tu_key_cmp(m->e[j].key, m->e[j].klen, end, elen) < 0) {
    free(m->e[j].key);
    free(m->e[j].val);
    j++;
  }
  if (j > i) memmove(m->e + i, m->e + j, (m->n - j) * sizeof *m->e); /* m->e may be NULL when empty */
  m->n -= j - i;
  return j - i;
}

const tu_entry *tu_map_get(const tu_map *m, const void *k, size_t klen) {
  size_t i = tu_map_lower_bound(m, k, klen, 0);
  if (i < m->n && tu_key_cmp(m->e[i].key, m->e[i].klen, k, klen) == 0) return &m->e[i];
  return NULL;
}

void tu_map_put(tu_map *m, const void *k, size_t klen, const void *v, size_t vlen) {
  size_t i = tu_map_lower_bound(m, k, klen, 0);
  if (i < m->n && tu_key_cmp(m->e[i].key, m->e[i].klen, k, klen) == 0) {
    free(m->e[i].val);
    m->e[i].val = dup_bytes(v, vlen);
    m->e[i].vlen = vlen;
    return;
  }
  if (m->n == m->cap) {
    m->cap = m->cap ? m->cap * 2 : 64;
    m->e = realloc(m->e, m->cap * sizeof(tu_entry));
    if (m->e == NULL) abort();
  }
  memmove(&m->e[i + 1], &m->e[i], (m->n - i) * sizeof(tu_entry));
  m->e[i].key = dup_bytes(k, klen);
  m->e[i].klen = klen;
  m->e[i].val = dup_bytes(v, vlen);
  m->e[i].vlen = vlen;
  m->n++;
}

int tu_map_del(tu_map *m, const void *k, size_t klen) {
  size_t i = tu_map_lower_bound(m, k, klen, 0);
  if (i < m->n && tu_key_cmp(m->e[i].key, m->e[i].klen, k, klen) == 0) {
    free(m->e[i].key);
    free(m->e[i].val);
    memmove(&m->e[i], &m->e[i + 1], (m->n - i - 1) * sizeof(tu_entry));
    m->n--;
    return 1;
  }
  return 0;
}

/* ---- verification ------------------------------------------------------------ */

const char *tu_key_str(const void *k, size_t klen) {
  static __thread char buf[160];
  const uint8_t *p = k;
  size_t o = 0, i = 0;
  for (; i < klen && o + 8 < sizeof buf - 24; i++) {
    if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
      buf[o++] = (char)p[i];
    else
      o += (size_t)snprintf(buf + o, sizeof buf - o, "\\x%02x", p[i]);
  }
  if (i < klen) o += (size_t)snprintf(buf + o, sizeof buf - o, "...");
  buf[o] = 0;
  char *tail = buf + o;
  snprintf(tail, sizeof buf - o, "(%zu)", klen);
  return buf;
}

/* The whole region backwards, from PAR_SEEK_LAST to the first key. */
static int verify_reverse(par_region *r, const par_snapshot *snap, const tu_map *m, char *err,
                          size_t errlen) {
  par_scanner *sc = NULL;
  int rc = par_scanner_open(r, snap, &sc);
  if (rc == PAR_OK) rc = par_scanner_seek(sc, NULL, 0, PAR_SEEK_LAST);
  size_t i = m->n;
  while (rc == PAR_OK && par_scanner_valid(sc)) {
    const void *k, *v;
    size_t kl, vl;
    if ((rc = par_scanner_key(sc, &k, &kl)) != PAR_OK || (rc = par_scanner_value(sc, &v, &vl)) != PAR_OK)
      break;
    if (i == 0) {
      snprintf(err, errlen, "reverse scan returned extra key %s before the first", tu_key_str(k, kl));
      par_scanner_close(sc);
      return -1;
    }
    const tu_entry *e = &m->e[--i];
    if (tu_key_cmp(k, kl, e->key, e->klen) != 0 || vl != e->vlen || (vl && memcmp(v, e->val, vl) != 0)) {
      char want[160];
      snprintf(want, sizeof want, "%s", tu_key_str(e->key, e->klen));
      snprintf(err, errlen, "reverse scan entry %zu: key %s (%zu-byte value), expected %s (%zu bytes)",
               i, tu_key_str(k, kl), vl, want, e->vlen);
      par_scanner_close(sc);
      return -1;
    }
    rc = par_scanner_prev(sc);
  }
  par_scanner_close(sc);
  if (rc != PAR_OK) {
    snprintf(err, errlen, "reverse scan: %s (%s)", par_strerror(rc), par_last_error());
    return -1;
  }
  if (i != 0) {
    snprintf(err, errlen, "reverse scan ended %zu entries early, before %s", i,
             tu_key_str(m->e[i - 1].key, m->e[i - 1].klen));
    return -1;
  }
  return 0;
}

int tu_verify_region(par_region *r, const par_snapshot *snap, const tu_map *m, char *err,
                     size_t errlen) {
  par_scanner *sc = NULL;
  int rc = par_scanner_open(r, snap, &sc);
  if (rc != PAR_OK) {
    snprintf(err, errlen, "par_scanner_open: %s (%s)", par_strerror(rc), par_last_error());
    return -1;
  }
  rc = par_scanner_seek(sc, "", 0, PAR_SEEK_FIRST);
  if (rc != PAR_OK) {
    snprintf(err, errlen, "par_scanner_seek FIRST: %s (%s)", par_strerror(rc),
             par_last_error());
    par_scanner_close(sc);
    return -1;
  }
  size_t i = 0;
  int result = 0;
  while (par_scanner_valid(sc)) {
    const void *k, *v;
    size_t kl, vl;
    if ((rc = par_scanner_key(sc, &k, &kl)) != PAR_OK ||
        (rc = par_scanner_value(sc, &v, &vl)) != PAR_OK) {
      snprintf(err, errlen, "scanner key/value at entry %zu: %s", i, par_strerror(rc));
      result = -1;
      break;
    }
    if (i >= m->n) {
      snprintf(err, errlen, "scan returned extra key %s after %zu expected entries",
               tu_key_str(k, kl), m->n);
      result = -1;
      break;
    }
    const tu_entry *e = &m->e[i];
    if (tu_key_cmp(k, kl, e->key, e->klen) != 0) {
      char want[160];
      snprintf(want, sizeof want, "%s", tu_key_str(e->key, e->klen));
      snprintf(err, errlen, "scan entry %zu: key %s, expected %s", i, tu_key_str(k, kl), want);
      result = -1;
      break;
    }
    if (vl != e->vlen || (vl && memcmp(v, e->val, vl) != 0)) {
      snprintf(err, errlen, "scan entry %zu key %s: value of %zu bytes differs (expected %zu)",
               i, tu_key_str(k, kl), vl, e->vlen);
      result = -1;
      break;
    }
    i++;
    rc = par_scanner_next(sc);
    if (rc != PAR_OK) {
      snprintf(err, errlen, "par_scanner_next after entry %zu: %s (%s)", i, par_strerror(rc),
               par_last_error());
      result = -1;
      break;
    }
  }
  par_scanner_close(sc);
  if (result == 0 && i != m->n) {
    snprintf(err, errlen, "scan returned %zu entries, expected %zu (first missing %s)", i, m->n,
             tu_key_str(m->e[i].key, m->e[i].klen));
    return -1;
  }
  if (result != 0) return result;
  if (verify_reverse(r, snap, m, err, errlen) != 0) return -1;

  size_t cap = PAR_MAX_VALUE_SIZE + 1;
  uint8_t *buf = malloc(cap);
  if (buf == NULL) abort();
  for (i = 0; i < m->n; i++) {
    const tu_entry *e = &m->e[i];
    size_t vl = (size_t)-1;
    rc = par_get(r, snap, e->key, e->klen, buf, cap, &vl);
    if (rc != PAR_OK) {
      snprintf(err, errlen, "par_get(%s): %s (%s)", tu_key_str(e->key, e->klen),
               par_strerror(rc), par_last_error());
      result = -1;
      break;
    }
    if (vl != e->vlen || (vl && memcmp(buf, e->val, vl) != 0)) {
      snprintf(err, errlen, "par_get(%s): value of %zu bytes differs (expected %zu)",
               tu_key_str(e->key, e->klen), vl, e->vlen);
      result = -1;
      break;
    }
    rc = par_exists(r, snap, e->key, e->klen);
    if (rc != PAR_OK) {
      snprintf(err, errlen, "par_exists(%s): %s", tu_key_str(e->key, e->klen),
               par_strerror(rc));
      result = -1;
      break;
    }
  }
  free(buf);
  return result;
}

par_options tu_options(uint64_t l0_size, uint32_t growth_factor) {
  par_options o;
  par_options_init(&o);
  if (l0_size) o.l0_size = l0_size;
  if (growth_factor) o.growth_factor = growth_factor;
  return o;
}

uint64_t tu_device_read_bytes(void) {
  FILE *fp = fopen("/proc/self/io", "r");
  if (!fp) return UINT64_MAX;
  char line[128];
  unsigned long long v = 0;
  int found = 0;
  while (!found && fgets(line, sizeof line, fp)) found = sscanf(line, "read_bytes: %llu", &v) == 1;
  fclose(fp);
  return found ? v : UINT64_MAX;
}

void tu_sleep_ms(uint64_t ms) {
  struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

pid_t tu_fork(void) {
  fflush(stdout);
  fflush(stderr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) _exit(6);
    if (getppid() != parent) _exit(6); /* the parent died before prctl */
  }
  return pid;
}

void tu_kill_cycle(uint64_t seed, int cycle, tu_child_fn child, void *arg, uint64_t delay_ms,
                   const char *path, const char *journal, uint64_t cut_seed, powerloss_stats *cut) {
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  pid_t pid = tu_fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(ready[0]);
    child(arg, ready[1]);
    _exit(5); /* a child never returns */
  }
  close(ready[1]);
  char c;
  ssize_t n = read(ready[0], &c, 1);
  close(ready[0]);
  int status = 0;
  if (n != 1) {
    waitpid(pid, &status, 0);
    fail_msg("seed %llu cycle %d: child failed before it was ready (status 0x%x)", (unsigned long long)seed,
             cycle, status);
  }
  tu_sleep_ms(delay_ms);
  if (waitpid(pid, &status, WNOHANG) == pid)
    fail_msg("seed %llu cycle %d: child died by itself (status 0x%x)", (unsigned long long)seed, cycle, status);
  assert_int_equal(kill(pid, SIGKILL), 0);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  if (journal) {
    int e = powerloss_crash(path, journal, cut_seed, cut);
    if (e) fail_msg("seed %llu cycle %d: power cut: %s", (unsigned long long)seed, cycle, strerror(e));
  }
}
