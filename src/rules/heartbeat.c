/*-------------------------------------------------------------------------
 *
 * heartbeat.c
 *		When the worker sends a heartbeat, and what its answer proves.
 *		Runs in the worker; plain C, no PostgreSQL.
 *
 * The heartbeat is a sync, which a follower passes to the leader and
 * answers only after the leader's answer: that answer shows the leader
 * had the session alive after the heartbeat left, so the proof is the
 * time it left (never the time the answer came).  A follower cut off from
 * its leader goes on answering reads, so nothing else the worker hears
 * moves the proof, but for one answer: a server that accepts a handle's
 * reconnection to its session has the leader revalidate the session, so
 * the session was alive after the handle was opened, since every connect
 * request of a handle leaves after that.  The reconnection's event may have
 * waited in the worker's queue, so that is all it proves; it asks for a
 * heartbeat at once as well.
 *
 *-------------------------------------------------------------------------
 */
#include "rules/clock.h"
#include "rules/heartbeat.h"

/*
 * The session is connected, after a connection loss or a restart of the
 * worker (same_session), or as a new session, whose proof starts from
 * nothing.  A session the server accepted again was alive at or after
 * handle_opened, the time the handle that reconnected was opened (0 when
 * unknown): the proof is never older than that.  A worker restarted with a
 * shorter zklock.session_timeout would otherwise judge its predecessor's
 * proof by the new timeout and give up a session ZooKeeper has just
 * accepted.  But a session whose proof had already run out by the timeout
 * it was judged by (timeout_ms, at now) is not proven again: the worker
 * should have given it up before the acceptance was handled, and the
 * acceptance may rest on a revalidation older than the handle or on a
 * touch racing the session's expiry in the server.
 */
void
zkl_beat_connected(zkl_beat *beat, bool same_session, int64_t handle_opened,
				   int timeout_ms, int64_t now)
{
	if (!same_session)
		beat->proof = 0;
	else if (handle_opened > beat->proof && !zkl_give_up_due(beat->proof, timeout_ms, now))
		beat->proof = handle_opened;
	beat->at_once = true;
}

/*
 * The timeout a session is judged by once (re)connected, ms: what the server
 * negotiated, but never more than the session was judged by before
 * (previous_ms, 0 for a new session).  A reconnection may ask for a longer
 * timeout and be granted it, yet a new leader rebuilds its sessions with the
 * timeout each was created with: a longer zklock.session_timeout applies to
 * a new session only.  A shorter one applies at once, which is safe.
 */
int
zkl_judged_timeout(int previous_ms, int negotiated_ms)
{
	return previous_ms > 0 && previous_ms < negotiated_ms ? previous_ms : negotiated_ms;
}

/* The session expired or was closed: nothing proves the next one. */
void
zkl_beat_session_ended(zkl_beat *beat)
{
	beat->proof = 0;
	beat->at_once = false;
}

/*
 * Whether a heartbeat is to leave now: none is in flight, and the interval
 * since the last has passed, or a commit asks for proof, or the session has
 * just connected; a send the library refused waits for its retry time.
 */
bool
zkl_beat_due(const zkl_beat *beat, bool asked, int interval_ms, int64_t now)
{
	if (beat->in_flight)
		return false;
	if (beat->retry_at != 0 && now < beat->retry_at)
		return false;
	return asked || beat->at_once || zkl_due(beat->sent, interval_ms, now);
}

/* When the next heartbeat is due on its own; 0 while one is in flight. */
int64_t
zkl_beat_next(const zkl_beat *beat, int interval_ms, int64_t now)
{
	int64_t		next;

	if (beat->in_flight)
		return 0;
	next = beat->at_once ? now : zkl_after_ms(beat->sent, interval_ms);
	if (beat->retry_at > next)
		next = beat->retry_at;
	return next;
}

/* The heartbeat was handed to the library (accepted) or refused at once. */
void
zkl_beat_sent(zkl_beat *beat, bool accepted, int64_t now)
{
	if (!accepted)
	{
		beat->retry_at = zkl_after_ms(now, ZKL_BEAT_RETRY_MS);
		return;
	}
	beat->sent = now;
	beat->in_flight = true;
	beat->at_once = false;
	beat->retry_at = 0;
}

/*
 * The heartbeat's answer came: ok, or an error (a connection loss, the
 * session's end).  True when the proof moved.
 */
bool
zkl_beat_answered(zkl_beat *beat, bool ok)
{
	beat->in_flight = false;
	if (!ok)
		return false;
	beat->proof = beat->sent;
	return true;
}
