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

#include "access/parallel.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/async.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/resowner.h"

#include "backend/error_codes.h"
#include "backend/locks.h"
#include "backend/request.h"
#include "backend/xact_end.h"
#include "pg_compat.h"
#include "rules/clock.h"
#include "shared/wait_events.h"

static void zkl_resource_release(ResourceReleasePhase phase, bool isCommit, bool isTopLevel, void *arg);
static void zkl_end_committing(void);
static void zkl_xact_callback(XactEvent event, void *arg);
static void zkl_subxact_callback(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg);

static bool zkl_commit_waiting = false; /* our slots say commit_waiting */
static bool zkl_committing = false; /* our slots say committing */

/*
 * The transaction touched a foreign table: its foreign data wrapper may
 * make the work durable at commit (postgres_fdw commits its remote
 * transaction in its own pre-commit callback), with no local transaction
 * id to show for it.  Cleared when the transaction ends.
 */
static bool zkl_xact_foreign = false;

/*
 * A foreign table was used since zklock's transaction callback last moved
 * to the front of the list (zkl_be_first_at_commit).
 */
static bool zkl_foreign_since_first = false;

/* This transaction is a COMMIT PREPARED or ROLLBACK PREPARED. */
static bool zkl_finishing_prepared = false;

/*
 * zkl_notifications_pending's subtransaction runs: its start and abort are
 * no savepoint of the user's, and release nothing.
 */
static bool zkl_probing_notify = false;

/* zklock's transaction callback is registered with &zkl_callback_args[zkl_callback_arg]. */
static char zkl_callback_args[2];
static int	zkl_callback_arg = 0;

static ProcessUtility_hook_type prev_process_utility = NULL;
static ExecutorStart_hook_type prev_executor_start = NULL;
static ExecutorEnd_hook_type prev_executor_end = NULL;

/*
 * zklock's check must run before any other extension's pre-commit work:
 * postgres_fdw, for one, commits its remote transaction in its pre-commit
 * callback, which a failed check could no longer undo.  PostgreSQL calls the
 * transaction callbacks newest first, and postgres_fdw registers its own at
 * its first connection, after zklock's: so once a statement has used a
 * foreign table (and the connection with it), zklock's callback moves to
 * the front again.  Never while callbacks run (a transaction ending): the
 * list may not change under the loop that calls them.
 */
static void
zkl_be_first_at_commit(void)
{
	if (!zkl_foreign_since_first || zkl_committing || zkl_commit_waiting)
		return;

	/*
	 * The new registration comes first (its allocation may fail, and zklock
	 * must never be left without one), under the other of two arguments, so
	 * that the old one can be told apart and removed.
	 */
	RegisterXactCallback(zkl_xact_callback, &zkl_callback_args[1 - zkl_callback_arg]);
	UnregisterXactCallback(zkl_xact_callback, &zkl_callback_args[zkl_callback_arg]);
	zkl_callback_arg = 1 - zkl_callback_arg;
	zkl_foreign_since_first = false;
}

/*
 * Whether a plan reads or writes a foreign table, or may write one: a row
 * routed to a foreign partition at run time is in no range table, so a
 * write to a partitioned table counts (a local one writes anyway).
 */
static bool
zkl_plan_uses_foreign(PlannedStmt *plan)
{
	bool		writes = plan->commandType != CMD_SELECT || plan->hasModifyingCTE;
	ListCell   *lc;

	foreach(lc, plan->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->rtekind == RTE_RELATION &&
			(rte->relkind == RELKIND_FOREIGN_TABLE ||
			 (writes && rte->relkind == RELKIND_PARTITIONED_TABLE)))
			return true;
	}
	return false;
}

static void
zkl_executor_start(QueryDesc * queryDesc, int eflags)
{
	if (zkl_plan_uses_foreign(queryDesc->plannedstmt))
	{
		zkl_xact_foreign = true;
		zkl_foreign_since_first = true;
	}
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

static void
zkl_executor_end(QueryDesc * queryDesc)
{
	if (prev_executor_end)
		prev_executor_end(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
	zkl_be_first_at_commit();
}

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

	/*
	 * COMMIT PREPARED and ROLLBACK PREPARED do their work inside this
	 * statement: their own transaction's commit must not then fail for a loss
	 * of the session's other locks (zkl_confirm_before_commit).
	 */
	if (IsA(parsetree, TransactionStmt) &&
		(((TransactionStmt *) parsetree)->kind == TRANS_STMT_COMMIT_PREPARED ||
		 ((TransactionStmt *) parsetree)->kind == TRANS_STMT_ROLLBACK_PREPARED))
		zkl_finishing_prepared = true;

	/*
	 * A foreign schema's import connects to its server; COPY FROM and
	 * TRUNCATE reach a foreign table (or partition) without a plan.  A local
	 * COPY FROM or TRUNCATE writes anyway: counting it as foreign costs
	 * nothing.
	 */
	if (IsA(parsetree, ImportForeignSchemaStmt) ||
		IsA(parsetree, TruncateStmt) ||
		(IsA(parsetree, CopyStmt) && ((CopyStmt *) parsetree)->is_from))
	{
		zkl_xact_foreign = true;
		zkl_foreign_since_first = true;
	}

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params,
							 queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
	if (discard_all)
		zkl_release_all_session(false);
	zkl_be_first_at_commit();
}

void
zkl_backend_init(void)
{
	RegisterXactCallback(zkl_xact_callback, &zkl_callback_args[zkl_callback_arg]);
	RegisterSubXactCallback(zkl_subxact_callback, NULL);
	RegisterResourceReleaseCallback(zkl_resource_release, NULL);
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = zkl_process_utility;
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = zkl_executor_start;
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = zkl_executor_end;
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
		zkl_n_xact_holds == 0 || zkl_shared == NULL || zkl_locks == NULL ||
		zkl_probing_notify)
		return;
	if (isCommit)
		zkl_pass_xact_holds(owner, ResourceOwnerGetParent(owner));
	else
		zkl_release_xact_holds(owner, true);
}

/*
 * Whether the transaction has notifications (or LISTEN, UNLISTEN) waiting
 * for its commit: PostgreSQL queues them after the pre-commit callbacks,
 * giving the transaction an id only then, and a listener sees them once it
 * commits, so they are a durable, visible effect like a write.  async.c
 * keeps its lists to itself and has no function that tells (15 to 18);
 * AtPrepare_Notify refuses a PREPARE exactly when they are not empty, and
 * nothing else, so its refusal is the answer.  It is asked in a
 * subtransaction of its own, as PL/pgSQL runs an exception block: the
 * refusal aborts that subtransaction, which cleans up after the error as
 * after any other, and the commit goes on in the transaction.  errfinish
 * zeroes the interrupt hold-off counts for the handler, which puts back the
 * caller's (errfinish's own advice to a handler inside a hold-off).
 *
 * No subtransaction starts in parallel mode.  A parallel worker can neither
 * notify nor listen; a leader still in parallel mode at its pre-commit
 * (CommitTransaction leaves it after the callbacks) is answered "pending",
 * which costs a wait for proof, never a missed one.
 */
static bool
zkl_notifications_pending(void)
{
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	uint32		holdoff = InterruptHoldoffCount;
	uint32		cancel_holdoff = QueryCancelHoldoffCount;
	volatile bool pending = false;

	if (IsParallelWorker())
		return false;
	if (IsInParallelMode())
		return true;

	zkl_probing_notify = true;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(context);
	PG_TRY();
	{
		AtPrepare_Notify();
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(context);
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		InterruptHoldoffCount = holdoff;
		QueryCancelHoldoffCount = cancel_holdoff;
		pending = true;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(context);
	CurrentResourceOwner = owner;
	zkl_probing_notify = false;
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
		zkl_end_committing();
		zkl_count(commits_refused);
		zkl_report_if_other_session(lock, session);
		zkl_report_if_lost(lock);
	}
}

/*
 * The commit fails when the session that granted a cursor's hold given
 * back on an abort path (zkl_released_session) is not session, the one in
 * use (0: none): the work under that hold may postdate another's grant.
 */
static void
zkl_report_if_released_lost(int64 session)
{
	if (session == 0 || zkl_released_session == 0 || zkl_released_session == session)
		return;
	zkl_end_commit_wait();
	zkl_end_committing();
	zkl_count(commits_refused);
	zkl_note_loss(zkl_released_name);
	ereport(ERROR,
			(errcode(ERRCODE_ZKLOCK_LOST),
			 errmsg("ZooKeeper lock \"%s\" was lost", zkl_released_name),
			 errdetail("A hold of it given back as a cursor's FETCH failed was granted in ZooKeeper session 0x%llx, which has ended; the session in use is 0x%llx.",
					   (unsigned long long) zkl_released_session, (unsigned long long) session),
			 errhint("Another client may have taken the lock; redo the work under a new lock.")));
}

/*
 * COMMIT PREPARED and ROLLBACK PREPARED have done their work by the time
 * their own transaction commits: a loss of the session's other locks is
 * reported as a WARNING, never as an error after the fact.  The lost holds
 * stay known, and are reported as errors where they are next used.
 */
static void
zkl_warn_lost_holds(void)
{
	HASH_SEQ_STATUS seq;
	zkl_local_lock *lock;

	hash_seq_init(&seq, zkl_locks);
	while ((lock = hash_seq_search(&seq)) != NULL)
		if (zkl_lock_is_lost(lock))
			ereport(WARNING,
					(errcode(ERRCODE_ZKLOCK_LOST),
					 errmsg("ZooKeeper lock \"%s\" was lost", lock->key + 1),
					 errdetail("The prepared transaction was finished all the same; it was not under this lock."),
					 errhint("The loss is reported again where the lock is next used.")));
}

/*
 * From the pre-commit check that passed until the transaction ends, the
 * worker takes none of its holds away (a hold limit, a revocation under
 * zklock.on_revoke = cancel): see zkl_take_away.  A take-away that began
 * before the mark is seen by the check that follows it.
 */
static void
zkl_mark_committing(bool committing)
{
	HASH_SEQ_STATUS seq;
	zkl_local_lock *lock;
	bool		deferred = false;

	zkl_committing = committing;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, zkl_locks);
	while ((lock = hash_seq_search(&seq)) != NULL)
	{
		zkl_slot   *slot = &zkl_shared->slots[lock->slotno];

		if (slot->generation != lock->generation)
			continue;
		slot->committing = committing;
		deferred |= slot->take_deferred;
	}
	LWLockRelease(zkl_shared->lock);
	/* A take-away that waited for this commit can go now. */
	if (deferred)
		zkl_wake_worker();
}

/* The transaction ends, however: nothing of it is committing any more. */
static void
zkl_end_committing(void)
{
	if (zkl_committing)
		zkl_mark_committing(false);
}

/* No proof of the session came within its timeout: the commit fails. */
pg_noreturn static void
zkl_report_unconfirmed(int timeout_ms)
{
	HASH_SEQ_STATUS seq;
	zkl_local_lock *lock;
	char		name[ZKL_MAX_NAME_LEN + 1] = "";

	zkl_end_commit_wait();
	zkl_count(commits_refused);
	hash_seq_init(&seq, zkl_locks);
	if ((lock = hash_seq_search(&seq)) != NULL)
	{
		strlcpy(name, lock->key + 1, sizeof(name));
		hash_seq_term(&seq);
	}
	else
		strlcpy(name, zkl_released_name, sizeof(name));
	ereport(ERROR,
			(errcode(ERRCODE_ZKLOCK_LOST),
			 errmsg("could not confirm the ZooKeeper session before commit"),
			 errdetail("No answer from ZooKeeper for %d ms; this session's ZooKeeper locks (\"%s\" among them) may have passed to another holder.",
					   timeout_ms, name),
			 errhint("Check that ZooKeeper at zklock.hosts (\"%s\") is reachable and the zklock worker is running.",
					 zkl_hosts)));
}

/*
 * Whether the commit makes anything durable or visible that needs the
 * proof: a local transaction id, notifications waiting for the commit, or a
 * foreign table used (its server commits at our commit, with no local id to
 * show for it).  A transaction that wrote nothing makes nothing durable or
 * visible: a known loss is still reported, but there is nothing to protect
 * by waiting for proof, and a read-only statement of a lock holder must not
 * stall while ZooKeeper is away.  *notifies: notifications are pending.
 */
static bool
zkl_commit_needs_proof(bool *notifies)
{
	*notifies = zkl_notifications_pending();
	return *notifies || zkl_xact_foreign ||
		TransactionIdIsValid(GetTopTransactionIdIfAny());
}

/*
 * PostgreSQL queues notifications after the pre-commit callbacks, under the
 * heavyweight lock that serialises every database's notifying commits,
 * which another may hold as long as its own commit lasts (a synchronous
 * standby away).  A wait there after the proof would let the proof grow
 * old: the lock is taken here, after the proof (never during a wait for
 * it: every notifying commit of the cluster would wait too), exactly as
 * PreCommit_Notify takes it (which then finds it held), and the proof is
 * looked at again; when it ran out meanwhile, the lock is let go while a
 * fresh one comes (false).  Not in a transaction that used a foreign
 * table: a remote side in this cluster that notifies would wait for the
 * lock as postgres_fdw commits it, a deadlock no detector sees; the wait
 * stays after the proof there (doc/failures.md).
 */
static bool
zkl_lock_notify_queue_proven(void)
{
	int64		session;
	bool		proven;

	if (zkl_xact_foreign)
		return true;
	LockSharedObject(DatabaseRelationId, InvalidOid, 0, AccessExclusiveLock);
	proven = zkl_session_proven(NULL, NULL, &session);
	zkl_report_lost_holds(session);
	zkl_report_if_released_lost(session);
	if (!proven)
		UnlockSharedObject(DatabaseRelationId, InvalidOid, 0, AccessExclusiveLock);
	return proven;
}

/*
 * Wait for proof of the session in use, at most one session timeout;
 * every look first reports a hold that is lost or of another session.
 * Returns when the session is proven, or at once when needs_proof is false.
 */
static void
zkl_await_proof(bool needs_proof)
{
	int64		start = 0;		/* zkl_now()'s clock (clock.h) */
	int64		deadline = 0;

	for (;;)
	{
		int			timeout_ms;
		int64		session;
		bool		proven;
		int64		now;

		proven = zkl_session_proven(&timeout_ms, NULL, &session);
		zkl_report_lost_holds(session);
		zkl_report_if_released_lost(session);
		if (!needs_proof || proven)
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
	if (start != 0)
		ereport(LOG,
				(errmsg("commit waited %ld ms for the ZooKeeper session to be confirmed",
						(long) ((zkl_now() - start) / 1000))));
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
	bool		needs_proof;
	bool		notifies;

	if (zkl_finishing_prepared)
	{
		zkl_warn_lost_holds();
		return;
	}
	if (zkl_lost_in_xact[0] != '\0')
	{
		zkl_count(commits_refused);
		ereport(ERROR,
				(errcode(ERRCODE_ZKLOCK_LOST),
				 errmsg("ZooKeeper lock \"%s\" was lost in this transaction", zkl_lost_in_xact),
				 errdetail("Its loss was reported earlier in the transaction and caught there; a transaction cannot commit after one of its session's locks was lost."),
				 errhint("Roll back the transaction and redo the work under a new lock.")));
	}
	if (hash_get_num_entries(zkl_locks) == 0 && zkl_released_session == 0)
		return;

	needs_proof = zkl_commit_needs_proof(&notifies);
	do
	{
		zkl_await_proof(needs_proof);
	} while (notifies && !zkl_lock_notify_queue_proven());

	/*
	 * Proven: from here to the transaction's end nothing of zklock's takes a
	 * hold away; one taken away before the mark fails the commit now.
	 */
	zkl_mark_committing(true);
	zkl_report_lost_holds(0);
	zkl_end_commit_wait();
}

/*
 * The transaction ends: its marks go, even in a backend that has used no
 * lock yet (a COMMIT PREPARED must not spare the next commit's check).
 */
static void
zkl_forget_xact_marks(void)
{
	zkl_lost_in_xact[0] = '\0';
	zkl_released_session = 0;
	zkl_xact_foreign = false;
	zkl_finishing_prepared = false;
	zkl_probing_notify = false;
}

static void
zkl_xact_callback(XactEvent event, void *arg)
{
	if (zkl_shared == NULL || zkl_locks == NULL)
	{
		if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
			event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
			event == XACT_EVENT_PREPARE)
			zkl_forget_xact_marks();
		return;
	}

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
			zkl_end_committing();
			zkl_forget_fence_rows();
			zkl_cancel_wait(true);
			zkl_release_xact_holds(NULL, false);
			zkl_forget_xact_marks();
			break;
		default:
			break;
	}
}

static void
zkl_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					 SubTransactionId parentSubid, void *arg)
{
	if (zkl_shared == NULL || zkl_locks == NULL || zkl_probing_notify)
		return;
	/* The holds themselves follow their resource owners. */
	if (event == SUBXACT_EVENT_ABORT_SUB)
		zkl_cancel_wait(true);
}
