/*-------------------------------------------------------------------------
 *
 * request.c
 *		Where a request crosses from a backend to the worker, in the
 *		backend: claim a shared slot (within the quotas of slot_quota.c),
 *		fill it, queue it and wake the worker (zkl_submit_slot), wait on
 *		the latch for the worker's answer, and give the slot back.  Used
 *		for locks (acquire.c) and for the reads and revocations of
 *		contenders.c and waits_graph.c (zkl_ask_worker); also what a wait
 *		publishes for deadlock detection (zkl_publish_wait), and the proof
 *		that the session lives (zkl_session_proven).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "access/xact.h"
#include "common/int.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/json.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "backend/error_codes.h"
#include "backend/request.h"
#include "names/encode.h"
#include "pg_compat.h"
#include "rules/auth_value.h"
#include "rules/clock.h"
#include "rules/slot_quota.h"
#include "shared/stats.h"
#include "shared/wait_events.h"

/* A deadlock check is reading: its reads take reserve slots. */
bool		zkl_checking = false;

/* The request this backend is waiting for, if any. */
int			zkl_wait_slotno = -1;
uint32		zkl_wait_generation = 0;

/* A read or revocation asked of the worker meanwhile (zkl_ask_worker). */
static int	zkl_ask_slotno = -1;

static uint32 zkl_ask_generation = 0;

/* The publication of the wait, once it lasted deadlock_timeout. */
static int	zkl_pub_slotno = -1;

static uint32 zkl_pub_generation = 0;

static int64 zkl_pub_token = 0; /* czxid of the request it names */

/* The request being waited for, as zk_lock_stats will count it. */
zkl_stats_request zkl_stats_req;

/* Copy a text lock name into a hash key, validating it. */
void
zkl_name_key(text *name, char *key)
{
	int			len = VARSIZE_ANY_EXHDR(name);
	const char *data = VARDATA_ANY(name);

	/* zkl_encode_name reports empty and over-long names. */
	pfree(zkl_encode_name(data, len));
	memcpy(key, data, len);
	key[len] = '\0';
}

const char *
zkl_mode_name(zkl_mode mode)
{
	return mode == ZKL_MODE_SHARED ? "shared" : mode == ZKL_MODE_SEMAPHORE ? "semaphore" : "exclusive";
}

/* A request was posted: its outcome will be counted (zkl_stats_end). */
void
zkl_stats_begin(const char *name, zkl_mode mode, bool xact, TimestampTz start)
{
	zkl_stats_req.active = zkl_stats_enabled();
	if (!zkl_stats_req.active)
		return;
	zkl_stats_req.xact = xact;
	zkl_stats_req.behind = false;
	zkl_stats_req.kind = (char) mode;
	zkl_stats_req.start = start;
	strlcpy(zkl_stats_req.name, name, sizeof(zkl_stats_req.name));
}

/*
 * The pending request ended as event says: count it, with the time it
 * waited if it was behind another holder.  Returns the time it ended, 0
 * when nothing was counted.  ZKL_STATS_HOLD_END forgets it uncounted (a
 * try that found a holder, a failure of ZooKeeper's).
 */
TimestampTz
zkl_stats_end(zkl_stats_event event)
{
	zkl_stats_sample sample = {0};
	TimestampTz now;

	if (!zkl_stats_req.active)
		return 0;
	zkl_stats_req.active = false;
	if (event == ZKL_STATS_HOLD_END)
		return 0;
	now = GetCurrentTimestamp();
	sample.event = event;
	sample.xact = zkl_stats_req.xact;
	sample.behind = zkl_stats_req.behind;
	sample.wait_ms = Max(now - zkl_stats_req.start, 0) / 1000.0;
	zkl_stats_count(zkl_stats_req.name, zkl_stats_req.kind, &sample, now);
	return now;
}

void
zkl_random_uuid(char *out)
{
	uint8		b[UUID_LEN];

	if (!pg_strong_random(b, sizeof(b)))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate random values")));
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(out, ZKL_UUID_LEN + 1,
			 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
			 b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

void
zkl_json_field(StringInfo buf, const char *key, const char *value)
{
	if (buf->len > 1)
		appendStringInfoChar(buf, ',');
	escape_json(buf, key);
	appendStringInfoChar(buf, ':');
	zkl_json_ascii(buf, value ? value : "");
}

/* This machine's name as the descriptions give it; empty if unknown. */
void
zkl_host_name(char *host, size_t size)
{
	if (gethostname(host, size) != 0)
		host[0] = '\0';
	host[size - 1] = '\0';
}

/*
 * Whether what this backend gives up now is to be deleted at once, not kept
 * back a moment for a multi's company (write_batch.c): set around
 * zk_lock_release_all and at the backend's exit.
 */
bool		zkl_release_at_once = false;

/*
 * Ask the worker to give up a slot: cancel a wait or release a hold; with
 * only_waiting, only a request still waiting, in one step with the test.
 * Returns whether it was given up.
 */
bool
zkl_give_up(int slotno, uint32 generation, bool counts_as_cancel, bool only_waiting)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];
	bool		given_up = false;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (slot->generation == generation && slot->pid == MyProcPid &&
		(!only_waiting || slot->state == ZKL_SLOT_WAITING))
	{
		given_up = true;
		switch (slot->state)
		{
			case ZKL_SLOT_WAITING:
			case ZKL_SLOT_HELD:
				if (slot->state == ZKL_SLOT_WAITING && counts_as_cancel)
					zkl_count(cancels);
				/* From here on the view shows it leaving (in its last scope). */
				slot->state = ZKL_SLOT_RELEASING;
				slot->wanted = false;
				slot->release_now = zkl_release_at_once;
				zkl_queue_push(slotno);
				break;
			case ZKL_SLOT_LOST:
				/* Taken away, its node's delete refused: the worker's. */
				if (slot->stranded)
				{
					slot->wanted = false;
					break;
				}
				/* FALLTHROUGH */
			case ZKL_SLOT_FAILED:
				/* Nothing exists in ZooKeeper; the slot is ours to free. */
				zkl_slot_clear(slot);
				break;
			default:
				/* BUSY and RELEASING are already on their way out. */
				break;
		}
	}
	LWLockRelease(zkl_shared->lock);
	zkl_wake_worker();
	return given_up;
}

/*
 * Give up the request being waited for; harmless when there is none.
 * Interrupts and errors count as cancels, timeouts have their own counter.
 */
void
zkl_cancel_wait(bool counts_as_cancel)
{
	zkl_end_publication();
	if (zkl_ask_slotno >= 0)
		(void) zkl_give_up(zkl_ask_slotno, zkl_ask_generation, false, false);
	zkl_ask_slotno = -1;
	if (zkl_wait_slotno < 0)
	{
		zkl_stats_forget();
		return;
	}
	(void) zkl_stats_end(counts_as_cancel ? ZKL_STATS_CANCEL : ZKL_STATS_HOLD_END);
	(void) zkl_give_up(zkl_wait_slotno, zkl_wait_generation, counts_as_cancel, false);
	zkl_wait_slotno = -1;
}

/*
 * Publish the request being waited for (zkl_wait_slotno), so that deadlock
 * detectors of every cluster find what this backend waits for: the worker
 * writes an ephemeral node under zklock.root's ".waits" (ZKL_OP_PUBLISH),
 * which lasts until zkl_end_publication.  A publication that names an
 * older node of the request (the session changed) is replaced.  Nothing
 * waits for the worker: its requests for this backend go out in order, so
 * the publication precedes every read the detection asks for next.
 */
void
zkl_publish_wait(void)
{
	zkl_slot   *wait;
	zkl_slot   *slot;
	int			slotno;
	int64		token;
	char	   *dir;

	if (zkl_wait_slotno < 0)
		return;
	wait = &zkl_shared->slots[zkl_wait_slotno];
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	token = wait->generation == zkl_wait_generation && wait->state == ZKL_SLOT_WAITING &&
		wait->node[0] != '\0' ? wait->token : 0;
	LWLockRelease(zkl_shared->lock);
	if (token == 0 || (zkl_pub_slotno >= 0 && token == zkl_pub_token))
		return;

	zkl_end_publication();
	dir = zkl_waits_dir();
	slotno = zkl_claim_slot(wait->name, dir, GetCurrentTimestamp(), true, true);
	pfree(dir);
	/* No reserve slot left: unpublished, a leaf to others until next time. */
	if (slotno < 0)
		return;
	slot = &zkl_shared->slots[slotno];
	slot->inspect = true;
	slot->op = ZKL_OP_PUBLISH;
	/* Published beside the wait: how often this backend looks (waits_for.c). */
	snprintf(slot->data, sizeof(slot->data), "%d", DeadlockTimeout);
	slot->sibling_slotno = zkl_wait_slotno;
	slot->sibling_generation = zkl_wait_generation;
	zkl_pub_slotno = slotno;
	zkl_pub_generation = slot->generation;
	zkl_pub_token = token;
	zkl_queue_push(slotno);
	LWLockRelease(zkl_shared->lock);
	zkl_wake_worker();
}

/* The wait is over: its publication, if any, is deleted. */
void
zkl_end_publication(void)
{
	if (zkl_pub_slotno < 0)
		return;
	(void) zkl_give_up(zkl_pub_slotno, zkl_pub_generation, false, false);
	zkl_pub_slotno = -1;
}

/*
 * Milliseconds from now to deadline, rounded up, for WaitLatch: never more
 * than INT_MAX, which is what the kernel's wait takes.
 */
long
zkl_ms_until(TimestampTz deadline, TimestampTz now)
{
	int64		ms = (deadline - now + 999) / 1000;

	return (long) Min(Max(ms, 0), PG_INT32_MAX);
}

/*
 * start plus ms, or 0 (no deadline) when that lies beyond the last
 * timestamp there is: such a timeout cannot expire, it means "for ever".
 */
TimestampTz
zkl_deadline_after(TimestampTz start, int64 ms)
{
	int64		us;
	TimestampTz deadline;

	if (pg_mul_s64_overflow(ms, INT64CONST(1000), &us) ||
		pg_add_s64_overflow(start, us, &deadline) ||
		!IS_VALID_TIMESTAMP(deadline))
		return 0;
	return deadline;
}

/* zklock.max_locks_per_backend; by default it grows with zklock.max_locks. */
int
zkl_backend_cap(void)
{
	return zkl_backend_cap_of(zkl_max_locks_per_backend, zkl_max_locks);
}

/*
 * No slot for this claim: say which limit refused it (slot_quota.c), with
 * the counts read in the same critical section, and how to get room.
 */
pg_noreturn static void
zkl_report_no_slot(bool reserve, zkl_claim_verdict verdict, Oid role, int role_cap, int used)
{
	if (verdict == ZKL_CLAIM_ROLE_FULL)
	{
		char	   *rolename = GetUserNameFromId(role, true);

		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many zklock lock slots in use by role \"%s\"",
						rolename ? rolename : "?"),
				 errdetail("The sessions of this role use %d of the %d slots that zklock.max_locks_per_role allows it (of %d in the cluster), counting locks held, waited for, and still being given up.",
						   used, role_cap, zkl_shared->nlock_slots),
				 errhint("Release some locks, or have a superuser raise the limit for this role with ALTER ROLE ... SET zklock.max_locks_per_role.")));
	}
	if (verdict == ZKL_CLAIM_BACKEND_FULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many zklock reads in progress in this session"),
				 errdetail("This session uses all %d of its slots for reads, revocations and deadlock detection, some perhaps for reads it gave up that the worker is still finishing.",
						   ZKL_RESERVE_PER_BACKEND),
				 errhint("Try again once ZooKeeper has answered the reads given up.")));
	if (reserve)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("out of zklock reserve slots"),
				 errdetail("All %d slots for reads, revocations and deadlock detection of this cluster are in use, some perhaps by sessions that ended while the worker was still finishing their reads.",
						   zkl_shared->nslots - zkl_shared->nlock_slots),
				 errhint("Try again once ZooKeeper has answered those reads.")));
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("out of zklock lock slots"),
			 errdetail("All %d slots of this cluster are in use.", zkl_shared->nlock_slots),
			 errhint("Raise zklock.max_locks (this requires a restart), or lower zklock.max_locks_per_role so that each role leaves more to the others.")));
}

/*
 * Find a free slot and fill in what every request has.  Returns with
 * zkl_shared->lock held exclusively; the caller adds its own fields and
 * calls zkl_submit_slot.  A lock slot counts against the session's role
 * (zklock.max_locks_per_role); a reserve slot (reads, revocations,
 * deadlock detection) is taken from the reserve, within this backend's
 * share of it.  A refused claim is an error, but for a quiet one (deadlock
 * detection's), which gets -1, without the lock.
 *
 * From the moment a slot is posted this backend must give it back on every
 * way out: the caller has armed the exit hook and the transaction callbacks
 * first, by creating the backend's table of holds (zkl_local_init,
 * locks.c), which they look at.  Whoever posts through zkl_ask_worker or
 * acquires does so: contenders.c and acquire.c.
 */
int
zkl_claim_slot(const char *name, const char *dir, TimestampTz start, bool reserve, bool quiet)
{
	zkl_slot   *slot;
	int			slotno;
	int			verdict;
	int			used;

	/*
	 * The role whose share a lock slot takes is the session's, the one ALTER
	 * ROLE ... SET gave its settings: SET ROLE and SECURITY DEFINER functions
	 * do not move a session to another share.
	 */
	Oid			role = GetSessionUserId();
	bool		exempt = superuser_arg(role);
	int			role_cap = zkl_role_cap_of(zkl_max_locks_per_role, zkl_max_locks);

	/* Nothing is cut to fit a slot (ZKL_MAX_DIR_LEN leaves the room). */
	if (strlen(name) >= sizeof(slot->name) || strlen(dir) >= sizeof(slot->dir))
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("ZooKeeper path \"%s\" is too long", dir),
				 errdetail("A lock's directory may have at most %d bytes.",
						   (int) sizeof(slot->dir) - 1)));

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	slotno = zkl_slot_take(reserve, role, exempt, role_cap, &verdict, &used);
	if (slotno < 0)
	{
		LWLockRelease(zkl_shared->lock);
		if (!quiet)
			zkl_report_no_slot(reserve, (zkl_claim_verdict) verdict, role, role_cap, used);
		return -1;
	}
	slot = &zkl_shared->slots[slotno];
	slot->state = ZKL_SLOT_WAITING;
	slot->wanted = true;
	slot->try_only = false;
	slot->commit_waiting = false;
	slot->committing = false;
	slot->take_deferred = false;
	slot->fence_row = false;
	slot->inspect = false;
	slot->op = ZKL_OP_LOCK;
	slot->permits = 0;
	slot->max_hold_ms = zkl_hold_limit_ms();
	slot->on_revoke = zkl_on_revoke_setting;
	slot->revoke_requested = false;
	slot->take_reason = ZKL_TAKE_NONE;
	slot->lease[0] = '\0';
	slot->kind = ZKL_NODE_READ;
	slot->sibling_slotno = -1;
	/* pid and procno: set by zkl_slot_take, whose counts need them. */
	slot->dbid = MyDatabaseId;
	slot->userid = GetUserId();
	slot->encoding = GetDatabaseEncoding();
	slot->session_count = slot->xact_count = 0;
	slot->zk_rc = 0;
	slot->behind = false;
	slot->delete_unsure = false;
	slot->stranded = false;
	slot->token = 0;
	slot->requested_at = start;
	slot->granted_at = 0;
	slot->granted_session = 0;
	slot->node[0] = '\0';
	slot->target[0] = '\0';
	slot->data[0] = '\0';
	slot->uuid[0] = '\0';
	strlcpy(slot->name, name, sizeof(slot->name));
	strlcpy(slot->dir, dir, sizeof(slot->dir));
	return slotno;
}

/* Hand a claimed slot to the worker; this backend now waits for it. */
uint32
zkl_submit_slot(int slotno)
{
	uint32		generation = zkl_shared->slots[slotno].generation;

	zkl_queue_push(slotno);
	LWLockRelease(zkl_shared->lock);
	zkl_wake_worker();
	return generation;
}

/*
 * The worker answered what zkl_ask_worker asked: the slot is given back,
 * and a failure reported, unless the caller is to see it.
 */
static int
zkl_ask_answered(const char *name, zkl_slot *slot, uint32 generation, zkl_slot_op op,
				 zkl_slot_state state, int zk_rc)
{
	zkl_ask_slotno = -1;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (slot->generation == generation)
		zkl_slot_clear(slot);
	LWLockRelease(zkl_shared->lock);

	/*
	 * A holder's node that refuses our write: the caller says so.  A deadlock
	 * check that cannot read a directory sees no edge in it (as without a
	 * reserve slot): the wait goes on, bounded by its timeout, instead of
	 * failing for the check's sake.
	 */
	if (state == ZKL_SLOT_FAILED && !zkl_checking &&
		!(op == ZKL_OP_REVOKE && zk_rc == ZNOAUTH))
		ereport(ERROR,
				(errcode(ERRCODE_ZKLOCK_ERROR),
				 op == ZKL_OP_REVOKE ?
				 errmsg("could not ask the holder of ZooKeeper lock \"%s\" to give it up: %s", name, zerror(zk_rc)) :
				 errmsg("could not read the contenders of ZooKeeper lock \"%s\": %s", name, zerror(zk_rc))));
	return zk_rc;
}

/*
 * The holder's node is another's: never the slot's own (slot->node).  A
 * name too long for the slot (another client's layout: ZooKeeper bounds a
 * name only by its packet size) travels whole in a segment of its own,
 * whose handle (*reply) the worker reads when target is empty; never cut
 * short, which would write the message on another node or on none.
 * Returns that segment, to be detached once answered, or NULL.
 */
static dsm_segment *
zkl_put_target(zkl_slot *slot, const char *node, dsm_handle *reply)
{
	dsm_segment *seg;

	if (node == NULL)
		return NULL;
	if (strlen(node) < sizeof(slot->target))
	{
		strlcpy(slot->target, node, sizeof(slot->target));
		return NULL;
	}
	seg = dsm_create(strlen(node) + 1, 0);
	strcpy(dsm_segment_address(seg), node);
	*reply = dsm_segment_handle(seg);
	return seg;
}

/*
 * Have the worker do what is not a lock request (see zkl_slot_op): read the
 * directory dir of lock name into our segment "reply" (contenders.c), or
 * ask the holder at dir/node to give the lock up.  Waits like an acquire,
 * but only for the session.  Returns ZooKeeper's answer (ZOK, or ZNONODE
 * for a node gone meanwhile; for a revocation also ZNOAUTH, the holder's
 * node refusing our write); other failures are reported here, but for a
 * deadlock check's reads (zkl_checking), which return them.
 */
int
zkl_ask_worker(const char *name, const char *dir, zkl_slot_op op, const char *node,
			   dsm_handle reply)
{
	int			slotno;
	zkl_slot   *slot;
	uint32		generation;
	TimestampTz start = GetCurrentTimestamp();
	dsm_segment *target_seg;

	zkl_require_shmem();
	/* Never a lock slot: reads and revocations work when those run out. */
	slotno = zkl_claim_slot(name, dir, start, true, zkl_checking);
	/* No reserve slot: the check reads nothing here, which adds no edge. */
	if (slotno < 0)
		return ZKL_RC_NO_SLOT;
	slot = &zkl_shared->slots[slotno];
	slot->inspect = true;
	slot->op = op;

	target_seg = zkl_put_target(slot, node, &reply);
	slot->reply_handle = reply;
	generation = zkl_submit_slot(slotno);
	zkl_ask_slotno = slotno;
	zkl_ask_generation = generation;
	for (;;)
	{
		zkl_slot_state state;
		zkl_session_state session;
		TimestampTz since;
		int			zk_rc;
		TimestampTz conn_deadline;
		TimestampTz proof_until = 0;
		bool		usable;
		bool		auth_refused;

		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		state = slot->state;
		zk_rc = slot->zk_rc;
		session = zkl_shared->session_state;
		since = zkl_shared->disconnected_since;
		auth_refused = zkl_shared->auth_refused;
		LWLockRelease(zkl_shared->lock);

		if (state == ZKL_SLOT_HELD || state == ZKL_SLOT_FAILED)
		{
			/* An error detaches the segment with the transaction. */
			if (target_seg != NULL)
				dsm_detach(target_seg);
			return zkl_ask_answered(name, slot, generation, op, state, zk_rc);
		}

		/*
		 * A session the worker cannot prove alive (a frozen worker, a silent
		 * server) is no better than none: the answer is waited for
		 * zklock.connect_timeout past the proof's end, then given up.
		 */
		usable = session == ZKL_SESSION_CONNECTED && zkl_session_proven(NULL, &proof_until, NULL);
		if (session == ZKL_SESSION_CONNECTED)
			since = proof_until;
		conn_deadline = TimestampTzPlusMilliseconds(Max(start, since), zkl_connect_timeout);
		if (session != ZKL_SESSION_CONNECTED)
			zkl_fail_if_auth_refused(name, auth_refused);
		if (!usable && GetCurrentTimestamp() >= conn_deadline)
		{
			zkl_cancel_wait(false);
			ereport(ERROR,
					(errcode(ERRCODE_ZKLOCK_UNAVAILABLE),
					 errmsg("could not reach ZooKeeper for lock \"%s\"", name),
					 session == ZKL_SESSION_CONNECTED ?
					 errdetail("No answer from ZooKeeper for %d ms past the session's last proof (zklock.connect_timeout).", zkl_connect_timeout) :
					 errdetail("No ZooKeeper session for %d ms (zklock.connect_timeout).", zkl_connect_timeout),
					 zkl_no_session_hint()));
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 zkl_ms_until(usable ? proof_until : conn_deadline, GetCurrentTimestamp()),
						 zkl_wait_event(usable ? ZKL_WAIT_WORKER : ZKL_WAIT_SESSION));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * A lock taken in a parallel worker would belong to that worker, which gives
 * it back when it exits, while the leader goes on as if it held the lock; a
 * release there would give back nothing of the leader's.  zklock's functions
 * are PARALLEL UNSAFE, so only a wrapper declared PARALLEL SAFE gets here:
 * refuse it, as PostgreSQL refuses writes during a parallel operation.
 */
void
zkl_refuse_parallel(void)
{
	if (IsInParallelMode())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("cannot take or release ZooKeeper locks during a parallel operation"),
				 errdetail("A lock taken by a parallel worker would vanish when the worker exits."),
				 errhint("Declare the functions that call zklock's lock functions PARALLEL UNSAFE, as zklock's own are.")));
}

/*
 * Whether the worker has proof that the session is alive now: it is
 * connected, and a request sent less than a third of the negotiated session
 * timeout ago was answered, so the session cannot have expired yet.  A
 * library that still says "connected" is not proof (a worker that cannot
 * reach any server keeps the state it had); silence is not health.
 * *timeout_ms, when given, gets the session timeout, *until the time the
 * proof runs out, and *session the id of the session in use (0 when there
 * is none), read in one look with the rest: the proof is of that session
 * only.
 */
bool
zkl_session_proven(int *timeout_ms, TimestampTz *until, int64 *session)
{
	zkl_session_state state;
	int64		proof_sent;
	int64		now;
	int			timeout;
	int64		session_id;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);

	/*
	 * The clock is read once the lock is held: a wait for the lock must count
	 * against the proof, never in its favour.
	 */
	now = zkl_now();
	state = zkl_shared->session_state;
	proof_sent = zkl_shared->proof_sent;
	session_id = zkl_shared->session_id;
	timeout = zkl_shared->negotiated_timeout > 0 ? zkl_shared->negotiated_timeout : zkl_session_timeout;
	LWLockRelease(zkl_shared->lock);

	if (timeout_ms)
		*timeout_ms = timeout;
	/* The proof runs on the monotonic clock; callers wait on the wall's. */
	if (until)
		*until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											 zkl_ms_left(zkl_proof_until(proof_sent, timeout), now));
	if (session)
		*session = session_id;
	return state == ZKL_SESSION_CONNECTED && zkl_proof_holds(proof_sent, timeout, now);
}

/*
 * The hint of a request that found ZooKeeper out of reach: where to look.
 * A bad zklock.auth first, for the worker then starts no session
 * (rules/auth_value.c); the servers otherwise.
 */
int
zkl_no_session_hint(void)
{
	if (zkl_auth_bad(zkl_auth))
		return errhint("Correct zklock.auth, which is not valid, and reload the configuration.");
	return errhint("Check that zklock.hosts (\"%s\") lists running ZooKeeper servers.", zkl_hosts);
}

/*
 * A request for lock name that finds no session fails at once when the
 * worker starts none for a bad zklock.auth (refused: it says so in shared
 * memory, zkl_shared->auth_refused) and this backend's value is bad too:
 * waiting zklock.connect_timeout for a session would only delay the error.
 * A value just corrected by a reload is waited for as any session is.
 */
void
zkl_fail_if_auth_refused(const char *name, bool refused)
{
	if (!refused || !zkl_auth_bad(zkl_auth))
		return;
	zkl_cancel_wait(false);
	ereport(ERROR,
			(errcode(ERRCODE_ZKLOCK_UNAVAILABLE),
			 errmsg("there is no ZooKeeper session for lock \"%s\"", name),
			 errdetail("The zklock worker starts no session while zklock.auth is not valid."),
			 errhint("Correct zklock.auth and reload the configuration.")));
}
