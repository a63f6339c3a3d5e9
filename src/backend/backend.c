/*-------------------------------------------------------------------------
 *
 * backend.c
 *		What a backend does with zklock locks: post requests to the worker,
 *		wait for them, count reentrant holds by scope, and give locks back at
 *		release, transaction end, savepoint rollback and exit.
 *
 * A backend has at most one slot per lock name and mode; repeated acquires
 * stack on it as counts, kept apart for session and transaction scope, like
 * advisory locks.  The shared and the exclusive hold of one name are two
 * slots, two nodes in ZooKeeper, that never wait for each other.
 *
 * A transaction-scope hold belongs to the resource owner current when it was
 * taken, exactly as pg_advisory_xact_lock's lock does: a subtransaction that
 * commits passes it to its parent, one that aborts gives it back, and a
 * cursor's holds belong to its portal, whatever savepoint it was fetched in.
 * The whole transaction's holds go at its end.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "access/xact.h"
#include "common/int.h"
#include "access/xlog.h"
#include "commands/dbcommands.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/postmaster.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "commands/async.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "backend/backend.h"
#include "rules/clock.h"
#include "pg_compat.h"
#include "rules/slot_quota.h"
#include "shared/stats.h"
#include "names/encode.h"

StaticAssertDecl(ZKL_STATS_NAME_LEN == ZKL_MAX_NAME_LEN,
				 "zk_lock_stats keeps whole lock names");

/* Hash key: 'x' or 's' for the mode, then the lock name. */
#define ZKL_KEY_LEN		(ZKL_MAX_NAME_LEN + 2)

/* This backend's slots, by mode and lock name. */
typedef struct zkl_local_lock
{
	char		key[ZKL_KEY_LEN];	/* mode letter, then the name */
	int			slotno;
	uint32		generation;
	int32		session_count;
	int32		xact_count;
	int64		token;
	TimestampTz granted_at;		/* for zk_lock_stats' hold time; 0 when
								 * zklock.track_stats was off then */
} zkl_local_lock;

/* One transaction-scope acquire, and the resource owner it belongs to. */
typedef struct zkl_xact_hold
{
	char		key[ZKL_KEY_LEN];
	ResourceOwner owner;
} zkl_xact_hold;

static HTAB *zkl_locks = NULL;
static zkl_xact_hold *zkl_xact_holds = NULL;
static int	zkl_n_xact_holds = 0;
static int	zkl_max_xact_holds = 0;
static bool zkl_exit_registered = false;
static bool zkl_commit_waiting = false; /* our slots say commit_waiting */

/*
 * A lock whose loss this transaction was told of (ZK002): it may not commit,
 * even when a savepoint or an exception block caught the error.  Empty when
 * none; cleared when the top-level transaction ends.
 */
static char zkl_lost_in_xact[ZKL_MAX_NAME_LEN + 1];

/* A deadlock check is reading: its reads take reserve slots. */
bool		zkl_checking = false;

/* The request this backend is waiting for, if any. */
static int	zkl_wait_slotno = -1;
static uint32 zkl_wait_generation = 0;

/* A read or revocation asked of the worker meanwhile (zkl_ask_worker). */
static int	zkl_ask_slotno = -1;
static uint32 zkl_ask_generation = 0;

/* The publication of the wait, once it lasted deadlock_timeout. */
static int	zkl_pub_slotno = -1;
static uint32 zkl_pub_generation = 0;
static int64 zkl_pub_token = 0; /* czxid of the request it names */

/*
 * The request being waited for, as zk_lock_stats will count it (stats.c):
 * whether it found another holder ahead, and when it was asked.  Counted
 * once, by how the wait ends; active is false when nothing is pending.
 */
static struct
{
	bool		active;
	bool		xact;
	bool		behind;
	char		kind;
	TimestampTz start;
	char		name[ZKL_MAX_NAME_LEN + 1];
}			zkl_stats_req;

static void zkl_xact_callback(XactEvent event, void *arg);
static void zkl_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
								 SubTransactionId parentSubid, void *arg);
static void zkl_resource_release(ResourceReleasePhase phase, bool isCommit,
								 bool isTopLevel, void *arg);
static void zkl_backend_exit(int code, Datum arg);
static void zkl_forget_xact_holds(const char *key);
static void zkl_stats_hold_end(zkl_local_lock *lock, bool lost);
static int	zkl_claim_slot(const char *name, const char *dir, TimestampTz start, bool reserve,
						   bool quiet);

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
		zkl_release_all_session();
}

void
zkl_backend_init(void)
{
	RegisterXactCallback(zkl_xact_callback, NULL);
	RegisterSubXactCallback(zkl_subxact_callback, NULL);
	RegisterResourceReleaseCallback(zkl_resource_release, NULL);
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = zkl_process_utility;
}

static void
zkl_local_init(void)
{
	HASHCTL		ctl;

	if (zkl_locks != NULL)
		return;
	ctl.keysize = ZKL_KEY_LEN;
	ctl.entrysize = sizeof(zkl_local_lock);
	zkl_locks = hash_create("zklock local locks", 64, &ctl, HASH_ELEM | HASH_STRINGS);
	if (!zkl_exit_registered)
	{
		before_shmem_exit(zkl_backend_exit, 0);
		zkl_exit_registered = true;
	}
}

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

static void
zkl_make_key(char *key, const char *name, zkl_mode mode)
{
	key[0] = (char) mode;
	strlcpy(key + 1, name, ZKL_KEY_LEN - 1);
}

/* A request was posted: its outcome will be counted (zkl_stats_end). */
static void
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
static TimestampTz
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

#define zkl_stats_forget()	((void) zkl_stats_end(ZKL_STATS_HOLD_END))

static zkl_local_lock *
zkl_find_local(const char *name, zkl_mode mode)
{
	char		key[ZKL_KEY_LEN];

	if (zkl_locks == NULL)
		return NULL;
	zkl_make_key(key, name, mode);
	return hash_search(zkl_locks, key, HASH_FIND, NULL);
}

static void
zkl_random_uuid(char *out)
{
	uint8		b[16];

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

static void
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

/* The node's data: who is asking, for any ZooKeeper client to read. */
static void
zkl_describe_holder(char *out, zkl_mode mode, bool xact, TimestampTz now)
{
	StringInfoData buf;
	char		host[256];
	char	   *dbname = get_database_name(MyDatabaseId);

	zkl_host_name(host, sizeof(host));

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	zkl_json_field(&buf, "cluster", cluster_name);
	appendStringInfo(&buf, ",\"system_identifier\":\"" UINT64_FORMAT "\"", GetSystemIdentifier());
	zkl_json_field(&buf, "host", host);
	appendStringInfo(&buf, ",\"port\":%d,\"pid\":%d", PostPortNumber, MyProcPid);
	zkl_json_field(&buf, "database", dbname);
	zkl_json_field(&buf, "user", GetUserNameFromId(GetUserId(), false));
	zkl_json_field(&buf, "application_name", application_name);
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
 * Ask the worker to give up a slot: cancel a wait or release a hold; with
 * only_waiting, only a request still waiting, in one step with the test.
 * Returns whether it was given up.
 */
static bool
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
				zkl_queue_push(slotno);
				break;
			case ZKL_SLOT_FAILED:
			case ZKL_SLOT_LOST:
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
static void
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
 * A hold ends (its slot is about to be given back): count its time, and
 * how it ended, as its slot says: lost (the worker found its node gone, or
 * took it away: revoked under zklock.on_revoke = cancel, or held past
 * zklock.max_hold_time), asked to give the lock up, or neither.  lost: it
 * is known lost whatever the slot says (granted in an ended session).
 */
static void
zkl_stats_hold_end(zkl_local_lock *lock, bool lost)
{
	zkl_slot   *slot = &zkl_shared->slots[lock->slotno];
	zkl_stats_sample sample = {0};
	zkl_take_reason reason = ZKL_TAKE_NONE;
	TimestampTz now = GetCurrentTimestamp();

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	if (slot->generation == lock->generation)
	{
		reason = slot->take_reason;
		lost = lost || slot->state == ZKL_SLOT_LOST || reason != ZKL_TAKE_NONE;
		sample.revoked = slot->revoke_requested;
	}
	LWLockRelease(zkl_shared->lock);

	sample.event = ZKL_STATS_HOLD_END;
	sample.hold_ms = Max(now - lock->granted_at, 0) / 1000.0;
	sample.end = reason == ZKL_TAKE_HOLD_LIMIT ? ZKL_STATS_HOLD_LIMIT :
		lost ? ZKL_STATS_LOST : ZKL_STATS_RELEASED;
	zkl_stats_count(lock->key + 1, lock->key[0], &sample, now);
}

/*
 * Give a lock's slot back and forget it: its entry, and every transaction
 * hold of it, so that no count of a later hold of the same name can be
 * taken down by a hold of this one.
 */
static void
zkl_drop_local_as(zkl_local_lock *lock, bool lost)
{
	if (lock->granted_at != 0 && zkl_stats_enabled())
		zkl_stats_hold_end(lock, lost);
	(void) zkl_give_up(lock->slotno, lock->generation, false, false);
	zkl_forget_xact_holds(lock->key);
	hash_search(zkl_locks, lock->key, HASH_REMOVE, NULL);
}

static void
zkl_drop_local(zkl_local_lock *lock)
{
	zkl_drop_local_as(lock, false);
}

static void
zkl_update_slot_counts(zkl_local_lock *lock)
{
	zkl_slot   *slot = &zkl_shared->slots[lock->slotno];

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (slot->generation == lock->generation)
	{
		slot->session_count = lock->session_count;
		slot->xact_count = lock->xact_count;
	}
	LWLockRelease(zkl_shared->lock);
}

/*
 * A hold's counts changed: its node is given up once both are zero.  An
 * exclusive node stays while the backend holds the lock shared by a read
 * taken after it: that read was held at once, whatever writer was queued
 * between the two nodes (lock_rule.c), and the writer would otherwise take
 * the lock beside it.  The kept node goes with the last shared hold, or,
 * when cascade is false (a scan of zkl_locks is under way, which may only
 * remove its current entry), by zkl_drop_kept_exclusive afterwards.
 */
static void
zkl_settle_local(zkl_local_lock *lock, bool cascade)
{
	char		name[ZKL_KEY_LEN];
	zkl_mode	mode = (zkl_mode) lock->key[0];
	zkl_local_lock *other;

	if (lock->session_count > 0 || lock->xact_count > 0)
	{
		zkl_update_slot_counts(lock);
		return;
	}
	strlcpy(name, lock->key + 1, sizeof(name));
	if (mode == ZKL_MODE_EXCLUSIVE)
	{
		other = zkl_find_local(name, ZKL_MODE_SHARED);
		if (other != NULL && other->token > lock->token)
		{
			zkl_update_slot_counts(lock);
			return;
		}
	}
	zkl_drop_local(lock);
	if (mode == ZKL_MODE_SHARED && cascade)
	{
		other = zkl_find_local(name, ZKL_MODE_EXCLUSIVE);
		if (other != NULL && other->session_count == 0 && other->xact_count == 0)
			zkl_drop_local(other);
	}
}

/* Give up every exclusive node kept for a shared hold that is gone. */
static void
zkl_drop_kept_exclusive(void)
{
	HASH_SEQ_STATUS seq;
	zkl_local_lock *lock;

	hash_seq_init(&seq, zkl_locks);
	while ((lock = hash_seq_search(&seq)) != NULL)
		if ((zkl_mode) lock->key[0] == ZKL_MODE_EXCLUSIVE &&
			lock->session_count == 0 && lock->xact_count == 0 &&
			zkl_find_local(lock->key + 1, ZKL_MODE_SHARED) == NULL)
			zkl_drop_local(lock);
}

static void
zkl_remember_xact_hold(const char *key)
{
	if (zkl_n_xact_holds == zkl_max_xact_holds)
	{
		zkl_max_xact_holds = Max(16, zkl_max_xact_holds * 2);
		zkl_xact_holds = zkl_xact_holds
			? repalloc(zkl_xact_holds, sizeof(zkl_xact_hold) * zkl_max_xact_holds)
			: MemoryContextAlloc(TopMemoryContext, sizeof(zkl_xact_hold) * zkl_max_xact_holds);
	}
	strlcpy(zkl_xact_holds[zkl_n_xact_holds].key, key, ZKL_KEY_LEN);
	zkl_xact_holds[zkl_n_xact_holds].owner =
		CurrentResourceOwner ? CurrentResourceOwner : CurTransactionResourceOwner;
	zkl_n_xact_holds++;
}

/* Remove the transaction holds of key (the lock itself is gone). */
static void
zkl_forget_xact_holds(const char *key)
{
	int			kept = 0;

	for (int i = 0; i < zkl_n_xact_holds; i++)
		if (strcmp(zkl_xact_holds[i].key, key) != 0)
			zkl_xact_holds[kept++] = zkl_xact_holds[i];
	zkl_n_xact_holds = kept;
}

/*
 * The loss of name is being reported to this transaction: remember it, so
 * that the transaction cannot commit whoever catches the error.
 */
static void
zkl_note_loss(const char *name)
{
	if (IsTransactionState() && zkl_lost_in_xact[0] == '\0')
		strlcpy(zkl_lost_in_xact, name, sizeof(zkl_lost_in_xact));
}

static void
zkl_count_hold(zkl_local_lock *lock, bool xact, const char *key)
{
	if (xact)
	{
		lock->xact_count++;
		zkl_remember_xact_hold(key);
	}
	else
		lock->session_count++;
	zkl_update_slot_counts(lock);
}

static bool
zkl_lock_is_lost(zkl_local_lock *lock)
{
	zkl_slot   *slot = &zkl_shared->slots[lock->slotno];
	bool		lost;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	lost = slot->generation == lock->generation &&
		(slot->state == ZKL_SLOT_LOST ||
		 (slot->state == ZKL_SLOT_HELD && slot->take_reason != ZKL_TAKE_NONE));
	LWLockRelease(zkl_shared->lock);
	return lost;
}

/* Report a lock that the worker found lost, once, and forget it. */
static void
zkl_report_if_lost(zkl_local_lock *lock)
{
	char		name[ZKL_MAX_NAME_LEN + 1];
	zkl_take_reason reason;
	int			max_hold_ms;
	zkl_slot   *slot = &zkl_shared->slots[lock->slotno];

	if (!zkl_lock_is_lost(lock))
		return;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	reason = slot->take_reason;
	max_hold_ms = slot->max_hold_ms;
	LWLockRelease(zkl_shared->lock);
	strlcpy(name, lock->key + 1, sizeof(name));
	zkl_drop_local(lock);
	/* An exclusive node kept for a lost shared hold goes too. */
	zkl_drop_kept_exclusive();
	zkl_note_loss(name);
	ereport(ERROR,
			(errcode(ERRCODE_ZKLOCK_LOST),
			 errmsg("ZooKeeper lock \"%s\" was lost", name),
			 reason == ZKL_TAKE_REVOKED ?
			 errdetail("Its holder was asked to give it up (zk_lock_revoke), and zklock.on_revoke is \"cancel\".") :
			 reason == ZKL_TAKE_HOLD_LIMIT ?
			 errdetail("It was held longer than zklock.max_hold_time (%d ms) and given up.", max_hold_ms) :
			 errdetail("Its ZooKeeper node vanished while this session held it: the session expired or the node was deleted."),
			 errhint("Another client may have taken the lock; redo the work under a new lock.")));
}

/*
 * Milliseconds from now to deadline, rounded up, for WaitLatch: never more
 * than INT_MAX, which is what the kernel's wait takes.
 */
static long
zkl_ms_until(TimestampTz deadline, TimestampTz now)
{
	int64		ms = (deadline - now + 999) / 1000;

	return (long) Min(Max(ms, 0), PG_INT32_MAX);
}

/*
 * start plus ms, or 0 (no deadline) when that lies beyond the last
 * timestamp there is: such a timeout cannot expire, it means "for ever".
 */
static TimestampTz
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
static int
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
 */
static int
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

	/*
	 * From the moment a slot is posted this backend must give it back on
	 * every way out: the exit hook and the transaction callbacks need the
	 * local table to exist.
	 */
	zkl_local_init();

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
static uint32
zkl_submit_slot(int slotno)
{
	uint32		generation = zkl_shared->slots[slotno].generation;

	zkl_queue_push(slotno);
	LWLockRelease(zkl_shared->lock);
	zkl_wake_worker();
	return generation;
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

	zkl_require_shmem();
	/* Never a lock slot: reads and revocations work when those run out. */
	slotno = zkl_claim_slot(name, dir, start, true, zkl_checking);
	/* No reserve slot: the check reads nothing here, which adds no edge. */
	if (slotno < 0)
		return ZKL_RC_NO_SLOT;
	slot = &zkl_shared->slots[slotno];
	slot->inspect = true;
	slot->op = op;
	slot->reply_handle = reply;
	/* The holder's node is another's: never the slot's own (slot->node). */
	if (node)
		strlcpy(slot->target, node, sizeof(slot->target));
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

		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		state = slot->state;
		zk_rc = slot->zk_rc;
		session = zkl_shared->session_state;
		since = zkl_shared->disconnected_since;
		LWLockRelease(zkl_shared->lock);

		if (state == ZKL_SLOT_HELD || state == ZKL_SLOT_FAILED)
		{
			zkl_ask_slotno = -1;
			LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
			if (slot->generation == generation)
				zkl_slot_clear(slot);
			LWLockRelease(zkl_shared->lock);

			/*
			 * A holder's node that refuses our write: the caller says so.  A
			 * deadlock check that cannot read a directory sees no edge in it
			 * (as without a reserve slot): the wait goes on, bounded by its
			 * timeout, instead of failing for the check's sake.
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
		 * A session the worker cannot prove alive (a frozen worker, a silent
		 * server) is no better than none: the answer is waited for
		 * zklock.connect_timeout past the proof's end, then given up.
		 */
		usable = session == ZKL_SESSION_CONNECTED && zkl_session_proven(NULL, &proof_until, NULL);
		if (session == ZKL_SESSION_CONNECTED)
			since = proof_until;
		conn_deadline = TimestampTzPlusMilliseconds(Max(start, since), zkl_connect_timeout);
		if (!usable && GetCurrentTimestamp() >= conn_deadline)
		{
			zkl_cancel_wait(false);
			ereport(ERROR,
					(errcode(ERRCODE_ZKLOCK_UNAVAILABLE),
					 errmsg("could not reach ZooKeeper for lock \"%s\"", name),
					 session == ZKL_SESSION_CONNECTED ?
					 errdetail("No answer from ZooKeeper for %d ms past the session's last proof (zklock.connect_timeout).", zkl_connect_timeout) :
					 errdetail("No ZooKeeper session for %d ms (zklock.connect_timeout).", zkl_connect_timeout),
					 errhint("Check that zklock.hosts (\"%s\") lists running ZooKeeper servers.", zkl_hosts)));
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 zkl_ms_until(usable ? proof_until : conn_deadline, GetCurrentTimestamp()),
						 zkl_wait_event(usable ? ZKL_WAIT_WORKER : ZKL_WAIT_SESSION));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

pg_noreturn static void zkl_report_failed(const char *name, const char *dir, int zk_rc);
pg_noreturn static void zkl_report_timeout(const char *name, int64 timeout_ms,
										   bool connected, bool behind);
pg_noreturn static void zkl_report_no_session(const char *name, int64 try_wait_ms);
static void zkl_report_deadlock(const char *name, int slotno, uint32 generation,
								const char *cycle);

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
				 errhint("Check that zklock.hosts (\"%s\") lists running ZooKeeper servers.", zkl_hosts)));
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not obtain ZooKeeper lock \"%s\"", name),
			 errdetail("Gave up after waiting %ld ms for another holder to release it.",
					   (long) timeout_ms)));
}

/*
 * This request is the victim of a cycle of waits (deadlock.c): it gives up,
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
			 errhint("Check that zklock.hosts (\"%s\") lists running ZooKeeper servers.", zkl_hosts)));
}

/*
 * Wait for the worker's outcome of a posted request: true when granted
 * (the token in *token), false when a try found another holder.  Every
 * error gives the request up first, so no contender node outlives it.
 * deadline bounds the wait behind other holders, the session waits by
 * zklock.connect_timeout and session_wait_ms (see zkl_request).
 */
static bool
zkl_await_grant(const char *name, const char *dir, int slotno, uint32 generation,
				bool try_only, bool detect, TimestampTz start, TimestampTz deadline,
				int64 timeout_ms, int64 session_wait_ms, int64 *token)
{
	zkl_slot   *slot = &zkl_shared->slots[slotno];

	/*
	 * A wait that lasts deadlock_timeout looks for a cycle, and again after
	 * each.
	 */
	TimestampTz next_check = detect && DeadlockTimeout > 0 ?
	TimestampTzPlusMilliseconds(start, DeadlockTimeout) : 0;

	for (;;)
	{
		zkl_slot_state state;
		zkl_session_state session;
		TimestampTz since;
		TimestampTz now;
		TimestampTz wake = 0;
		TimestampTz proof_until;
		int			zk_rc;
		bool		behind;
		int			rc;

		LWLockAcquire(zkl_shared->lock, LW_SHARED);
		/* A try that found a holder may be deleted and freed before we look. */
		state = slot->generation == generation ? slot->state : ZKL_SLOT_BUSY;
		zk_rc = slot->zk_rc;
		behind = slot->behind;
		*token = slot->token;
		session = zkl_shared->session_state;
		since = zkl_shared->disconnected_since;
		LWLockRelease(zkl_shared->lock);

		/* zk_lock_stats counts the wait of a request found behind another. */
		if (behind)
			zkl_stats_req.behind = true;
		if (state == ZKL_SLOT_HELD)
			return true;
		if (state == ZKL_SLOT_BUSY)
		{
			/* The worker deletes the node and frees the slot. */
			zkl_wait_slotno = -1;
			zkl_end_publication();
			if (!try_only)
				elog(ERROR, "zklock slot %d was taken away from a waiting request", slotno);
			return false;
		}
		if (state == ZKL_SLOT_FAILED)
			zkl_report_failed(name, dir, zk_rc);

		/*
		 * The timeout is for waiting: it ends the request when ZooKeeper is
		 * out of reach, or once the worker found another holder ahead of it.
		 * Before ZooKeeper's first answer nothing is known to be in the way
		 * (a free lock takes one round trip), so that answer is waited for as
		 * long as the session is proven alive; a frozen worker or a silent
		 * server ends the request when the proof runs out.
		 */
		now = GetCurrentTimestamp();
		proof_until = 0;
		if (deadline != 0 && now >= deadline &&
			(behind || session != ZKL_SESSION_CONNECTED || !zkl_session_proven(NULL, &proof_until, NULL)))
			zkl_report_timeout(name, timeout_ms, session == ZKL_SESSION_CONNECTED, behind);
		if (deadline != 0)
			wake = now < deadline ? deadline : proof_until;

		if (next_check != 0 && now >= next_check)
		{
			/* Without a session there is nothing to read: look again later. */
			char	   *cycle = session == ZKL_SESSION_CONNECTED ?
			zkl_deadlock_check(slotno, generation, name) : NULL;

			if (cycle)
				zkl_report_deadlock(name, slotno, generation, cycle);
			now = GetCurrentTimestamp();
			next_check = TimestampTzPlusMilliseconds(now, DeadlockTimeout);
			/* What happened meanwhile is looked at before sleeping. */
			continue;
		}
		if (next_check != 0 && (wake == 0 || next_check < wake))
			wake = next_check;

		if (session != ZKL_SESSION_CONNECTED)
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
		}

		rc = WaitLatch(MyLatch,
					   WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | (wake ? WL_TIMEOUT : 0),
					   wake ? zkl_ms_until(wake, now) : -1,
					   zkl_wait_event(session == ZKL_SESSION_CONNECTED ?
									  ZKL_WAIT_LOCK : ZKL_WAIT_SESSION));
		if (rc & WL_LATCH_SET)
			ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
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
	TimestampTz start = GetCurrentTimestamp();
	TimestampTz deadline = timeout_ms > 0 ? zkl_deadline_after(start, timeout_ms) : 0;
	char	   *dir = zkl_lock_dir(name, strlen(name));
	char		key[ZKL_KEY_LEN];

	zkl_local_init();
	zkl_make_key(key, name, mode);

	lock = hash_search(zkl_locks, key, HASH_FIND, &found);
	if (found)
	{
		zkl_report_if_lost(lock);
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
	if (!zkl_await_grant(name, dir, slotno, generation, try_only,
						 !try_only && mode != ZKL_MODE_SEMAPHORE, start, deadline, timeout_ms,
						 session_wait_ms, token))
	{
		/* A try that found a holder: neither granted nor a wait. */
		zkl_stats_forget();
		return false;
	}

	/*
	 * Known to the local table before it stops being the wait: no gap to leak
	 * it.
	 */
	lock = hash_search(zkl_locks, key, HASH_ENTER, &found);
	lock->slotno = slotno;
	lock->generation = generation;
	lock->session_count = xact ? 0 : 1;
	lock->xact_count = 0;
	lock->token = *token;
	lock->granted_at = zkl_stats_end(ZKL_STATS_GRANTED);
	zkl_wait_slotno = -1;
	zkl_end_publication();
	if (xact)
	{
		lock->xact_count = 1;
		zkl_remember_xact_hold(key);
	}
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
 * A lock taken in a parallel worker would belong to that worker, which gives
 * it back when it exits, while the leader goes on as if it held the lock; a
 * release there would give back nothing of the leader's.  zklock's functions
 * are PARALLEL UNSAFE, so only a wrapper declared PARALLEL SAFE gets here:
 * refuse it, as PostgreSQL refuses writes during a parallel operation.
 */
static void
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
 * Turn the newest transaction-scope hold of an exclusive lock into a
 * session-scope one.
 */
static void
zkl_hold_for_session(const char *name)
{
	zkl_local_lock *lock = zkl_find_local(name, ZKL_MODE_EXCLUSIVE);

	for (int i = zkl_n_xact_holds - 1; i >= 0; i--)
	{
		if (strcmp(zkl_xact_holds[i].key, lock->key) != 0)
			continue;
		memmove(&zkl_xact_holds[i], &zkl_xact_holds[i + 1],
				sizeof(zkl_xact_hold) * (zkl_n_xact_holds - i - 1));
		zkl_n_xact_holds--;
		break;
	}
	lock->xact_count--;
	lock->session_count++;
	zkl_update_slot_counts(lock);
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
	if (!xact)
		for (int i = 0; i < ndistinct; i++)
			zkl_hold_for_session(order[i]);

	for (int i = 0; i < n; i++)
	{
		const char **hit = bsearch(&names[i], order, ndistinct, sizeof(char *), zkl_cmp_names);

		tokens[i] = order_tokens[hit - order];
	}
	pfree(order);
	pfree(order_tokens);
}

/* Release one session-scope hold; false plus a warning when there is none. */
bool
zkl_release_session(text *name, zkl_mode mode)
{
	char		key[ZKL_MAX_NAME_LEN + 1];
	zkl_local_lock *lock;

	zkl_require_shmem();
	zkl_refuse_parallel();
	zkl_name_key(name, key);
	lock = zkl_find_local(key, mode);
	if (lock == NULL || lock->session_count == 0)
	{
		ereport(WARNING,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 mode == ZKL_MODE_SHARED ? errmsg("you don't own a shared ZooKeeper lock named \"%s\"", key) :
				 mode == ZKL_MODE_SEMAPHORE ? errmsg("you don't own a permit of ZooKeeper semaphore \"%s\"", key) :
				 errmsg("you don't own a ZooKeeper lock named \"%s\"", key)));
		return false;
	}
	lock->session_count--;
	zkl_settle_local(lock, true);
	return true;
}

void
zkl_release_all_session(void)
{
	HASH_SEQ_STATUS seq;
	zkl_local_lock *lock;

	zkl_require_shmem();
	zkl_refuse_parallel();
	if (zkl_locks == NULL)
		return;
	hash_seq_init(&seq, zkl_locks);
	while ((lock = hash_seq_search(&seq)) != NULL)
	{
		if (lock->session_count == 0)
			continue;
		lock->session_count = 0;
		zkl_settle_local(lock, false);
	}
	zkl_drop_kept_exclusive();
}

/*
 * This backend's hold of name (exclusive first), whether its slot holds it
 * now, and the session that granted it; NULL when it holds neither mode.
 */
static zkl_local_lock *
zkl_held_lock(text *name, bool *held, int64 *granted)
{
	char		key[ZKL_MAX_NAME_LEN + 1];
	zkl_local_lock *lock;
	zkl_slot   *slot;

	zkl_require_shmem();
	zkl_name_key(name, key);
	lock = zkl_find_local(key, ZKL_MODE_EXCLUSIVE);
	if (lock == NULL)
		lock = zkl_find_local(key, ZKL_MODE_SHARED);
	if (lock == NULL)
		return NULL;

	slot = &zkl_shared->slots[lock->slotno];
	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	/* A hold given up by the worker (revoked, over its limit) is lost. */
	*held = slot->generation == lock->generation && slot->state == ZKL_SLOT_HELD &&
		slot->take_reason == ZKL_TAKE_NONE;
	*granted = *held ? slot->granted_session : 0;
	LWLockRelease(zkl_shared->lock);
	return lock;
}

/* The fencing token of a lock this backend holds (exclusive first), or false. */
bool
zkl_held_token(text *name, int64 *token)
{
	bool		held;
	int64		granted;
	zkl_local_lock *lock = zkl_held_lock(name, &held, &granted);

	if (lock == NULL)
		return false;
	*token = lock->token;
	return held;
}

/*
 * Whether this backend holds name and the session that granted the hold is
 * proven alive now, as a commit needs it (zk_lock_check).  The hold is read
 * before the proof, and the proof must be of the granting session: one
 * that expired and was replaced in between proves nothing about it.
 */
bool
zkl_held_proven(text *name)
{
	bool		held;
	int64		granted;
	int64		session;

	if (zkl_held_lock(name, &held, &granted) == NULL || !held)
		return false;
	return zkl_session_proven(NULL, NULL, &session) && session == granted;
}

/*
 * Give back the transaction-scope holds that belong to owner, newest first;
 * NULL: every one (the transaction ends).  A hold settled may drop its lock
 * and, with it, other holds of the array: each round looks again.
 */
static void
zkl_release_xact_holds(ResourceOwner owner)
{
	for (;;)
	{
		int			i = zkl_n_xact_holds - 1;
		char		key[ZKL_KEY_LEN];
		zkl_local_lock *lock;

		while (i >= 0 && owner != NULL && zkl_xact_holds[i].owner != owner)
			i--;
		if (i < 0)
			break;
		strlcpy(key, zkl_xact_holds[i].key, sizeof(key));
		memmove(&zkl_xact_holds[i], &zkl_xact_holds[i + 1],
				sizeof(zkl_xact_hold) * (zkl_n_xact_holds - i - 1));
		zkl_n_xact_holds--;
		lock = hash_search(zkl_locks, key, HASH_FIND, NULL);
		if (lock == NULL || lock->xact_count <= 0)
			continue;
		lock->xact_count--;
		zkl_settle_local(lock, true);
	}
}

/* Our slots say fence_row: forgotten when the transaction ends. */
static bool zkl_fence_rows = false;

/*
 * This transaction has locked the fence row of name (fence.c) with the
 * token of its hold of lock name: should the lock be lost while the
 * transaction lasts, the worker ends this backend (zkl_mark_lost), so that
 * a stale holder idle in its transaction never keeps the row from the next
 * holder.  A lock lost already is reported now, before the row is kept.
 */
void
zkl_note_fence_row(text *name)
{
	bool		held;
	int64		granted;
	bool		lost;
	zkl_local_lock *lock = zkl_held_lock(name, &held, &granted);
	zkl_slot   *slot;

	if (lock == NULL)
		return;
	slot = &zkl_shared->slots[lock->slotno];
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	lost = slot->generation != lock->generation || slot->state != ZKL_SLOT_HELD;
	if (!lost)
	{
		slot->fence_row = true;
		zkl_fence_rows = true;
	}
	LWLockRelease(zkl_shared->lock);
	if (lost)
		zkl_report_if_lost(lock);
}

/* The transaction ended: its fence rows are no longer locked. */
static void
zkl_forget_fence_rows(void)
{
	HASH_SEQ_STATUS seq;
	zkl_local_lock *lock;

	if (!zkl_fence_rows)
		return;
	zkl_fence_rows = false;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, zkl_locks);
	while ((lock = hash_seq_search(&seq)) != NULL)
	{
		zkl_slot   *slot = &zkl_shared->slots[lock->slotno];

		if (slot->generation == lock->generation)
			slot->fence_row = false;
	}
	LWLockRelease(zkl_shared->lock);
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
	int64		now = zkl_now();
	int			timeout;
	int64		session_id;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
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
		HASH_SEQ_STATUS seq;
		zkl_local_lock *lock;
		int			timeout_ms;
		int64		session;
		bool		proven;
		int64		now;

		proven = zkl_session_proven(&timeout_ms, NULL, &session);
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

/* Exit gives everything back, whatever the counts say. */
static void
zkl_backend_exit(int code, Datum arg)
{
	HASH_SEQ_STATUS seq;
	zkl_local_lock *lock;

	if (zkl_shared == NULL || zkl_locks == NULL)
		return;
	zkl_cancel_wait(true);
	hash_seq_init(&seq, zkl_locks);
	while ((lock = hash_seq_search(&seq)) != NULL)
		zkl_drop_local(lock);
	zkl_n_xact_holds = 0;
}
