#include "util/status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[512];

PAR_API const char *par_strerror(int status) {
  switch (status) {
  case PAR_OK: return "PAR_OK: success";
  case PAR_NOT_FOUND: return "PAR_NOT_FOUND: no such key";
  case PAR_EINVAL: return "PAR_EINVAL: invalid argument";
  case PAR_ETOOBIG: return "PAR_ETOOBIG: key, value or batch too large";
  case PAR_ENOSPC: return "PAR_ENOSPC: no space left in the volume";
  case PAR_EIO: return "PAR_EIO: I/O error";
  case PAR_ECORRUPT: return "PAR_ECORRUPT: corrupted data";
  case PAR_ENOTVOLUME: return "PAR_ENOTVOLUME: not a Parallax volume";
  case PAR_EEXIST: return "PAR_EEXIST: already exists";
  case PAR_ENOENT: return "PAR_ENOENT: no such region or file";
  case PAR_EBUSY: return "PAR_EBUSY: in use";
  case PAR_ENOMEM: return "PAR_ENOMEM: out of memory";
  case PAR_ELIMIT: return "PAR_ELIMIT: limit reached";
  case PAR_EFAILED: return "PAR_EFAILED: region failed after an I/O error";
  default: return "unknown status";
  }
}

PAR_API const char *par_last_error(void) { return last_error; }

static int verror(int code, int errnum, const char *fmt, va_list ap) {
  int n = vsnprintf(last_error, sizeof last_error, fmt, ap);
  if (errnum && n >= 0 && (size_t)n < sizeof last_error)
    snprintf(last_error + n, sizeof last_error - (size_t)n, ": %s", strerror(errnum));
  return code;
}

int par_error(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verror(code, 0, fmt, ap);
  va_end(ap);
  return code;
}

int par_error_errno(int code, int errnum, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verror(code, errnum, fmt, ap);
  va_end(ap);
  return code;
}

int par_status_from_errno(int errnum) {
  switch (errnum) {
  case ENOSPC:
  case EDQUOT:
  case EFBIG: return PAR_ENOSPC;
  case ENOMEM: return PAR_ENOMEM;
  case ENOENT: return PAR_ENOENT;
  default: return PAR_EIO;
  }
}
