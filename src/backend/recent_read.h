/*-------------------------------------------------------------------------
 *
 * recent_read.h
 *		Readings of a directory that the deadlock checks of a cluster's
 *		backends share (recent_read.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_BACKEND_RECENT_READ_H
#define ZKLOCK_BACKEND_RECENT_READ_H

#include "storage/dsm.h"

/* How old a check's first reading may be: half a deadlock_timeout (ms). */
#define ZKL_SHARED_READING_AGE(timeout_ms)	((int64) (timeout_ms) * 1000 / 2)

extern dsm_segment *zkl_fetch_recent(const char *name, const char *dir, int64 max_age_us);

#endif							/* ZKLOCK_BACKEND_RECENT_READ_H */
