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

extern dsm_segment *zkl_fetch_recent(const char *name, const char *dir, int64 max_age_us);

#endif							/* ZKLOCK_BACKEND_RECENT_READ_H */
