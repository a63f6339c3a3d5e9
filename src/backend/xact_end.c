/*-------------------------------------------------------------------------
 *
 * xact_end.c
 *		The backend's hooks into PostgreSQL, installed by _PG_init
 *		(zkl_backend_init): the check before commit that every hold is
 *		still ours and proven (a commit cannot happen after a loss), the
 *		release at transaction and subtransaction end, DISCARD ALL, and
 *		exit.  Runs in the backends.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "commands/async.h"
#include "commands/dbcommands.h"
#include "common/int.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/postmaster.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "pg_compat.h"
#include "backend/locks.h"
#include "backend/request.h"
#include "backend/xact_end.h"
#include "rules/clock.h"

static void zkl_resource_release(ResourceReleasePhase phase, bool isCommit, bool isTopLevel, void *arg);
static void zkl_xact_callback(XactEvent event, void *arg);
static void zkl_subxact_callback(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg);

static bool zkl_commit_waiting = false; /* our slots say commit_waiting */

static ProcessUtility_hook_type prev_process_utility = NULL;

/*
 * DISCARD ALL gives back this session's session-scope locks, as it gives
 * back advisory locks: poolers run it between clients (pgbouncer's default
 * server_reset_query), and a lock must not outlive its client.  Other kinds
 * of DISCARD leave them, as they leave advisory locks.  Inside a
 * transaction block DISCARD ALL fails before this point, and the locks stay.
 */
static void
zkl_process_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					ProcessUtilityContext context, ParamListInfo params,
					QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	bool		discard_all = IsA(parsetree, DiscardStmt) &&
	((DiscardStmt *) parsetree)->target == DISCARD_ALL;

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params,
							 queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
	if (discard_all)
		zkl_release_all_session(false);
}

void
zkl_backend_init(void)
{
	RegisterXactCallback(zkl_xact_callback, NULL);
	RegisterSubXactCallback(zkl_subxact_callback, NULL);
	RegisterResourceReleaseCallback(zkl_resource_release, NULL);
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = zkl_process_utility;
	zkl_before_claim = zkl_local_init;
}

/*
 * A resource owner of a subtransaction or a portal is released: its
 * transaction holds pass to the parent owner on commit and are given back
 * on abort, as the lock manager does with advisory locks
 * (ResourceOwnerRelease makes the owner being released current while the
 * callbacks run).  The top level's release comes after the transaction's
 * end has given back every hold (zkl_xact_callback).
 */
static void
zkl_resource_release(ResourceReleasePhase phase, bool isCommit, bool isTopLevel, void *arg)
{
	ResourceOwner owner = CurrentResourceOwner;

	if (phase != RESOURCE_RELEASE_LOCKS || isTopLevel || owner == NULL ||
		zkl_n_xact_holds == 0 || zkl_shared == NULL || zkl_locks == NULL)
		return;
	if (isCommit)
	{
		ResourceOwner parent = ResourceOwnerGetParent(owner);

		for (int i = 0; i < zkl_n_xact_holds; i++)
			if (zkl_xact_holds[i].owner == owner)
				zkl_xact_holds[i].owner = parent;
	}
	else
		zkl_release_xact_holds(owner);
}

/*
 * Whether the transaction has notifications (or LISTEN, UNLISTEN) waiting
 * for its commit: PostgreSQL queues them after the pre-commit callbacks,
 * giving the transaction an id only then, and a listener sees them once it
 * commits, so they are a durable, visible effect like a write.  async.c
 * keeps its lists to itself; AtPrepare_Notify refuses a PREPARE exactly when
 * they are not empty, and nothing else, so its refusal is the answer.
 */
static bool
zkl_notifications_pending(void)
{
	MemoryContext context = CurrentMemoryContext;
	uint32		holdoff = InterruptHoldoffCount;
	uint32		cancel_holdoff = QueryCancelHoldoffCount;
	volatile bool pending = false;

	PG_TRY();
	{
		AtPrepare_Notify();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(context);
		FlushErrorState();
		/* errfinish cleared these for an error handler; put them back */
		InterruptHoldoffCount = holdoff;
		QueryCancelHoldoffCount = cancel_holdoff;
		pending = true;
	}
	PG_END_TRY();
	return pending;
}

/*
 * While a commit waits for proof, a lost lock is reported by the commit
 * (ZK002) rather than by a cancel that would hide the cause.
 */
static void
zkl_set_commit_waiting(bool waiting)
{
	HASH_SEQ_STATUS seq;
	zkl_local_lock *lock;

	zkl_commit_waiting = waiting;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, zkl_locks);
	while ((lock = hash_seq_search(&seq)) != NULL)
	{
		zkl_slot   *slot = &zkl_shared->slots[lock->slotno];

		if (slot->generation == lock->generation)
			slot->commit_waiting = waiting;
	}
	LWLockRelease(zkl_shared->lock);
}

/* The commit's wait for proof is over, however it ended (an error too). */
static void
zkl_end_commit_wait(void)
{
	if (!zkl_commit_waiting)
		return;
	ConditionVariableCancelSleep();
	zkl_set_commit_waiting(false);
}

/*
 * The ZooKeeper session that granted this backend's hold.  A hold is an
 * ephemeral node of that session: a later session's proof says nothing
 * about it, whatever the lost flag read.
 */
static int64
zkl_granting_session(zkl_local_lock *lock)
{
	zkl_slot   *slot = &zkl_shared->slots[lock->slotno];
	int64		granted;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	granted = slot->generation == lock->generation ? slot->granted_session : 0;
	LWLockRelease(zkl_shared->lock);
	return granted;
}

/*
 * Report, once, a hold granted by a session other than "session", the one
 * in use (0 when there is none: that proves nothing, and disowns nothing).
 */
static void
zkl_report_if_other_session(zkl_local_lock *lock, int64 session)
{
	char		name[ZKL_MAX_NAME_LEN + 1];
	int64		granted = zkl_granting_session(lock);

	if (session == 0 || granted == session)
		return;
	strlcpy(name, lock->key + 1, sizeof(name));
	zkl_drop_local_as(lock, true);
	zkl_note_loss(name);
	ereport(ERROR,
			(errcode(ERRCODE_ZKLOCK_LOST),
			 errmsg("ZooKeeper lock \"%s\" was lost", name),
			 errdetail("It was granted in ZooKeeper session 0x%llx, which has ended; the session in use is 0x%llx.",
					   (unsigned long long) granted, (unsigned long long) session),
			 errhint("Another client may have taken the lock; redo the work under a new lock.")));
}

/*
 * The commit fails on the first hold that is lost or was granted by
 * another session than session (0: none is proven).
 */
static void
zkl_report_lost_holds(int64 session)
{
	HASH_SEQ_STATUS seq;
	zkl_local_lock *lock;

	hash_seq_init(&seq, zkl_locks);
	while ((lock = hash_seq_search(&seq)) != NULL)
	{
		if ((session != 0 && zkl_granting_session(lock) != session) ||
			zkl_lock_is_lost(lock))
		{
			hash_seq_term(&seq);
			break;
		}
	}
	if (lock != NULL)
	{
		zkl_end_commit_wait();
		zkl_report_if_other_session(lock, session);
		zkl_report_if_lost(lock);
	}
}

/* No proof of the session came within its timeout: the commit fails. */
pg_noreturn static void
zkl_report_unconfirmed(int timeout_ms)
{
	zkl_end_commit_wait();
	ereport(ERROR,
			(errcode(ERRCODE_ZKLOCK_LOST),
			 errmsg("could not confirm the ZooKeeper session before commit"),
			 errdetail("No answer from ZooKeeper for %d ms; this session's ZooKeeper locks may have passed to another holder.",
					   timeout_ms),
			 errhint("Check that ZooKeeper at zklock.hosts (\"%s\") is reachable and the zklock worker is running.",
					 zkl_hosts)));
}

/*
 * A backend that holds locks commits (or prepares) only with proof that
 * they are still its own: none was lost, each was granted in the session
 * in use, and a request of that session sent to ZooKeeper less than a third
 * of the session timeout ago was answered, so it cannot have expired by
 * now.  The session's state, id and last contact are read in one look, and
 * each hold is compared with that id: a session that expires and is
 * replaced while the holds are looked at fails the comparison, whatever
 * the lost flags said.  Without proof (disconnected, or the worker frozen)
 * the commit waits for a fresh heartbeat, at most one session timeout, and
 * fails when none comes.
 */
static void
zkl_confirm_before_commit(void)
{
	int64		start = 0;		/* zkl_now()'s clock (clock.h) */
	int64		deadline = 0;
	bool		wrote;

	if (zkl_lost_in_xact[0] != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_ZKLOCK_LOST),
				 errmsg("ZooKeeper lock \"%s\" was lost in this transaction", zkl_lost_in_xact),
				 errdetail("Its loss was reported earlier in the transaction and caught there; a transaction cannot commit after one of its session's locks was lost."),
				 errhint("Roll back the transaction and redo the work under a new lock.")));
	if (hash_get_num_entries(zkl_locks) == 0)
		return;
	wrote = TransactionIdIsValid(GetTopTransactionIdIfAny()) || zkl_notifications_pending();

	for (;;)
	{
		int			timeout_ms;
		int64		session;
		bool		proven;
		int64		now;

		proven = zkl_session_proven(&timeout_ms, NULL, &session);
		zkl_report_lost_holds(session);

		/*
		 * A transaction that wrote nothing (it has no transaction id and no
		 * notification waits for its commit) makes nothing durable or
		 * visible: a known loss is still reported, but there is nothing to
		 * protect by waiting for proof, and a read-only statement of a lock
		 * holder must not stall while ZooKeeper is away.
		 */
		if (!wrote || proven)
			break;
		now = zkl_now();
		if (start == 0)
		{
			start = now;
			deadline = zkl_after_ms(now, timeout_ms);
		}
		if (now >= deadline)
			zkl_report_unconfirmed(timeout_ms);

		if (!zkl_commit_waiting)
		{
			zkl_set_commit_waiting(true);
			ConditionVariablePrepareToSleep(&zkl_shared->contact_cv);
		}
		LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
		zkl_shared->heartbeat_requested = true;
		LWLockRelease(zkl_shared->lock);
		zkl_wake_worker();

		/*
		 * The worker broadcasts when an answer moves last_contact, the
		 * session changes state or a lock is lost: no polling.
		 */
		(void) ConditionVariableTimedSleep(&zkl_shared->contact_cv,
										   (long) Min(zkl_ms_left(deadline, zkl_now()), PG_INT32_MAX),
										   zkl_wait_event(ZKL_WAIT_COMMIT));
	}
	zkl_end_commit_wait();

	if (start != 0)
		ereport(LOG,
				(errmsg("zklock: commit waited %ld ms for the ZooKeeper session to be confirmed",
						(long) ((zkl_now() - start) / 1000))));
}

static void
zkl_xact_callback(XactEvent event, void *arg)
{
	if (zkl_shared == NULL || zkl_locks == NULL)
		return;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			zkl_confirm_before_commit();
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (zkl_n_xact_holds > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that holds transaction-level ZooKeeper locks"),
						 errdetail("The locks belong to this session's ZooKeeper nodes, which cannot outlive it."),
						 errhint("Use session-level locks (zk_lock_acquire) around a prepared transaction.")));

			/*
			 * A prepared transaction is durable: COMMIT PREPARED, perhaps in
			 * another session, proves nothing again.  So the session-scope
			 * locks are proven here, exactly as a commit proves them.
			 */
			zkl_confirm_before_commit();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* After the commit record: the next holder sees our work. */
			zkl_end_commit_wait();
			zkl_forget_fence_rows();
			zkl_cancel_wait(true);
			zkl_release_xact_holds(NULL);
			zkl_lost_in_xact[0] = '\0';
			break;
		default:
			break;
	}
}

static void
zkl_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	if (zkl_shared == NULL || zkl_locks == NULL)
		return;
	/* The holds themselves follow their resource owners. */
	if (event == SUBXACT_EVENT_ABORT_SUB)
		zkl_cancel_wait(true);
}
