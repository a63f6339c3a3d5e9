/*-------------------------------------------------------------------------
 *
 * stats.h
 *		zk_lock_stats: cumulative statistics per lock (stats.c).  Backends
 *		count their own requests and holds; the postmaster keeps the table
 *		across a clean restart.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_STATS_H
#define ZKLOCK_STATS_H

#include "datatype/timestamp.h"

#include "rules/stats_record.h"

/* zklock.track_stats and zklock.stats_max */
extern bool zkl_track_stats;
extern int	zkl_stats_max;

extern void zkl_stats_define_settings(void);
extern Size zkl_stats_shmem_size(void);
extern void zkl_stats_shmem_request(void);
extern void zkl_stats_shmem_startup(void);

/* Whether this backend counts now (zklock.track_stats, shared memory). */
extern bool zkl_stats_enabled(void);

/*
 * Add one sample to the entry of lock name (its kind: 'x', 's', 'p'), made
 * if absent, at time now.
 */
extern void zkl_stats_count(const char *name, char kind, const zkl_stats_sample *sample,
							TimestampTz now);

#endif							/* ZKLOCK_STATS_H */
