/*-------------------------------------------------------------------------
 *
 * session.c
 *		The worker's ZooKeeper session, in the worker process: open it
 *		(resuming the one the session file names), give the credentials,
 *		close it, follow its state as libzookeeper's watcher reports it,
 *		and schedule the next connection attempt.  Runs in the worker;
 *		worker.c calls it from the loop.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "pgstat.h"
#include "storage/fd.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "pg_compat.h"
#include "rules/clock.h"
#include "rules/heartbeat.h"
#include "rules/zk_wait.h"
#include "settings.h"
#include "shared/shmem.h"
#include "worker/send_hold.h"
#include "worker/session.h"
#include "worker/session_auth.h"
#include "worker/session_file.h"
#include "worker/slot_recovery.h"
#include "worker/zk_events.h"

/* A session's password is kept in shared memory byte for byte. */
StaticAssertDecl(sizeof(((clientid_t *) 0)->passwd) == ZKL_SESSION_PASSWD_LEN,
				 "ZKL_SESSION_PASSWD_LEN is the client library's password length");

char	   *zkl_current_hosts = NULL;

/* How often a bad zklock.auth is looked at again (zkl_open_session). */
#define ZKL_AUTH_RECHECK_MS 1000

static int	zkl_backoff_ms = 0;

int64		zkl_next_connect = 0;	/* zkl_now() */

/*
 * When the handle in use was opened (zkl_now()): a server's acceptance of
 * the session on that handle proves the session alive from then on
 * (heartbeat.c, zkl_beat_connected).
 */
static int64 zkl_handle_opened = 0;

/*
 * After a crash restart the previous incarnation's session may still hold
 * nodes of dead backends.  Its id and password survive in a file in the
 * data directory (session_file.c, which also says why a copy of the data
 * directory never acts on it); the new worker reattaches to that session
 * only to close it, so ZooKeeper frees those locks now instead of after the
 * timeout.
 */
bool		zkl_closing_previous = false;

/*
 * The session to close is one this worker gave up (zkl_check_session_proof),
 * not a crashed incarnation's: the same path closes it, said otherwise.
 */
static bool zkl_closing_given_up = false;
static clientid_t zkl_given_up; /* client_id 0: none to close */

/*
 * Heartbeats prove the session alive to committing backends.  Every time
 * of the loop is zkl_now()'s (clock.h), which no step of the wall clock
 * moves.
 */
zkl_beat	zkl_heartbeat_state;
TimestampTz zkl_heartbeat_sent_wall = 0;	/* for zk_status() */

static const char *
zkl_state_name(int state)
{
	if (state == ZOO_CONNECTED_STATE)
		return "connected";
	if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE)
		return "connecting";
	if (state == ZOO_EXPIRED_SESSION_STATE)
		return "expired";
	if (state == ZOO_AUTH_FAILED_STATE)
		return "authentication failed";
	return "unknown";
}

/*
 * The ZooKeeper handle's number: it grows each time one is closed, so that
 * what counts a handle's requests in flight (write_batch.c) can tell the
 * answers of a closed handle from those of the next, and a session event
 * of a closed handle is known for one.  It starts at 1: 0 is what has seen
 * no handle (zk_io.c's wait set before the first).
 */
uint32		zkl_handle_number = 1;

void
zkl_close_session(void)
{
	if (zkl_zh == NULL)
		return;
	zkl_handle_number++;

	/*
	 * The library waits for the close request's answer, and a socket closed
	 * with data unread drops what it had not sent: what the pass held goes
	 * first.  Closing runs outstanding completions (ZCLOSING); they are
	 * drained later.
	 */
	zkl_send_held();
	zookeeper_close(zkl_zh);
	zkl_zh = NULL;
}

/*
 * The client library dropped the connection without a word (zk_io.c): the
 * session is suspended as for any lost connection, the handle is closed as
 * a connection's loss (the requests in flight fail as lost answers, not as
 * the session's end: zk_events.c), and the next pass opens a handle on the
 * same session.  That handle has none of the old one's watches: the slots
 * set theirs again (zkl_rewatch_all).  No close request leaves: the
 * library sends none on a handle that is not connected.  Returns when the
 * new handle may connect (zkl_now(); 0: at once): a reattachment soon
 * after another waits (zk_wait.c).
 */
int64
zkl_reattach_after_drop(void)
{
	static long last_wait_ms = -1;
	static int64 last_connect_at = 0;
	int64		now = zkl_now();
	long		wait_ms;

	ereport(LOG,
			(errmsg("the ZooKeeper client library dropped the connection to %s when a send failed; reattaching to session 0x%llx",
					zkl_shared->server, (unsigned long long) zkl_shared->session_id)));
	zkl_session_event_post(ZOO_CONNECTING_STATE, zkl_handle_number);
	zkl_events_closing_to_reattach(true);
	zkl_close_session();
	zkl_events_closing_to_reattach(false);

	/*
	 * The handle is opened at once, so that the requests of the passes
	 * between go to its queue; only its connection may wait.
	 */
	zkl_next_connect = 0;
	wait_ms = zkl_zk_reattach_wait_ms(last_wait_ms, zkl_ms_left(now, last_connect_at),
									  zkl_shared->negotiated_timeout);
	last_wait_ms = wait_ms;
	last_connect_at = zkl_after_ms(now, wait_ms);
	return wait_ms == 0 ? 0 : last_connect_at;
}

static void
zkl_schedule_reconnect(void)
{
	zkl_backoff_ms = zkl_backoff_ms == 0 ? 100 : Min(zkl_backoff_ms * 2, 10000);
	zkl_next_connect = zkl_after_ms(zkl_now(), zkl_backoff_ms);
}

/*
 * Which session the next handle is for: the one recorded in shared memory
 * (a worker restart leaves shared memory and the session intact), or one
 * of a previous incarnation or given up, to close it (then
 * zkl_closing_previous).  Returns false for a new session (*cid then
 * means nothing).
 */
static bool
zkl_session_to_reattach(clientid_t *cid)
{
	bool		reattach;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	reattach = zkl_shared->session_id != 0;
	cid->client_id = zkl_shared->session_id;
	memcpy(cid->passwd, zkl_shared->session_passwd, sizeof(cid->passwd));
	LWLockRelease(zkl_shared->lock);
	if (reattach)
		return true;

	/*
	 * Shared memory is new: a session left by a crashed incarnation is closed
	 * first.
	 */
	if (zkl_given_up.client_id != 0)
	{
		*cid = zkl_given_up;
		zkl_given_up.client_id = 0;
		zkl_closing_previous = true;
		zkl_closing_given_up = true;
		return true;
	}
	if (zkl_session_file_load(&cid->client_id, cid->passwd))
	{
		zkl_closing_previous = true;
		zkl_closing_given_up = false;
		return true;
	}
	return false;
}

/*
 * Say to the backends whether the worker refuses to start a session for a
 * bad zklock.auth: their requests then fail at once, not after
 * zklock.connect_timeout.
 */
static void
zkl_set_auth_refused(bool refused)
{
	/* Only the worker writes it: read without the lock. */
	if (zkl_shared->auth_refused == refused)
		return;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zkl_shared->auth_refused = refused;
	LWLockRelease(zkl_shared->lock);
}

/*
 * Start a session, or reattach to one (zkl_session_to_reattach).
 */
void
zkl_open_session(void)
{
	clientid_t	cid;
	bool		reattach = zkl_session_to_reattach(&cid);

	/*
	 * No new session with a bad zklock.auth: its nodes would lack the
	 * credentials meant to protect them.  Looked at again each second, for a
	 * reload that corrects it.  A session already made is reattached to with
	 * the credentials it was given, so that its holds live on.
	 */
	if (!reattach && !zkl_auth_usable())
	{
		zkl_set_auth_refused(true);
		zkl_next_connect = zkl_after_ms(zkl_now(), ZKL_AUTH_RECHECK_MS);
		return;
	}
	zkl_set_auth_refused(false);

	/*
	 * The single-threaded library starts no thread and connects only when the
	 * loop first asks it what to wait for (zk_io.c).
	 */
	zkl_handle_opened = zkl_now();
	zkl_zh = zookeeper_init2(zkl_hosts, zkl_session_watcher, zkl_session_timeout,
							 reattach ? &cid : NULL,
							 (void *) (uintptr_t) zkl_handle_number, 0, zkl_library_log);

	if (zkl_zh == NULL)
	{
		ereport(LOG,
				(errmsg("could not start a ZooKeeper session: %m"),
				 errhint("Check zklock.hosts (\"%s\").", zkl_hosts)));
		zkl_schedule_reconnect();
		return;
	}
	if (zkl_current_hosts)
		pfree(zkl_current_hosts);
	zkl_current_hosts = MemoryContextStrdup(TopMemoryContext, zkl_hosts);

	/*
	 * By default the library resolves zklock.hosts again each time the loop
	 * asks it what to wait for, which costs more than a request on loopback;
	 * resolve on connection loss only.
	 */
	zoo_set_servers_resolution_delay(zkl_zh, -1);

	zkl_auth_new_handle(zkl_zh, reattach ? cid.client_id : 0);

	if (zkl_closing_previous && zkl_closing_given_up)
		ereport(LOG,
				(errmsg("reattaching to ZooKeeper session 0x%llx, given up earlier, to close it",
						(unsigned long long) cid.client_id)));
	else if (zkl_closing_previous)
		ereport(LOG,
				(errmsg("reattaching to ZooKeeper session 0x%llx of the previous server incarnation to close it",
						(unsigned long long) cid.client_id)));
	else if (reattach)
		ereport(LOG,
				(errmsg("reattaching to ZooKeeper session 0x%llx at %s",
						(unsigned long long) cid.client_id, zkl_hosts)));
	else
		ereport(LOG,
				(errmsg("connecting to ZooKeeper at %s", zkl_hosts)));
}

static void
zkl_set_session_state(zkl_session_state state)
{
	TimestampTz now = GetCurrentTimestamp();

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	if (zkl_shared->session_state == ZKL_SESSION_CONNECTED && state != ZKL_SESSION_CONNECTED)
		zkl_shared->disconnected_since = now;
	zkl_shared->session_state = state;
	if (state == ZKL_SESSION_CONNECTED)
	{
		const clientid_t *cid = zoo_client_id(zkl_zh);
		const char *server = zoo_get_current_server(zkl_zh);

		/*
		 * The same session only if there was one: a stale event of a closed
		 * handle, handled before the next handle connected, names none.  The
		 * handshake proves only that the session was alive after this handle
		 * was opened: the event may have waited in the queue while the loop
		 * was busy, so the handshake is older than now.  A heartbeat goes out
		 * at once; its answer is the next proof.  A proof of another session
		 * proves nothing about this one.  Both are judged by the timeout the
		 * session had before (heartbeat.c).
		 */
		bool		same_session;

		same_session = zkl_shared->session_id != 0 &&
			zkl_shared->session_id == cid->client_id;
		zkl_beat_connected(&zkl_heartbeat_state, same_session, zkl_handle_opened,
						   zkl_shared->negotiated_timeout, zkl_now());
		zkl_shared->proof_sent = zkl_heartbeat_state.proof;
		zkl_shared->session_id = cid->client_id;
		memcpy(zkl_shared->session_passwd, cid->passwd, sizeof(cid->passwd));
		zkl_shared->negotiated_timeout =
			zkl_judged_timeout(same_session ? zkl_shared->negotiated_timeout : 0,
							   zoo_recv_timeout(zkl_zh));
		strlcpy(zkl_shared->server, server ? server : "", sizeof(zkl_shared->server));
		zkl_shared->connected_since = now;
	}
	else if (state == ZKL_SESSION_EXPIRED)
	{
		zkl_shared->session_id = 0;
		zkl_beat_session_ended(&zkl_heartbeat_state);
		zkl_shared->proof_sent = 0;
		zkl_shared->server[0] = '\0';
	}

	/*
	 * Waiting backends re-check their deadlines against the new state; a rare
	 * event, so a pass over the used slots is fine here.
	 */
	for (int i = zkl_shared->used_head; i >= 0; i = zkl_shared->slots[i].next)
		if (zkl_shared->slots[i].state == ZKL_SLOT_WAITING)
			zkl_wake_backend(&zkl_shared->slots[i]);
	LWLockRelease(zkl_shared->lock);
	ConditionVariableBroadcast(&zkl_shared->contact_cv);
}

/* The previous incarnation's session is reached or gone: start our own. */
static void
zkl_finish_closing_previous(int state)
{
	const clientid_t *cid = zoo_client_id(zkl_zh);

	ereport(LOG,
			(errmsg("%s ZooKeeper session 0x%llx of %s",
					state == ZOO_CONNECTED_STATE ? "closed" : "found expired",
					(unsigned long long) cid->client_id,
					zkl_closing_given_up ? "its own that it gave up" : "the previous server incarnation")));
	zkl_close_session();
	zkl_closing_previous = false;
	zkl_closing_given_up = false;
	zkl_session_file_remove();
	zkl_backoff_ms = 0;
	zkl_next_connect = 0;
}

/*
 * When the newest request of this connection that ZooKeeper answered left
 * (zkl_now()'s clock), 0 when none since the connection changed.
 * ZooKeeper answers a session's requests and sends its watch events in
 * order, and the worker handles them in that order: every event of a change
 * ZooKeeper applied before that request came has been handled.  A handoff
 * inside the cluster relies on it (lock_rule.c, zkl_hands_over_at_release).
 * Any session event forgets it: events lost with a connection come again
 * only after the next one.
 */
static int64 zkl_heard_sent = 0;

/* A request that left at sent (zkl_now()) was answered. */
void
zkl_session_heard(int64 sent)
{
	if (sent > zkl_heard_sent)
		zkl_heard_sent = sent;
}

int64
zkl_session_heard_sent(void)
{
	return zkl_heard_sent;
}

void
zkl_handle_session_event(int state, uint32 handle)
{
	/*
	 * A stale event of a closed handle: its CONNECTED says nothing of the
	 * handle in use, which may not have connected yet (one reattaching to the
	 * session already has its id, so the id cannot tell).
	 */
	if (state == ZOO_CONNECTED_STATE && (zkl_zh == NULL || handle != zkl_handle_number))
		return;

	/* A watch on .waits may have missed a change meanwhile. */
	zkl_waits_watch_moved();
	zkl_heard_sent = 0;
	if (zkl_closing_previous)
	{
		if (state == ZOO_CONNECTED_STATE || state == ZOO_EXPIRED_SESSION_STATE ||
			state == ZOO_AUTH_FAILED_STATE)
			zkl_finish_closing_previous(state);
		return;
	}
	if (state == ZOO_CONNECTED_STATE)
	{
		int64		old_id = zkl_shared->session_id;

		zkl_set_session_state(ZKL_SESSION_CONNECTED);
		if (zkl_shared->session_id != old_id)
		{
			/* Its writes are made durable: what the pass sent goes first. */
			zkl_send_held();
			zkl_session_file_save(zkl_shared->session_id, zkl_shared->session_passwd);
		}
		zkl_auth_session_known(zkl_shared->session_id);
		zkl_backoff_ms = 0;
		ereport(LOG,
				(errmsg("connected to ZooKeeper server %s, session 0x%llx, timeout %d ms",
						zkl_shared->server, (unsigned long long) zkl_shared->session_id,
						zkl_shared->negotiated_timeout)));
	}
	else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE)
	{
		if (zkl_shared->session_state == ZKL_SESSION_CONNECTED)
			ereport(LOG,
					(errmsg("lost the connection to ZooKeeper; session 0x%llx suspended",
							(unsigned long long) zkl_shared->session_id)));
		zkl_set_session_state(ZKL_SESSION_SUSPENDED);
	}
	else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
	{
		ereport(LOG,
				(errmsg("ZooKeeper session 0x%llx ended: %s",
						(unsigned long long) zkl_shared->session_id, zkl_state_name(state))));
		zkl_count(session_expiries);
		zkl_close_session();
		zkl_session_file_remove();
		zkl_set_session_state(ZKL_SESSION_EXPIRED);
		(void) zkl_session_lost("the ZooKeeper session ended");
		zkl_schedule_reconnect();
	}
}

/*
 * A starting worker (the first, or one restarted after an error, a signal
 * or a change of zklock.hosts) says in shared memory what it knows from its
 * first instruction: nothing is connected until its library says so.  A
 * session recorded by its predecessor is suspended, and keeps the proof its
 * predecessor had (the heartbeat's times are on one clock for every
 * process), so that it is given up on time (zkl_check_session_proof) even
 * if the library never reports a state; without one, the worker is
 * starting.  Waiting backends are woken: their waits are now bounded by
 * zklock.connect_timeout.
 */
void
zkl_session_restart(void)
{
	bool		known;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	known = zkl_shared->session_id != 0;
	zkl_heartbeat_state.proof = known ? zkl_shared->proof_sent : 0;
	zkl_heartbeat_state.sent = zkl_heartbeat_state.proof;
	LWLockRelease(zkl_shared->lock);

	zkl_set_session_state(known ? ZKL_SESSION_SUSPENDED : ZKL_SESSION_STARTING);
}

/*
 * When the session is to be given up by the clock (zkl_give_up_at), or 0:
 * a time for the loop's sleep.
 */
int64
zkl_session_give_up_at(void)
{
	if (zkl_shared->session_id == 0 || zkl_closing_previous)
		return 0;
	return zkl_give_up_at(zkl_heartbeat_state.proof, zkl_shared->negotiated_timeout);
}

/*
 * Give the session up before ZooKeeper can expire it.  No answer has shown
 * the session alive since a request that left at the proof's time S, and
 * ZooKeeper may expire it from S + T on (T the negotiated timeout): from
 * then on another client may be granted any of our locks.  At S + 2T/3 the
 * worker stops waiting for the session to return, as Curator does at its
 * LOST state, only earlier: every hold is declared lost (its backend
 * cancelled or terminated as zklock.on_lock_lost says, the loss logged with
 * the lock's name and counted as an early loss) and the handle closed.  The
 * next handle reattaches to the session only to close it, as after a crash
 * restart (whose session file still names it), so that its nodes go as soon
 * as ZooKeeper answers (or at its expiry) instead of a timeout after an
 * ensemble that comes back whole renews it; then a new session starts.
 * doc/failures.md says what the remaining third of the timeout covers.
 */
void
zkl_check_session_proof(void)
{
	int64		now = zkl_now();
	int64		proof = zkl_heartbeat_state.proof;
	int			timeout = zkl_shared->negotiated_timeout;
	int64		session_id = zkl_shared->session_id;
	int			lost;

	/*
	 * With or without a handle: a worker that cannot make one (hosts that do
	 * not resolve) must give the session up all the same.
	 */
	if (session_id == 0 || zkl_closing_previous || !zkl_give_up_due(proof, timeout, now))
		return;

	ereport(LOG,
			(errmsg("giving up ZooKeeper session 0x%llx: nothing has proven it alive for %lld ms",
					(unsigned long long) session_id, (long long) ((now - proof) / 1000)),
			 errdetail("ZooKeeper may expire the session %d ms after its last proof and give its locks to other clients; they are declared lost now.",
					   timeout)));
	zkl_given_up.client_id = session_id;
	memcpy(zkl_given_up.passwd, zkl_shared->session_passwd, sizeof(zkl_given_up.passwd));
	zkl_close_session();
	zkl_set_session_state(ZKL_SESSION_EXPIRED);
	lost = zkl_session_lost("the ZooKeeper session was given up before ZooKeeper could expire it");
	pg_atomic_fetch_add_u64(&zkl_shared->counters.early_losses, lost);
	/* A new session at once: the outage may be over for a new connection. */
	zkl_backoff_ms = 0;
	zkl_next_connect = 0;
}
