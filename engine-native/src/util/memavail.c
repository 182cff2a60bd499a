#include "util/memavail.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* v1 reports "no limit" as the largest page-aligned signed 64-bit value. */
#define V1_UNLIMITED (1ull << 62)

uint64_t meminfo_available(const char *meminfo) {
  const char *p = strstr(meminfo, "MemAvailable:");
  if (!p) return 0;
  unsigned long long kib = strtoull(p + strlen("MemAvailable:"), NULL, 10);
  return (uint64_t)kib << 10;
}

/* Whether the comma-separated list [names, end) holds "memory". */
static int lists_memory(const char *names, const char *end) {
  for (const char *n = names; n < end;) {
    const char *comma = memchr(n, ',', (size_t)(end - n));
    size_t len = comma ? (size_t)(comma - n) : (size_t)(end - n);
    if (len == 6 && !memcmp(n, "memory", 6)) return 1;
    n += len + 1;
  }
  return 0;
}

int cgroup_memory_dir(const char *text, char *out, size_t cap, int *v2) {
  const char *base = NULL, *path = NULL;
  size_t plen = 0;
  /* Lines "id:controllers:path": v1's memory line wins over v2's "0::path". */
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    if (!end) end = line + strlen(line);
    const char *c1 = memchr(line, ':', (size_t)(end - line));
    const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
    if (c2 && lists_memory(c1 + 1, c2)) {
      base = "/sys/fs/cgroup/memory", path = c2 + 1, plen = (size_t)(end - c2 - 1);
      break;
    }
    if (c2 && c2 == c1 + 1 && c1 == line + 1 && line[0] == '0')
      base = "/sys/fs/cgroup", path = c2 + 1, plen = (size_t)(end - c2 - 1);
    line = *end ? end + 1 : end;
  }
  if (!base) return -1;
  *v2 = !strcmp(base, "/sys/fs/cgroup");
  int w = snprintf(out, cap, "%s%.*s", base, (int)plen, path);
  return w > 0 && (size_t)w < cap ? 0 : -1;
}

uint64_t cgroup_headroom(const char *limit, const char *usage) {
  if (!strncmp(limit, "max", 3)) return UINT64_MAX;
  unsigned long long l = strtoull(limit, NULL, 10), u = strtoull(usage, NULL, 10);
  if (l >= V1_UNLIMITED) return UINT64_MAX;
  return u >= l ? 0 : (uint64_t)(l - u);
}

/* The file's first bytes (up to cap - 1), NUL-terminated; -1 if unreadable. */
static int slurp(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, cap - 1, f);
  fclose(f);
  buf[n] = 0;
  return n ? 0 : -1;
}

uint64_t mem_available(void) {
  char buf[8192], dir[4096], path[4200], limit[64], usage[64];
  uint64_t avail = 0;
  if (!slurp("/proc/meminfo", buf, sizeof buf)) avail = meminfo_available(buf);
  int v2;
  if (slurp("/proc/self/cgroup", buf, sizeof buf) || cgroup_memory_dir(buf, dir, sizeof dir, &v2)) return avail;
  snprintf(path, sizeof path, "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
  if (slurp(path, limit, sizeof limit)) return avail;
  snprintf(path, sizeof path, "%s/%s", dir, v2 ? "memory.current" : "memory.usage_in_bytes");
  if (slurp(path, usage, sizeof usage)) return avail;
  uint64_t room = cgroup_headroom(limit, usage);
  if (room == UINT64_MAX) return avail;
  return avail && avail < room ? avail : room;
}
