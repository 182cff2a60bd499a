/* Error reporting: every failing entry point returns a par_status code and
 * leaves a message for the calling thread (par_last_error). */
#ifndef PAR_UTIL_STATUS_H
#define PAR_UTIL_STATUS_H

#include "parallax/parallax.h"

/* Records a formatted message for this thread and returns code. */
int par_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, with strerror(errnum) appended. */
int par_error_errno(int code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Maps an errno from a failed system call to a status (ENOSPC, EIO, ...). */
int par_status_from_errno(int errnum);

#endif
