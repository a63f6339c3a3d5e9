/*-------------------------------------------------------------------------
 *
 * worker.c
 *		The zklock background worker: owner of the cluster's only ZooKeeper
 *		session.
 *
 * The worker has one thread.  Its loop drives libzookeeper's
 * single-threaded build (zk_io.c): it sleeps on the library's socket beside
 * its latch, and at the start of each pass lets the library send, read and
 * call back.  The callbacks (zk_events.c) copy results with malloc into a
 * list that the same pass handles.  This file runs the loop (and the
 * library's log lines), session.c owns the session, dispatch.c routes each
 * answer to the recipe whose slot's work it is.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/procsignal.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "pg_compat.h"
#include "rules/clock.h"
#include "rules/heartbeat.h"
#include "rules/pass_budget.h"
#include "shared/wait_events.h"
#include "worker/dispatch.h"
#include "worker/lock_recipe.h"
#include "worker/send_hold.h"
#include "worker/session.h"
#include "worker/session_auth.h"
#include "worker/session_file.h"
#include "worker/slot_recovery.h"
#include "worker/slot_steps.h"
#include "worker/worker.h"
#include "worker/write_batch.h"
#include "worker/zk_events.h"
#include "worker/zk_io.h"

/* When zkl_watch_lasting_holds last ran. */
static int64 zkl_last_hold_watch = 0;

/*
 * A line of the library, into the server log.  While ZooKeeper is down the
 * library repeats the same complaints at every connection attempt, with
 * other numbers (ports, milliseconds) each time.  So a line whose text,
 * numbers aside, was logged in the last minute is only counted, and the
 * count is told with the line when it is next logged; and no more than
 * ZKL_LOG_BUDGET lines are logged a minute whatever they say, the rest
 * counted and reported once the minute is over.  The library's own prefix
 * (time, thread, level, function) is left out; the server log has its own.
 */
#define ZKL_LOG_KINDS		16
#define ZKL_LOG_WINDOW_MS	60000
#define ZKL_LOG_BUDGET		20
/* A library line is logged cut to this; its kind is known by the start. */
#define ZKL_LOG_LINE_LEN	256
#define ZKL_LOG_KEY_LEN		128

static struct
{
	char		key[ZKL_LOG_KEY_LEN];	/* the text with each run of digits as
										 * "#" */
	int64		logged_at;		/* zkl_now() */
	int			suppressed;
}			zkl_log_kinds[ZKL_LOG_KINDS];

static int64 zkl_log_window_start = 0;
static int	zkl_log_window_lines = 0;
static int	zkl_log_window_dropped = 0;

static void
zkl_log_library_line(const char *line)
{
	const char *text = strstr(line, "ZOO_");
	const char *at;
	int64		now = zkl_now();
	int			oldest = 0;
	int			hit = -1;
	char		clean[ZKL_LOG_LINE_LEN];
	char		key[ZKL_LOG_KEY_LEN];
	int			k = 0;

	/* "...:ZOO_ERROR@function@123: message" */
	text = text ? text : line;

	at = strstr(text, ": ");
	strlcpy(clean, at ? at + 2 : text, sizeof(clean));
	clean[strcspn(clean, "\n")] = '\0';
	for (const char *c = clean; *c && k < (int) sizeof(key) - 1; c++)
	{
		if (isdigit((unsigned char) *c) && k > 0 && key[k - 1] == '#')
			continue;
		key[k++] = isdigit((unsigned char) *c) ? '#' : *c;
	}
	key[k] = '\0';

	if (zkl_due(zkl_log_window_start, ZKL_LOG_WINDOW_MS, now))
	{
		if (zkl_log_window_dropped > 0)
			ereport(LOG,
					(errmsg("%d more lines of the ZooKeeper client library were not logged in the last minute",
							zkl_log_window_dropped)));
		zkl_log_window_start = now;
		zkl_log_window_lines = 0;
		zkl_log_window_dropped = 0;
	}

	for (int i = 0; i < ZKL_LOG_KINDS; i++)
	{
		if (strcmp(zkl_log_kinds[i].key, key) == 0)
		{
			hit = i;
			break;
		}
		if (zkl_log_kinds[i].logged_at < zkl_log_kinds[oldest].logged_at)
			oldest = i;
	}
	if (hit >= 0 && !zkl_due(zkl_log_kinds[hit].logged_at, ZKL_LOG_WINDOW_MS, now))
	{
		zkl_log_kinds[hit].suppressed++;
		return;
	}
	if (zkl_log_window_lines >= ZKL_LOG_BUDGET)
	{
		zkl_log_window_dropped++;
		return;
	}
	zkl_log_window_lines++;

	if (hit >= 0 && zkl_log_kinds[hit].suppressed > 0)
		ereport(LOG,
				(errmsg("ZooKeeper client: %s", clean),
				 errdetail("Similar messages were seen %d more times in the last minute.",
						   zkl_log_kinds[hit].suppressed)));
	else
		ereport(LOG, (errmsg("ZooKeeper client: %s", clean)));
	if (hit < 0)
	{
		hit = oldest;
		strlcpy(zkl_log_kinds[hit].key, key, sizeof(zkl_log_kinds[hit].key));
	}
	zkl_log_kinds[hit].logged_at = now;
	zkl_log_kinds[hit].suppressed = 0;
}

/*
 * Answers a pass left to the next one (pass_budget.c), in their order:
 * handled before any that came since.
 */
static zkl_event *zkl_events_left = NULL;

/*
 * Handle ZooKeeper's answers and watches, in the order they came, at most
 * a pass's share (pass_budget.c): the rest waits for the next pass, which
 * comes at once (zkl_sleep_time), after this one's heartbeat.
 */
static void
zkl_drain_events(void)
{
	zkl_event  *ev = zkl_events_left;
	bool		taken = ev == NULL;
	int			handled = 0;

	/* Those left first; the ones that came since only after them. */
	zkl_events_left = NULL;
	if (taken)
		ev = zkl_events_take();
	while (ev)
	{
		zkl_event  *next = ev->next;

		if (!zkl_pass_may_handle(handled++))
		{
			zkl_events_left = ev;
			break;
		}

		if (ev->kind == ZKL_EV_SESSION)
			zkl_handle_session_event(ev->state, ev->opgen);
		else if (ev->kind == ZKL_EV_LOG)
			zkl_log_library_line(ev->path);
		else if (ev->kind == ZKL_EV_HEARTBEAT)
		{
			int64		now = zkl_now();

			/* A sync's round trip: how far ZooKeeper is, for the multis. */
			if (ev->rc == ZOK && zkl_heartbeat_state.in_flight)
			{
				zkl_batch_distance(now - zkl_heartbeat_state.sent, now);
				zkl_session_heard(zkl_heartbeat_state.sent);
			}
			/* The leader had the session alive when the request left. */
			if (zkl_beat_answered(&zkl_heartbeat_state, ev->rc == ZOK))
			{
				LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
				zkl_shared->proof_sent = zkl_heartbeat_state.proof;
				zkl_shared->last_contact = zkl_heartbeat_sent_wall;
				LWLockRelease(zkl_shared->lock);
				/* Commits waiting for this proof go on. */
				ConditionVariableBroadcast(&zkl_shared->contact_cv);
			}
		}
		else if (ev->kind == ZKL_EV_BATCHED)
			zkl_batch_answered(ev); /* a multi's answer, one operation's share */
		else if (ev->kind == ZKL_EV_WAITS_WATCH)
			zkl_waits_watch_moved();	/* .waits changed (or the session did) */
		else if (ev->kind != ZKL_EV_IGNORE)
			zkl_handle_event(ev);
		zkl_event_free(ev);
		ev = next;
		if (ev == NULL && !taken)
		{
			ev = zkl_events_take();
			taken = true;
		}
	}
}

/* Take the backends' requests off the shared queue. */
static void
zkl_take_requests(void)
{
	bool		others = false;

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	while (zkl_shared->queue_len > 0)
	{
		int			slotno = zkl_shared->queue[zkl_shared->queue_head];
		zkl_slot   *slot = &zkl_shared->slots[slotno];

		zkl_shared->queue_head = (zkl_shared->queue_head + 1) % zkl_shared->nslots;
		zkl_shared->queue_len--;
		slot->queued = false;
		/* Not a lock's create or delete: no multi carries it. */
		if (slot->inspect || slot->permits > 0)
			others = true;
		zkl_mark_pending(slotno);
	}
	LWLockRelease(zkl_shared->lock);

	/* A release's delete kept back for company goes before it. */
	if (others)
		zkl_batch_release_lingering();
}

/*
 * Heartbeats come every sixth of the negotiated session timeout: a proof
 * holds for a third of it after its beat left (clock.h), so with beats
 * twice as often one slow answer does not leave a commit without proof.
 * And never more often than every ZKL_MIN_HEARTBEAT_MS: ZooKeeper's
 * smallest session timeout is two ticks (4 seconds at its default
 * tickTime), whose sixth is far above it; the floor only keeps a server
 * set to a tiny tickTime from getting a sync, a round trip through the
 * leader, every few milliseconds.
 */
#define ZKL_HEARTBEATS_PER_TIMEOUT	6
#define ZKL_MIN_HEARTBEAT_MS	100

/* Milliseconds between heartbeats. */
static int
zkl_heartbeat_interval(void)
{
	return Max(zkl_shared->negotiated_timeout / ZKL_HEARTBEATS_PER_TIMEOUT,
			   ZKL_MIN_HEARTBEAT_MS);
}

/* Slots of exited backends are looked for at most this often. */
#define ZKL_REAP_INTERVAL_MS	10000

static int64 zkl_last_reap = 0;

/*
 * Keep the session's liveness known: a heartbeat every sixth of the session
 * timeout, at once after a (re)connection, or when a committing backend
 * asks for fresh proof.
 *
 * The heartbeat is a sync.  A follower answers a read from its own copy of
 * the data, and goes on doing so after it was cut off from the leader,
 * until it notices (syncLimit x tickTime): a read it answers proves
 * nothing about a session that the leader may have expired meanwhile.  A
 * sync is passed to the leader and answered only after the leader's
 * answer, which comes after everything the leader committed before, our
 * session's expiry included: its answer proves that the leader had the
 * session alive after the request left.  The proof is stamped at sending.
 */
static void
zkl_heartbeat(void)
{
	int64		now = zkl_now();
	bool		asked;
	bool		first_refusal;
	int			rc;

	if (zkl_zh == NULL || zkl_closing_previous || zkl_heartbeat_state.in_flight ||
		zkl_shared->session_state != ZKL_SESSION_CONNECTED)
		return;
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	asked = zkl_shared->heartbeat_requested;
	zkl_shared->heartbeat_requested = false;
	LWLockRelease(zkl_shared->lock);

	if (!zkl_beat_due(&zkl_heartbeat_state, asked, zkl_heartbeat_interval(), now))
	{
		/* A commit's request waits for the retry of a refused send. */
		if (asked)
		{
			LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
			zkl_shared->heartbeat_requested = true;
			LWLockRelease(zkl_shared->lock);
		}
		return;
	}
	/* Not counted in zk_requests, which shows what locks cost. */
	rc = zoo_async(zkl_zh, "/", zkl_void_string_done,
				   zkl_request_ctx(ZKL_EV_HEARTBEAT, 0, 0));
	first_refusal = rc != ZOK && zkl_heartbeat_state.retry_at == 0;
	zkl_beat_sent(&zkl_heartbeat_state, rc == ZOK, now);
	if (rc == ZOK)
		zkl_heartbeat_sent_wall = GetCurrentTimestamp();
	else if (first_refusal)
		ereport(LOG,
				(errmsg("could not send a heartbeat to ZooKeeper: %s", zerror(rc)),
				 errdetail("It is sent again every %d ms until the library takes it.", ZKL_BEAT_RETRY_MS)));
}

/*
 * As often as heartbeats, holds that last get the watch on their own node
 * and the hold limit is enforced; every ten seconds the slots of backends
 * that no longer exist are looked for.  Apart from the heartbeat, which may
 * wait long for its answer.
 */
static void
zkl_periodic(void)
{
	int64		now = zkl_now();

	if (zkl_zh == NULL || zkl_closing_previous ||
		zkl_shared->session_state != ZKL_SESSION_CONNECTED)
		return;
	if (zkl_due(zkl_last_hold_watch, zkl_heartbeat_interval(), now))
	{
		zkl_last_hold_watch = now;
		zkl_check_holds();
		zkl_retry_stranded();
	}
	if (zkl_due(zkl_last_reap, ZKL_REAP_INTERVAL_MS, now))
	{
		zkl_last_reap = now;
		zkl_reap_dead_backends();
	}
}

static int
zkl_slots_in_use(void)
{
	int			used;

	LWLockAcquire(zkl_shared->lock, LW_SHARED);
	used = zkl_shared->nused;
	LWLockRelease(zkl_shared->lock);
	return used;
}

/*
 * A request the library refused at once (ZINVALIDSTATE and its kin while
 * the connection is down: slot_steps.c) goes again this long after: soon
 * enough that its backend hardly notices, seldom enough not to spin while
 * the library reconnects.  As a refused heartbeat (ZKL_BEAT_RETRY_MS).
 */
#define ZKL_PENDING_RETRY_MS	100

/*
 * How long the worker may sleep: until the next thing it must do by the
 * clock (open a session, send a heartbeat, give up waiting for releases at
 * shutdown, retry a request the library would not take), or for ever (-1)
 * when only an event can bring work: a backend's request sets the latch,
 * and ZooKeeper's answers make the socket readable.  The library's own
 * times (its pings, a silent server) are zk_io.c's to add.
 */
static long
zkl_sleep_time(int64 shutdown_deadline)
{
	int64		now = zkl_now();
	int64		next = 0;
	int64		give_up;
	bool		connected = zkl_zh != NULL && !zkl_closing_previous &&
	zkl_shared->session_state == ZKL_SESSION_CONNECTED;

	if (zkl_zh == NULL)
		next = Max(zkl_next_connect, now);
	else if (connected)
	{
		int64		beat = zkl_beat_next(&zkl_heartbeat_state, zkl_heartbeat_interval(), now);

		next = zkl_after_ms(zkl_last_hold_watch, zkl_heartbeat_interval());
		if (beat != 0 && beat < next)
			next = beat;
	}
	/* Connected or not, the session is given up on time. */
	give_up = zkl_session_give_up_at();
	if (give_up != 0 && (next == 0 || give_up < next))
		next = give_up;
	if (shutdown_deadline != 0 && (next == 0 || shutdown_deadline < next))
		next = shutdown_deadline;
	/* A release's delete kept back for company leaves on time. */
	if (zkl_batch_due() != 0 && (next == 0 || zkl_batch_due() < next))
		next = zkl_batch_due();
	/* Work a pass left for the next (pass_budget.c): at once. */
	if (zkl_events_left != NULL || zkl_work_deferred())
		return 0;
	if (connected && zkl_work_pending())
	{
		int64		retry = zkl_after_ms(now, ZKL_PENDING_RETRY_MS);

		if (next == 0 || retry < next)
			next = retry;
	}
	if (next == 0)
		return -1;
	return (long) Min(zkl_ms_left(next, now), PG_INT32_MAX);
}

/*
 * What the loops of PostgreSQL's own background processes handle (see
 * HandleMainLoopInterrupts), except the shutdown request, which the loop
 * handles itself: releases go out first.  Absorbing ProcSignal barriers is
 * what lets DROP DATABASE and the tablespace commands finish.
 */
static void
zkl_handle_interrupts(void)
{
	if (ProcSignalBarrierPending)
		ProcessProcSignalBarrier();

	if (LogMemoryContextPending)
		ProcessLogMemoryContextInterrupt();

	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);

		/*
		 * A worker that refused a session for a bad zklock.auth (session.c)
		 * looks again at once: a reload that corrected it is acted on without
		 * waiting.  Other waits for a connection (back-off, a reattachment's)
		 * keep their time.  Only the worker writes the flag.
		 */
		if (zkl_zh == NULL && zkl_shared->auth_refused)
			zkl_next_connect = 0;

		/*
		 * New hosts keep the session: the worker leaves without closing it,
		 * and the next one reattaches to it at the new servers (the client
		 * library would only use them after the connection in use breaks).
		 * Holds survive a move of the ensemble; servers of another ensemble
		 * do not know the session and end it as expired.
		 */
		if (zkl_zh && zkl_current_hosts && strcmp(zkl_current_hosts, zkl_hosts) != 0)
		{
			if (zkl_shared->session_id != 0)
				ereport(LOG,
						(errmsg("moving to ZooKeeper servers %s; the worker restarts to reattach to session 0x%llx there",
								zkl_hosts, (unsigned long long) zkl_shared->session_id)));
			else
				ereport(LOG,
						(errmsg("moving to ZooKeeper servers %s; the worker restarts to connect there",
								zkl_hosts)));
			proc_exit(1);
		}
		zkl_give_auth(zkl_zh);
	}
}

/*
 * The session stays open on an error exit: the next worker reattaches to it
 * and every hold survives.  Only a shutdown request closes it (below).
 */
static void
zkl_worker_exit(int code, Datum arg)
{
	/*
	 * An error in a pass leaves: what it sent is pushed out (best effort: a
	 * socket closed with answers unread drops what is still queued).
	 */
	zkl_send_held();
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zkl_shared->worker_procno = -1;
	zkl_shared->worker_pid = 0;
	LWLockRelease(zkl_shared->lock);
}

/*
 * The worker leaves.  With nothing held, closing the session is clean.
 * With holders still alive (the worker alone was terminated), the session
 * stays open and the next worker reattaches to it: their locks survive.
 * Exit code 1 asks the postmaster for a restart: a worker terminated alone
 * must come back.  At server shutdown nothing restarts anyway.
 */
static void
zkl_worker_exit_session(void)
{
	/*
	 * With locks in use and a session, even one with no handle open (a
	 * dropped connection being reattached, a server being retried), the next
	 * worker takes the session over.
	 */
	if (zkl_slots_in_use() > 0 && (zkl_zh != NULL || zkl_shared->session_id != 0))
	{
		ereport(LOG,
				(errmsg("exiting with locks in use; the next worker reattaches to ZooKeeper session 0x%llx",
						(unsigned long long) zkl_shared->session_id)));
		proc_exit(1);
	}
	ereport(LOG, (errmsg("shutting down; closing the ZooKeeper session")));
	zkl_close_session();

	/*
	 * While a previous incarnation's session is still to be closed (its
	 * handle never connected: a connected one is closed at once), the file
	 * that names it stays for the next start.
	 */
	if (!zkl_closing_previous)
		zkl_session_file_remove();
	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zkl_shared->session_id = 0;
	zkl_shared->session_state = ZKL_SESSION_STARTING;
	LWLockRelease(zkl_shared->lock);
	proc_exit(1);
}

/*
 * The worker's start: signals, its entry in pg_stat_activity, its place in
 * shared memory and the slots an earlier worker left.  What its loop waits
 * on is zk_io.c's: the latch, the postmaster's death, the library's socket.
 */
static void
zkl_worker_start(void)
{

	/*
	 * What each signal does to the worker is in doc/operations.md.  SIGINT
	 * (pg_cancel_backend) is ignored: the worker runs no statement to cancel,
	 * and the handler a backend-connected worker inherits
	 * (StatementCancelHandler) would end it with an ERROR at its next
	 * interrupt check, in the middle of a step.
	 */
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGINT, SIG_IGN);
	BackgroundWorkerUnblockSignals();

	/*
	 * Bound to no database: this only makes the worker a regular entry in
	 * pg_stat_activity, where an administrator can see and terminate it.  It
	 * also gives the worker a ProcSignal slot, so it must absorb barriers.
	 */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	/* The library's own lines reach the server log through the loop. */
	zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);

	zkl_recipe_init();
	zkl_batch_init();

	LWLockAcquire(zkl_shared->lock, LW_EXCLUSIVE);
	zkl_shared->worker_procno = ZKL_MY_PROCNO;
	zkl_shared->worker_pid = MyProcPid;
	/* No watch on .waits is set yet: readings listed before are older. */
	zkl_shared->waits_watch_gen++;
	LWLockRelease(zkl_shared->lock);
	before_shmem_exit(zkl_worker_exit, 0);

	/* Shared memory says at once that nothing is connected yet. */
	zkl_session_restart();

	/* Slots left by an earlier worker go on in the session it recorded. */
	zkl_adopt_slots();
}

/*
 * How long a shutting down worker waits for the backends' releases: a
 * release is one round trip, so three seconds cover a slow ZooKeeper, and
 * stay well within pg_ctl's wait for a shutdown (60 seconds by default);
 * what is not released by then goes with the session, which the worker
 * closes.
 */
#define ZKL_SHUTDOWN_GRACE_MS	3000

/*
 * On SIGTERM, let the backends' releases reach ZooKeeper first (a server
 * shutdown terminates them at the same time), within a grace period: true
 * once the worker may leave.  Looked at after a pass, which may have freed
 * the last slot.
 */
static bool
zkl_shutdown_due(int64 *deadline)
{
	int64		now;

	if (!ShutdownRequestPending)
		return false;
	now = zkl_now();
	if (*deadline == 0)
		*deadline = zkl_after_ms(now, ZKL_SHUTDOWN_GRACE_MS);
	return now >= *deadline || zkl_zh == NULL ||
		zkl_shared->session_state != ZKL_SESSION_CONNECTED ||
		zkl_slots_in_use() == 0;
}

void
zkl_worker_main(Datum arg)
{
	int64		shutdown_deadline = 0;
	MemoryContext loop_cxt;

	zkl_worker_start();

	loop_cxt = AllocSetContextCreate(TopMemoryContext, "zklock worker loop",
									 ALLOCSET_DEFAULT_SIZES);

	/*
	 * Work first, then sleep: requests queued before this worker published
	 * its latch are taken on the first pass.
	 */
	for (;;)
	{
		MemoryContext old;

		zkl_handle_interrupts();

		/* What one pass allocates and does not keep goes with the pass. */
		old = MemoryContextSwitchTo(loop_cxt);
		/* The library reads the answers that came, and queues their events. */
		zkl_io_process();
		if (zkl_zh == NULL && zkl_now() >= zkl_next_connect)
			zkl_open_session();
		/* One the library refused between two connections (session_auth.c). */
		zkl_give_auth(zkl_zh);
		/* The writes ready in this pass go together (write_batch.c)... */
		zkl_batch_begin();
		/* ... and everything the pass sends leaves at its end. */
		zkl_hold_sends(zkl_io_connected_socket());
		zkl_drain_events();
		/* After the answers: a heartbeat's may have renewed the proof. */
		zkl_check_session_proof();
		zkl_take_requests();
		zkl_run_pending();
		zkl_batch_flush();
		zkl_heartbeat();
		zkl_periodic();
		zkl_send_held();
		MemoryContextSwitchTo(old);
		MemoryContextReset(loop_cxt);

		/*
		 * Before the library is asked anything (zk_io.c), and before a
		 * shutdown looks at the handle.
		 */
		if (zkl_io_dropped())
		{
			int64		not_before = zkl_reattach_after_drop();

			/* The next handle takes the number the close moved to. */
			zkl_io_connect_not_before(zkl_handle_number, not_before);
			zkl_rewatch_all();
		}

		if (zkl_shutdown_due(&shutdown_deadline))
			break;

		zkl_io_wait(zkl_sleep_time(shutdown_deadline), zkl_wait_event(ZKL_WAIT_WORKER_MAIN));
		ResetLatch(MyLatch);
	}

	zkl_worker_exit_session();
}

void
zkl_register_worker(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 1;
	strcpy(worker.bgw_library_name, "zklock");
	strcpy(worker.bgw_function_name, "zkl_worker_main");
	strcpy(worker.bgw_name, "zklock worker");
	strcpy(worker.bgw_type, "zklock worker");
	RegisterBackgroundWorker(&worker);
}
