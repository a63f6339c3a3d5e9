/*-------------------------------------------------------------------------
 *
 * request.h
 *		How a request crosses from a backend to the worker (request.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_REQUEST_H
#define ZKLOCK_REQUEST_H

#include "lib/stringinfo.h"
#include "storage/dsm.h"

#include "shared/shmem.h"
#include "shared/stats.h"

/* What a backend holds of a name; the value is its key letter. */
typedef enum zkl_mode
{
	ZKL_MODE_EXCLUSIVE = 'x',
	ZKL_MODE_SHARED = 's',
	ZKL_MODE_SEMAPHORE = 'p'	/* a permit */
} zkl_mode;

/*
 * The request being waited for, as zk_lock_stats will count it (stats.c):
 * whether it found another holder ahead, and when it was asked.  Counted
 * once, by how the wait ends; active is false when nothing is pending.
 */
typedef struct zkl_stats_request
{
	bool		active;
	bool		xact;
	bool		behind;
	char		kind;
	TimestampTz start;
	char		name[ZKL_MAX_NAME_LEN + 1];
} zkl_stats_request;

extern zkl_stats_request zkl_stats_req;

/* The request this backend is waiting for, if any. */
extern int	zkl_wait_slotno;
extern uint32 zkl_wait_generation;

/* A deadlock check is reading: its reads take reserve slots. */
extern bool zkl_checking;

extern void zkl_name_key(text *name, char *key);
extern const char *zkl_mode_name(zkl_mode mode);
extern void zkl_stats_begin(const char *name, zkl_mode mode, bool xact, TimestampTz start);
extern TimestampTz zkl_stats_end(zkl_stats_event event);

#define zkl_stats_forget()	((void) zkl_stats_end(ZKL_STATS_HOLD_END))

extern void zkl_random_uuid(char *out);
extern void zkl_json_field(StringInfo buf, const char *key, const char *value);

/* Room for gethostname's answer: POSIX's longest host name (255) and a NUL. */
#define ZKL_HOST_NAME_LEN	256

extern void zkl_host_name(char *host, size_t size);
extern bool zkl_release_at_once;
extern bool zkl_give_up(int slotno, uint32 generation, bool counts_as_cancel, bool only_waiting);
extern void zkl_cancel_wait(bool counts_as_cancel);
extern void zkl_publish_wait(void);
extern void zkl_end_publication(void);
extern long zkl_ms_until(TimestampTz deadline, TimestampTz now);
extern TimestampTz zkl_deadline_after(TimestampTz start, int64 ms);
extern int	zkl_backend_cap(void);
extern int	zkl_claim_slot(const char *name, const char *dir, TimestampTz start, bool reserve, bool quiet);
extern uint32 zkl_submit_slot(int slotno);
extern int	zkl_ask_worker(const char *name, const char *dir, zkl_slot_op op, const char *node, dsm_handle reply);
extern void zkl_refuse_parallel(void);
extern bool zkl_session_proven(int *timeout_ms, TimestampTz *until, int64 *session);
extern int	zkl_no_session_hint(void);
extern void zkl_fail_if_auth_refused(const char *name, bool refused);

#endif							/* ZKLOCK_REQUEST_H */
