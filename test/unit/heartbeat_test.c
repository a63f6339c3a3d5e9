/*-------------------------------------------------------------------------
 *
 * heartbeat_test.c
 *		Unit tests of heartbeat.c: when the worker sends a heartbeat and
 *		what its answer proves.  The proof is the time a heartbeat left,
 *		moved by a heartbeat's own answer and by the session's acceptance
 *		on a handle, to no later than the handle's opening; a
 *		(re)connection asks for a heartbeat at once; a send the library
 *		refused is sent again, never waited for.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <string.h>

#include "rules/clock.h"
#include "rules/heartbeat.h"
#include "unit_tap.h"

static int64_t now_us = 5000000;

static int64_t
fake_clock(void)
{
	return now_us;
}

static void
pass_ms(int64_t ms)
{
	now_us += ms * 1000;
}

int
main(void)
{
	zkl_beat	b;
	int64_t		t0;

	zkl_clock = fake_clock;
	memset(&b, 0, sizeof(b));

	/* A new session: no proof, a heartbeat at once. */
	zkl_beat_connected(&b, false, zkl_now(), 3000, zkl_now());
	check(b.proof == 0, "a new session is not proven by its connection");
	check(zkl_beat_due(&b, false, 500, zkl_now()), "a heartbeat is due at once after connecting");
	check(zkl_beat_next(&b, 500, zkl_now()) == zkl_now(), "and the worker does not sleep before it");

	/* Sent, then answered much later: the proof is the send time. */
	t0 = zkl_now();
	zkl_beat_sent(&b, true, t0);
	check(!zkl_beat_due(&b, true, 500, zkl_now()), "one heartbeat at a time, even when a commit asks");
	check(zkl_beat_next(&b, 500, zkl_now()) == 0, "none is scheduled while one is in flight");
	pass_ms(800);
	check(zkl_beat_answered(&b, true) && b.proof == t0, "an answer proves the time its heartbeat left, not the time it came");
	check(!zkl_proof_holds(b.proof, 3000, zkl_now() + 300 * 1000),
		  "so a slow answer leaves less of the proof, never more");

	/* A failed answer (connection loss) moves nothing. */
	t0 = b.proof;
	zkl_beat_sent(&b, true, zkl_now());
	check(!zkl_beat_answered(&b, false) && b.proof == t0, "a failed heartbeat proves nothing");

	/*
	 * A reconnection of the same session on a handle opened before the last
	 * proof: the proof stays, no stamp of the event's time.
	 */
	pass_ms(100);
	zkl_beat_connected(&b, true, t0 - 1000, 3000, zkl_now());
	check(b.proof == t0, "a reconnection on an older handle stamps no contact: the proof stays what the last answer proved");
	check(zkl_beat_due(&b, false, 500, zkl_now()), "and asks for a heartbeat at once");
	zkl_beat_sent(&b, true, zkl_now());
	check(!b.at_once, "which is then sent");
	zkl_beat_answered(&b, true);

	/*
	 * A restarted worker's new handle is accepted: the session was alive
	 * after the handle was opened, however long the event then waited.
	 */
	t0 = b.proof;
	pass_ms(2900);
	{
		int64_t		opened = zkl_now();

		pass_ms(400);
		/* Judged by the 10 s it had: 3.3 s since the proof is within 6.7. */
		zkl_beat_connected(&b, true, opened, 10000, zkl_now());
		check(b.proof == opened, "the session's acceptance on a new handle proves it alive from the handle's opening");
		check(!zkl_give_up_due(b.proof, 4000, zkl_now()),
			  "so a shorter timeout does not give up the session ZooKeeper just accepted");
		check(zkl_give_up_due(t0, 4000, zkl_now()),
			  "as the predecessor's proof alone would have");
		check(zkl_beat_due(&b, false, 500, zkl_now()), "a heartbeat is still asked for at once");
	}
	t0 = b.proof;
	zkl_beat_connected(&b, true, 0, 10000, zkl_now());
	check(b.proof == t0, "a handle of unknown opening leaves the proof as it is");

	/*
	 * A proof that had run out by the timeout the session had is not renewed
	 * by an acceptance handled late: the session is given up as it should
	 * have been before.
	 */
	{
		int64_t		opened = zkl_now();

		t0 = b.proof;
		pass_ms(2700);
		zkl_beat_connected(&b, true, opened, 4000, zkl_now());
		check(b.proof == t0, "an acceptance handled after the proof ran out proves nothing");
		check(zkl_give_up_due(b.proof, 4000, zkl_now()), "and the session is given up");
	}

	/*
	 * A session never proven (its connection's heartbeat not yet answered)
	 * that reconnects on its handle is proven from the handle's opening: it
	 * was created on that handle, so it was alive after it was opened.
	 */
	zkl_beat_session_ended(&b);
	{
		int64_t		opened = zkl_now();

		zkl_beat_connected(&b, false, opened, 4000, zkl_now());
		pass_ms(100);
		zkl_beat_connected(&b, true, opened, 4000, zkl_now());
		check(b.proof == opened, "a never-proven session's reconnection proves it from its handle's opening");
	}
	zkl_beat_sent(&b, true, zkl_now());
	zkl_beat_answered(&b, true);

	/* The timeout a reconnected session is judged by. */
	check(zkl_judged_timeout(0, 10000) == 10000, "a new session is judged by what the server negotiated");
	check(zkl_judged_timeout(10000, 4000) == 4000, "a reconnection with a shorter timeout is judged by it at once");
	check(zkl_judged_timeout(4000, 10000) == 4000,
		  "a longer one is not: a new leader keeps the timeout the session was created with");

	/* Another session: the old proof goes. */
	zkl_beat_connected(&b, false, zkl_now(), 3000, zkl_now());
	check(b.proof == 0, "a proof of another session proves nothing about this one");
	zkl_beat_session_ended(&b);
	check(b.proof == 0 && !b.at_once, "an ended session has no proof");

	/* A send refused at once is retried, not waited for. */
	zkl_beat_connected(&b, true, 0, 3000, zkl_now());
	zkl_beat_sent(&b, false, zkl_now());
	check(!b.in_flight, "a refused heartbeat is not awaited");
	check(!zkl_beat_due(&b, true, 500, zkl_now()), "it is not resent in a busy loop");
	check(zkl_beat_next(&b, 500, zkl_now()) == zkl_after_ms(zkl_now(), ZKL_BEAT_RETRY_MS),
		  "the worker wakes for its retry");
	pass_ms(ZKL_BEAT_RETRY_MS);
	check(zkl_beat_due(&b, false, 500, zkl_now()), "and resends it then");

	/* The interval. */
	zkl_beat_sent(&b, true, zkl_now());
	zkl_beat_answered(&b, true);
	pass_ms(499);
	check(!zkl_beat_due(&b, false, 500, zkl_now()), "no heartbeat before the interval");
	check(zkl_beat_due(&b, true, 500, zkl_now()), "unless a commit asks for proof");
	pass_ms(1);
	check(zkl_beat_due(&b, false, 500, zkl_now()), "one at the interval");
	return tap_done();
}
