/*-------------------------------------------------------------------------
 *
 * recent_read.h
 *		Whether a deadlock check may take a recent reading of a directory
 *		that another backend of the cluster made, wait for the one being
 *		made, or must read it itself (recent_read.c).  Plain C, no
 *		PostgreSQL, so that unit tests (test/unit) prove it without a
 *		server; backend/recent_read.c applies it under the lock that guards
 *		the shared entries.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_RECENT_READ_H
#define ZKLOCK_RECENT_READ_H

#include <stdbool.h>
#include <stdint.h>

/* One shared entry as the rule sees it; times in microseconds, any clock. */
typedef struct zkl_recent_view
{
	bool		same_dir;		/* it is of the directory asked for */
	bool		has_reading;	/* a reading is there */
	int64_t		read_at;		/* when that reading began */
	int64_t		filling_since;	/* when a backend began the next one; 0: none
								 * is under way */
	int64_t		used_at;		/* last taken or filled */
} zkl_recent_view;

typedef enum zkl_recent_verdict
{
	ZKL_RECENT_USE,				/* take the entry's reading */
	ZKL_RECENT_AWAIT,			/* wait for the reading under way, then ask
								 * again */
	ZKL_RECENT_FILL,			/* read afresh into the entry (*index), or
								 * alone when *index is -1 */
} zkl_recent_verdict;

extern zkl_recent_verdict zkl_recent_choose(const zkl_recent_view *entries, int n,
											int64_t now, int64_t max_age, int *index);

#endif							/* ZKLOCK_RECENT_READ_H */
