/*-------------------------------------------------------------------------
 *
 * acquire.c
 *		Taking a lock, in the backend: describe the holder, post the
 *		request (request.c), wait for the grant with the timeout, the
 *		session's loss and deadlock detection (deadlock_check.c) in view, and
 *		count the hold (locks.c).  zk_lock, zk_try_lock, zk_lock_set and
 *		their kin end here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <zookeeper/zookeeper.h>

#include "access/xlog.h"
#include "commands/dbcommands.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "backend/acquire.h"
#include "backend/deadlock_check.h"
#include "backend/error_codes.h"
#include "backend/locks.h"
#include "backend/request.h"
#include "names/encode.h"
#include "pg_compat.h"
#include "shared/wait_events.h"

static bool zkl_request(const char *name, zkl_mode mode, int permits, bool xact, bool try_only, int64 timeout_ms, int64 session_wait_ms, int64 *token);

/*
 * Who this backend is, the start of every description: its cluster,
 * host, port, pid, database, user and application_name.  Made once and
 * again only when the user or application_name changed (the database of
 * a backend never does), not on every acquire: the catalog lookups and
 * gethostname are no part of a lock's path.  A role renamed meanwhile
 * shows under its old name until then.
 */
static char *zkl_who = NULL;
static Oid	zkl_who_user = InvalidOid;
static char *zkl_who_app = NULL;

static const char *
zkl_who_am_i(void)
{
	Oid			user = GetUserId();
	const char *app = application_name ? application_name : "";
	StringInfoData buf;
	char		host[ZKL_HOST_NAME_LEN];

	if (zkl_who != NULL && user == zkl_who_user && strcmp(zkl_who_app, app) == 0)
		return zkl_who;

	/* Made whole before it is kept: an error leaves nothing half made. */
	initStringInfo(&buf);
	zkl_host_name(host, sizeof(host));
	zkl_json_field(&buf, "cluster", cluster_name);
	appendStringInfo(&buf, ",\"system_identifier\":\"" UINT64_FORMAT "\"", GetSystemIdentifier());
	zkl_json_field(&buf, "host", host);
	appendStringInfo(&buf, ",\"port\":%d,\"pid\":%d", PostPortNumber, MyProcPid);
	zkl_json_field(&buf, "database", get_database_name(MyDatabaseId));
	zkl_json_field(&buf, "user", GetUserNameFromId(user, false));
	zkl_json_field(&buf, "application_name", app);
	if (zkl_who != NULL)
	{
		pfree(zkl_who);
		pfree(zkl_who_app);
	}
	zkl_who = MemoryContextStrdup(TopMemoryContext, buf.data);
	zkl_who_app = MemoryContextStrdup(TopMemoryContext, app);
	zkl_who_user = user;
	pfree(buf.data);
	return zkl_who;
}

/* The node's data: who is asking, for any ZooKeeper client to read. */
static void
zkl_describe_holder(char *out, zkl_mode mode, bool xact, TimestampTz now)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	appendStringInfoString(&buf, zkl_who_am_i());
	zkl_json_field(&buf, "scope", xact ? "transaction" : "session");
	zkl_json_field(&buf, "mode", zkl_mode_name(mode));
	zkl_json_field(&buf, "requested_at", timestamptz_to_str(now));
	appendStringInfoChar(&buf, '}');

	/* Overlong names shrink the description, never the JSON's validity. */
	if (buf.len >= ZKL_MAX_DATA_LEN)
	{
		resetStringInfo(&buf);
		appendStringInfo(&buf, "{\"system_identifier\":\"" UINT64_FORMAT "\",\"port\":%d,\"pid\":%d}",
						 GetSystemIdentifier(), PostPortNumber, MyProcPid);
	}
	strlcpy(out, buf.data, ZKL_MAX_DATA_LEN);
	pfree(buf.data);
}

/*
 * Describe a new request of this backend, claim a slot for it and hand it
 * to the worker.  Returns the slot; *generation identifies this use of it.
 */
static int
zkl_post_request(const char *name, const char *dir, zkl_mode mode, int permits, bool xact,
				 bool try_only, TimestampTz start, uint32 *generation)
{
	char		data[ZKL_MAX_DATA_LEN];
	char		uuid[ZKL_UUID_LEN + 1];

	/* The hold of the other mode of a lock; a semaphore has none. */
	zkl_local_lock *sibling = mode == ZKL_MODE_SEMAPHORE ? NULL :
	zkl_find_local(name, mode == ZKL_MODE_SHARED ? ZKL_MODE_EXCLUSIVE : ZKL_MODE_SHARED);
	zkl_slot   *slot;
	int			slotno;

	/* What may fail comes first: no slot is claimed yet. */
	zkl_describe_holder(data, mode, xact, start);
	zkl_random_uuid(uuid);

	slotno = zkl_claim_slot(name, dir, start, false, false);
	slot = &zkl_shared->slots[slotno];
	slot->try_only = try_only;
	/* A semaphore's own mutex is always Curator's InterProcessMutex. */
	slot->kind = mode == ZKL_MODE_SHARED ? ZKL_NODE_READ :
		mode == ZKL_MODE_EXCLUSIVE && zkl_exclusive_layout_setting == ZKL_LAYOUT_READWRITE ?
		ZKL_NODE_WRITE : ZKL_NODE_MUTEX;
	slot->permits = permits;
	slot->sibling_slotno = sibling ? sibling->slotno : -1;
	slot->sibling_generation = sibling ? sibling->generation : 0;
	slot->session_count = xact ? 0 : 1;
	slot->xact_count = xact ? 1 : 0;
	strlcpy(slot->uuid, uuid, sizeof(slot->uuid));
	strlcpy(slot->data, data, sizeof(slot->data));
	*generation = zkl_submit_slot(slotno);
	zkl_wait_slotno = slotno;
	zkl_wait_generation = *generation;
	return slotno;
}

/* The worker refused the request: give the slot up and say why. */
static void
zkl_report_failed(const char *name, const char *dir, int zk_rc)
{
	(void) zkl_stats_end(zk_rc == ZKL_RC_DEADLOCK ? ZKL_STATS_DEADLOCK : ZKL_STATS_HOLD_END);
	zkl_cancel_wait(false);
	if (zk_rc == ZKL_RC_DEADLOCK)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_DEADLOCK_DETECTED),
				 errmsg("deadlock detected"),
				 errdetail("This session holds ZooKeeper lock \"%s\" in shared mode, and an exclusive request queued after that hold waits for it.",
						   name),
				 errhint("Release the shared lock before asking for the exclusive one, or take the exclusive lock first.")));
	if (zk_rc == ZKL_RC_DELETE_REFUSED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("lock directory \"%s\" of ZooKeeper lock \"%s\" does not let zklock delete its nodes", dir, name),
				 errdetail("The directory's ACL grants zklock's identity no DELETE of its children (read before the first create there, or learnt from a refused delete): a node zklock made there would stay until this cluster's ZooKeeper session ends and hold the lock against everyone, so zklock makes none."),
				 errhint("Grant DELETE on the lock directory to zklock's identity (zklock.auth), or to anyone, as zklock's own directories do.")));
	/* Made again after each ZNONODE, the directory is still not there. */
	if (zk_rc == ZNONODE)
		ereport(ERROR,
				(errcode(ERRCODE_ZKLOCK_ERROR),
				 errmsg("ZooKeeper refused the request for lock \"%s\": %s", name, zerror(zk_rc)),
				 errdetail("The lock's directories could not be made (its lock directory is \"%s\"): zklock's identity may lack the CREATE right on a directory above them, or another client deletes them.", dir),
				 errhint("Check the ACLs under zklock.root and the zklock.auth setting.")));
	ereport(ERROR,
			(errcode(ERRCODE_ZKLOCK_ERROR),
			 errmsg("ZooKeeper refused the request for lock \"%s\": %s", name, zerror(zk_rc)),
			 errdetail("The lock directory is \"%s\".", dir),
			 errhint("Check the ACLs under zklock.root and the zklock.auth setting.")));
}

/*
 * The timeout ran out: behind another holder (55P03), or without a
 * session or an answer from ZooKeeper (ZK001).
 */
static void
zkl_report_timeout(const char *name, int64 timeout_ms, bool connected, bool behind)
{
	(void) zkl_stats_end(ZKL_STATS_TIMEOUT);
	zkl_cancel_wait(false);
	zkl_count(timeouts);
	if (!connected || !behind)
		ereport(ERROR,
				(errcode(ERRCODE_ZKLOCK_UNAVAILABLE),
				 errmsg("could not obtain ZooKeeper lock \"%s\": ZooKeeper is not reachable", name),
				 !connected ?
				 errdetail("Gave up after %ld ms without a ZooKeeper session.", (long) timeout_ms) :
				 errdetail("Gave up after %ld ms without an answer from ZooKeeper.", (long) timeout_ms),
				 zkl_no_session_hint()));
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not obtain ZooKeeper lock \"%s\"", name),
			 errdetail("Gave up after waiting %ld ms for another holder to release it.",
					   (long) timeout_ms)));
}

/*
 * This request is the victim of a cycle of waits (deadlock_check.c): it gives up,
 * as a timeout would, and says what the cycle was.  A request granted since
 * the check is no victim: it returns, and the caller finds the grant.
 */
static void
zkl_report_deadlock(const char *name, int slotno, uint32 generation, const char *cycle)
{
	/* Withdrawn only if still waiting, in one step with the test. */
	if (!zkl_give_up(slotno, generation, false, true))
		return;
	zkl_wait_slotno = -1;
	(void) zkl_stats_end(ZKL_STATS_DEADLOCK);
	zkl_cancel_wait(false);
	zkl_count(deadlocks_found);
	ereport(ERROR,
			(errcode(ERRCODE_T_R_DEADLOCK_DETECTED),
			 errmsg("deadlock detected"),
			 errdetail_internal("%s", cycle),
			 errhint("Take ZooKeeper locks in the same order everywhere, or take them as one set with zk_lock_acquire(text[]).")));
}

/*
 * No session came in time: within zklock.connect_timeout, or within
 * try_wait_ms (>= 0) when a try's own bound was shorter.
 */
static void
zkl_report_no_session(const char *name, int64 try_wait_ms)
{
	zkl_cancel_wait(false);
	ereport(ERROR,
			(errcode(ERRCODE_ZKLOCK_UNAVAILABLE),
			 errmsg("could not obtain ZooKeeper lock \"%s\": ZooKeeper is not reachable", name),
			 try_wait_ms == 0 ?
			 errdetail("There is no ZooKeeper session, and a timeout of zero does not wait for one.") :
			 try_wait_ms > 0 ?
			 errdetail("No ZooKeeper session for %ld ms (lock_timeout).", (long) try_wait_ms) :
			 errdetail("No ZooKeeper session for %d ms (zklock.connect_timeout).", zkl_connect_timeout),
			 zkl_no_session_hint()));
}

/*
 * When a request without a session gives up (zklock.connect_timeout, or a
 * try's session wait): earlier than wake, or wake.  Past it, it fails.
 */
static TimestampTz
zkl_session_wake(const char *name, TimestampTz start, TimestampTz since, int64 session_wait_ms,
				 TimestampTz now, TimestampTz wake)
{
	TimestampTz conn_deadline = TimestampTzPlusMilliseconds(Max(start, since), zkl_connect_timeout);
	TimestampTz try_deadline = session_wait_ms >= 0 ? zkl_deadline_after(start, session_wait_ms) : 0;
	bool		try_bound = try_deadline != 0 && try_deadline < conn_deadline;

	if (try_bound)
		conn_deadline = try_deadline;
	if (now >= conn_deadline)
		zkl_report_no_session(name, try_bound ? session_wait_ms : -1);
	if (wake == 0 || conn_deadline < wake)
		wake = conn_deadline;
	return wake;
}

/*
 * When a request's timeout (deadline) ends its wait; past it, it fails
 * unless ZooKeeper's first answer is still to come on a proven session,
 * which is then waited for until the proof runs out.
 */
static TimestampTz
zkl_deadline_wake(const char *name, TimestampTz deadline, int64 timeout_ms,
				  zkl_session_state session, bool behind, TimestampTz now)
{
	TimestampTz proof_until = 0;

	if (now >= deadline &&
		(behind || session != ZKL_SESSION_CONNECTED || !zkl_session_proven(NULL, &proof_until, NULL)))
		zkl_report_timeout(name, timeout_ms, session == ZKL_SESSION_CONNECTED, behind);
	return now < deadline ? deadline : proof_until;
}

/*
 * A wait's deadlock check (deadlock_check.c): once when the wait has
 * lasted deadlock_timeout, then after each further deadlock_timeout only
 * if the waits-for graph may have changed since; fails the request that
 * gives up for a cycle.  Without a session there is nothing to read: it
 * looks again later.  Returns when to look next.
 */
static TimestampTz
zkl_look_for_cycle(const char *name, int slotno, uint32 generation, zkl_session_state session,
				   bool first)
{
	char	   *cycle = NULL;

	if (session == ZKL_SESSION_CONNECTED &&
		(first || zkl_deadlock_recheck_due(slotno, generation)))
		cycle = zkl_deadlock_check(slotno, generation, name);
	if (cycle)
		zkl_report_deadlock(name, slotno, generation, cycle);
	return TimestampTzPlusMilliseconds(GetCurrentTimestamp(), DeadlockTimeout);
}

/*
 * A try found another holder (the worker deletes the node and frees the
 * slot): false.  Anything else that took the slot away is a bug.
 */
static bool
zkl_found_busy(int slotno, bool try_only)
{
	zkl_wait_slotno = -1;
	zkl_end_publication();
	if (!try_only)
		elog(ERROR, "lock slot %d was taken away from a waiting request", slotno);
	return false;
}

/*
 * A posted request being waited for (zkl_await_grant): which it is, and
 * what bounds the wait.
 */
typedef struct zkl_lock_wait
{
	const char *name;
	const char *dir;
	int			slotno;
	uint32		generation;		/* this use of the slot */
	bool		try_only;
	bool		detect;			/* looks for deadlocks after deadlock_timeout */
	TimestampTz start;
	TimestampTz deadline;		/* of the wait behind other holders; 0: none */
	int64		timeout_ms;		/* what deadline came from, for the error */
	int64		session_wait_ms;	/* the wait for a session (zkl_request) */
} zkl_lock_wait;

/* What the worker has said of the request, and of the session, at one look. */
typedef struct zkl_wait_look
{
	zkl_slot_state state;
	int			zk_rc;
	bool		behind;			/* another holder was found ahead */
	int64		token;
	zkl_session_state session;
	TimestampTz since;			/* disconnected since */
	bool		auth_refused;	/* no session for a bad zklock.auth */
} zkl_wait_look;

static void
zkl_look_at_request(const zkl_lock_wait *w, zkl_wait_look *look)
{
	zkl_slot   *slot = &zkl_shared->slots[w->slotno];

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	/* A try that found a holder may be deleted and freed before we look. */
	look->state = slot->generation == w->generation ? slot->state : ZKL_SLOT_BUSY;
	look->zk_rc = slot->zk_rc;
	look->behind = slot->behind;
	look->token = slot->token;
	look->session = zkl_shared->session_state;
	look->since = zkl_shared->disconnected_since;
	look->auth_refused = zkl_shared->auth_refused;
	LWLockRelease(zkl_shared->lock);
}

/* Sleep until the latch is set or wake (0: no timeout) comes. */
static void
zkl_sleep_for_worker(TimestampTz wake, TimestampTz now, zkl_session_state session)
{
	int			rc;

	rc = WaitLatch(MyLatch,
				   WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | (wake ? WL_TIMEOUT : 0),
				   wake ? zkl_ms_until(wake, now) : -1,
				   zkl_wait_event(session == ZKL_SESSION_CONNECTED ?
								  ZKL_WAIT_LOCK : ZKL_WAIT_SESSION));
	if (rc & WL_LATCH_SET)
		ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*
 * Wait for the worker's outcome of a posted request: true when granted
 * (the token in *token), false when a try found another holder.  Every
 * error gives the request up first, so no contender node outlives it.
 * w->deadline bounds the wait behind other holders, the session waits by
 * zklock.connect_timeout and w->session_wait_ms (see zkl_request).
 */
static bool
zkl_await_grant(const zkl_lock_wait *w, int64 *token)
{
	/*
	 * A wait that lasts deadlock_timeout looks for a cycle, and after each
	 * further one, whether it should look again.
	 */
	TimestampTz next_check = w->detect && DeadlockTimeout > 0 ?
	TimestampTzPlusMilliseconds(w->start, DeadlockTimeout) : 0;
	bool		checked = false;

	for (;;)
	{
		zkl_wait_look look;
		TimestampTz now;
		TimestampTz wake = 0;

		zkl_look_at_request(w, &look);
		*token = look.token;
		/* zk_lock_stats counts the wait of a request found behind another. */
		if (look.behind)
			zkl_stats_req.behind = true;
		if (look.state == ZKL_SLOT_HELD)
			return true;
		if (look.state == ZKL_SLOT_BUSY)
			return zkl_found_busy(w->slotno, w->try_only);
		if (look.state == ZKL_SLOT_FAILED)
			zkl_report_failed(w->name, w->dir, look.zk_rc);

		/*
		 * The timeout is for waiting: it ends the request when ZooKeeper is
		 * out of reach, or once the worker found another holder ahead of it.
		 * Before ZooKeeper's first answer nothing is known to be in the way
		 * (a free lock takes one round trip), so that answer is waited for as
		 * long as the session is proven alive; a frozen worker or a silent
		 * server ends the request when the proof runs out.
		 */
		now = GetCurrentTimestamp();
		if (w->deadline != 0)
			wake = zkl_deadline_wake(w->name, w->deadline, w->timeout_ms, look.session,
									 look.behind, now);

		if (next_check != 0 && now >= next_check)
		{
			next_check = zkl_look_for_cycle(w->name, w->slotno, w->generation, look.session, !checked);
			checked = checked || look.session == ZKL_SESSION_CONNECTED;
			/* What happened meanwhile is looked at before sleeping. */
			continue;
		}
		if (next_check != 0 && (wake == 0 || next_check < wake))
			wake = next_check;

		if (look.session != ZKL_SESSION_CONNECTED)
		{
			zkl_fail_if_auth_refused(w->name, look.auth_refused);
			wake = zkl_session_wake(w->name, w->start, look.since, w->session_wait_ms, now, wake);
		}

		zkl_sleep_for_worker(wake, now, look.session);
	}
}

/*
 * A granted request becomes a hold of this backend.  Known to the local
 * table before it stops being the wait: no gap to leak it.  Room for its
 * transaction hold is made first: nothing can fail once it is in the
 * table.
 */
static void
zkl_note_grant(const char *key, int slotno, uint32 generation, bool xact, int64 token)
{
	zkl_local_lock *lock;
	bool		found;

	if (xact)
		zkl_reserve_xact_hold();
	lock = hash_search(zkl_locks, key, HASH_ENTER, &found);
	lock->slotno = slotno;
	lock->generation = generation;
	lock->session_count = xact ? 0 : 1;
	lock->xact_count = 0;
	lock->token = token;
	lock->granted_at = zkl_stats_end(ZKL_STATS_GRANTED);
	zkl_wait_slotno = -1;
	zkl_end_publication();
	if (xact)
	{
		zkl_remember_xact_hold(key);
		lock->xact_count = 1;
	}
}

/*
 * Post a request and wait for the outcome.  Returns true when granted (the
 * token in *token), false when a try found another holder.  Errors cancel
 * the request first, so no contender node outlives a failed acquire.
 */
static bool
zkl_request(const char *name, zkl_mode mode, int permits, bool xact, bool try_only, int64 timeout_ms,
			int64 session_wait_ms, int64 *token)
{
	zkl_local_lock *lock;
	int			slotno;
	uint32		generation;
	bool		found;
	zkl_lock_wait wait;
	TimestampTz start = GetCurrentTimestamp();
	TimestampTz deadline = timeout_ms > 0 ? zkl_deadline_after(start, timeout_ms) : 0;
	char	   *dir = zkl_lock_dir(name, strlen(name));
	char		key[ZKL_KEY_LEN];

	zkl_local_init();
	zkl_make_key(key, name, mode);
	zkl_report_any_loss(name, mode);

	lock = hash_search(zkl_locks, key, HASH_FIND, &found);
	if (found)
	{
		/* Reentrant: stack on the hold we have; ZooKeeper is not asked. */
		zkl_count_hold(lock, xact, key);
		*token = lock->token;
		zkl_stats_begin(name, mode, xact, start);
		(void) zkl_stats_end(ZKL_STATS_GRANTED);
		return true;
	}

	if (hash_get_num_entries(zkl_locks) >= zkl_backend_cap())
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many ZooKeeper locks held by this session"),
				 errdetail("This session already uses %ld of its %d lock slots.",
						   hash_get_num_entries(zkl_locks), zkl_backend_cap()),
				 errhint("Release some locks, or raise zklock.max_locks_per_backend.")));

	/* A semaphore queues in its own mutex, under its directory. */
	if (mode == ZKL_MODE_SEMAPHORE)
		dir = psprintf("%s/locks", dir);
	slotno = zkl_post_request(name, dir, mode, permits, xact, try_only, start, &generation);
	zkl_stats_begin(name, mode, xact, start);
	wait.name = name;
	wait.dir = dir;
	wait.slotno = slotno;
	wait.generation = generation;
	wait.try_only = try_only;
	wait.detect = !try_only && mode != ZKL_MODE_SEMAPHORE;
	wait.start = start;
	wait.deadline = deadline;
	wait.timeout_ms = timeout_ms;
	wait.session_wait_ms = session_wait_ms;
	if (!zkl_await_grant(&wait, token))
	{
		/* A try that found a holder: neither granted nor a wait. */
		zkl_stats_forget();
		return false;
	}

	/* A hold lost while this one was waited for: the grant goes back. */
	zkl_report_any_loss(name, mode);
	zkl_note_grant(key, slotno, generation, xact, *token);
	return true;
}

/*
 * The SQL timeout argument in ms: negative (NULL) means lock_timeout, where
 * 0 waits forever; an explicit 0 means "do not wait" and is a try.
 */
static int64
zkl_wait_limit(int64 timeout_ms)
{
	return timeout_ms < 0 ? LockTimeout : timeout_ms;
}

/*
 * How long a try waits for an absent ZooKeeper session: a try never waits
 * for another holder, but it must ask ZooKeeper.  lock_timeout bounds that
 * wait as it bounds any lock wait (besides zklock.connect_timeout); -1:
 * only zklock.connect_timeout does.
 */
static int64
zkl_try_session_wait(void)
{
	return LockTimeout > 0 ? LockTimeout : -1;
}

/*
 * SQL-facing acquire.  timeout_ms < 0 means "use lock_timeout", where 0
 * waits forever; an explicit zero means do not wait at all, not even for
 * an absent ZooKeeper session.
 */
bool
zkl_acquire(text *name, zkl_mode mode, int permits, bool xact, bool try_only, int64 timeout_ms,
			int64 *token)
{
	char		key[ZKL_MAX_NAME_LEN + 1];

	zkl_require_shmem();
	zkl_refuse_parallel();
	zkl_name_key(name, key);
	if (try_only)
		return zkl_request(key, mode, permits, xact, true, 0, zkl_try_session_wait(), token);
	if (timeout_ms == 0)
		return zkl_request(key, mode, permits, xact, true, 0, 0, token);
	return zkl_request(key, mode, permits, xact, false, zkl_wait_limit(timeout_ms), -1, token);
}

/* Release one session-scope hold; false plus a warning when there is none. */
/* Multi-lock acquire: canonical order is bytewise by name, in every cluster. */
static int
zkl_cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/*
 * Take every lock of a set or none, one after the other in canonical order,
 * so that two callers with overlapping sets cannot deadlock; duplicates are
 * folded.  One deadline covers the whole set.  tokens[i] is names[i]'s.
 * The set is taken in transaction scope, so that an error part way gives
 * back what was taken with the (sub)transaction it aborts; a session-scope
 * set becomes one only once it is complete.
 */
void
zkl_acquire_set(const char **names, int n, bool xact, int64 timeout_ms, int64 *tokens)
{
	const char **order = palloc(sizeof(char *) * Max(n, 1));
	int64	   *order_tokens = palloc(sizeof(int64) * Max(n, 1));
	int			ndistinct = 0;
	long		needed;
	bool		try_only = timeout_ms == 0;
	int64		limit_ms = zkl_wait_limit(timeout_ms);
	TimestampTz deadline = 0;

	zkl_require_shmem();
	zkl_refuse_parallel();
	memcpy(order, names, sizeof(char *) * n);
	qsort(order, n, sizeof(char *), zkl_cmp_names);
	for (int i = 0; i < n; i++)
		if (ndistinct == 0 || strcmp(order[ndistinct - 1], order[i]) != 0)
			order[ndistinct++] = order[i];

	/*
	 * A set that cannot fit in this session's lock slots is refused whole
	 * before anything is sent, rather than at its first member past the cap
	 * after the others were asked for.  A member held already takes no new
	 * slot; a name repeated is one lock.
	 */
	needed = zkl_locks != NULL ? hash_get_num_entries(zkl_locks) : 0;
	for (int i = 0; i < ndistinct; i++)
		if (zkl_find_local(order[i], ZKL_MODE_EXCLUSIVE) == NULL)
			needed++;
	if (needed > zkl_backend_cap())
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many ZooKeeper locks in one set"),
				 errdetail("The set names %d distinct locks; with those this session holds, it would use %ld of its %d lock slots.",
						   ndistinct, needed, zkl_backend_cap()),
				 errhint("Take fewer locks at once, or raise zklock.max_locks_per_backend.")));

	if (limit_ms > 0)
		deadline = zkl_deadline_after(GetCurrentTimestamp(), limit_ms);
	for (int i = 0; i < ndistinct; i++)
	{
		if (deadline != 0)
			limit_ms = Max(1, zkl_ms_until(deadline, GetCurrentTimestamp()));
		if (!zkl_request(order[i], ZKL_MODE_EXCLUSIVE, 0, true, try_only, limit_ms, try_only ? 0 : -1,
						 &order_tokens[i]))
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not obtain ZooKeeper lock \"%s\"", order[i]),
					 errdetail("Another holder has it and the timeout is zero; none of the %d locks is held.",
							   ndistinct)));
	}

	/*
	 * A hold lost while the set waited for its members (a member, or any
	 * other hold of the session) fails the set, and the error gives back
	 * every member with the (sub)transaction it aborts: all or nothing, even
	 * for a session-scope set, which becomes one only now.
	 */
	zkl_report_any_loss(NULL, ZKL_MODE_EXCLUSIVE);
	if (!xact)
		for (int i = 0; i < ndistinct; i++)
			zkl_xact_hold_to_session(zkl_find_local(order[i], ZKL_MODE_EXCLUSIVE));

	for (int i = 0; i < n; i++)
	{
		const char **hit = bsearch(&names[i], order, ndistinct, sizeof(char *), zkl_cmp_names);

		tokens[i] = order_tokens[hit - order];
	}
	pfree(order);
	pfree(order_tokens);
}
