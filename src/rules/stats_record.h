/*-------------------------------------------------------------------------
 *
 * stats_record.h
 *		The pure parts of zk_lock_stats (stats_record.c): one lock's
 *		counters and how an event adds to them, which entries go when the
 *		table is full, and the record format of the file that keeps the
 *		statistics across a clean restart.  Plain C, no PostgreSQL, so that
 *		unit tests (test/unit) prove them without a server; stats.c, in the
 *		backends and the postmaster, acts around them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_STATS_RECORD_H
#define ZKLOCK_STATS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest lock name (ZKL_MAX_NAME_LEN of names/name_limits.h). */
#define ZKL_STATS_NAME_LEN	255

/* One lock's counters since the last reset; times in milliseconds. */
typedef struct zkl_stats_counters
{
	int64_t		acquired_session;	/* grants in session scope */
	int64_t		acquired_xact;	/* grants in transaction scope */
	int64_t		granted_at_once;	/* of them, with no holder ahead */
	int64_t		waited;			/* requests queued behind another holder,
								 * whatever their outcome */
	double		total_wait_time;	/* of the waited requests */
	double		max_wait_time;
	int64_t		holds;			/* holds ended, whose time is below */
	double		total_hold_time;
	double		max_hold_time;
	int64_t		timeouts;
	int64_t		cancels;
	int64_t		deadlocks;		/* 40P01 */
	int64_t		losses;			/* holds lost (ZK002), for any reason */
	int64_t		revocations;	/* holds asked to give the lock up */
	int64_t		hold_limit_expiries;	/* of the losses, holds given up past
										 * zklock.max_hold_time */
} zkl_stats_counters;

/* What happened to one request or hold of a lock (zkl_stats_add). */
typedef enum zkl_stats_event
{
	ZKL_STATS_GRANTED = 0,		/* a request was granted */
	ZKL_STATS_TIMEOUT,			/* gave up: its timeout ran out */
	ZKL_STATS_CANCEL,			/* gave up: cancelled, interrupted, an error */
	ZKL_STATS_DEADLOCK,			/* gave up: a deadlock's victim (40P01) */
	ZKL_STATS_HOLD_END			/* a hold ended (see zkl_stats_end_kind) */
} zkl_stats_event;

/* How a hold ended, besides its time. */
typedef enum zkl_stats_end_kind
{
	ZKL_STATS_RELEASED = 0,
	ZKL_STATS_LOST,				/* ZK002: node vanished, session ended, or
								 * revoked under zklock.on_revoke = cancel */
	ZKL_STATS_HOLD_LIMIT		/* given up past zklock.max_hold_time */
} zkl_stats_end_kind;

/*
 * One event: a request (granted or given up) that waited wait_ms behind
 * another holder when behind, in scope xact; or a hold that lasted hold_ms
 * and ended as end says, revoked when it was asked to give the lock up.
 */
typedef struct zkl_stats_sample
{
	zkl_stats_event event;
	bool		xact;
	bool		behind;
	double		wait_ms;
	double		hold_ms;
	zkl_stats_end_kind end;
	bool		revoked;
} zkl_stats_sample;

extern void zkl_stats_add(zkl_stats_counters *c, const zkl_stats_sample *s);
extern int64_t zkl_stats_usage(const zkl_stats_counters *c);

/*
 * Which entries go when the table is full: the nvictims least used (by
 * usage; the least recently used first among equals), written to victims
 * as indexes into the arrays; returns how many were chosen.
 */
extern int	zkl_stats_choose_victims(const int64_t *usage, const int64_t *last_used, int n,
									 int nvictims, int *victims);

/* How many go at once: 5% of the table, at least one (as pg_stat_statements). */
extern int	zkl_stats_victim_count(int max_entries);

/*
 * The file: a header, then one record per entry.  Every field is written
 * in the byte order of the machine, which is the only one that reads it
 * (the file lives in the data directory, beside its server).
 */
#define ZKL_STATS_FILE_MAGIC	0x5a4b5354	/* "ZKST" */
#define ZKL_STATS_FILE_FORMAT	1

typedef struct zkl_stats_file_header
{
	uint32_t	magic;
	uint32_t	format;
	int64_t		reset_time;		/* TimestampTz of the last reset */
	int64_t		evicted;
	int32_t		nentries;
} zkl_stats_file_header;

typedef struct zkl_stats_file_record
{
	char		kind;			/* 'x', 's' or 'p' (zkl_mode) */
	int32_t		encoding;		/* of the database that counted first */
	int32_t		name_len;
	char		name[ZKL_STATS_NAME_LEN + 1];	/* NUL-terminated */
	int64_t		last_used;
	zkl_stats_counters counters;
} zkl_stats_file_record;

/*
 * Read the file's contents: false, with *error saying why, unless buf of
 * len bytes is a whole file of this format.  On success *header is filled
 * in and records[i] (room for max_records) each entry, at most max_records
 * of them (*nrecords); the rest is left out.
 */
extern bool zkl_stats_parse(const char *buf, size_t len, zkl_stats_file_header *header,
							zkl_stats_file_record *records, int max_records, int *nrecords,
							const char **error);

/* The size of a file of nrecords, and its bytes written into buf. */
extern size_t zkl_stats_file_size(int nrecords);
extern void zkl_stats_format(char *buf, const zkl_stats_file_header *header,
							 const zkl_stats_file_record *records, int nrecords);

#endif							/* ZKLOCK_STATS_RECORD_H */
