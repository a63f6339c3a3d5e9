/*-------------------------------------------------------------------------
 *
 * clock_test.c
 *		Unit tests of clock.c: the time source of the proof, the
 *		heartbeats, the hold limit and the reaper.  The real source is one
 *		clock for every process; behind a simulated one, a step of the
 *		machine's wall clock (an NTP step, a resumed virtual machine)
 *		neither lengthens a proof nor pauses what is due.
 *
 *-------------------------------------------------------------------------
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rules/clock.h"
#include "unit_tap.h"

/* A simulated machine: the monotonic clock and the wall clock, in us. */
static int64_t sim_mono = 1000000000;
static int64_t sim_wall = 1700000000000000;

static int64_t
sim_source(void)
{
	return sim_mono;
}

/* Time passes: both clocks move. */
static void
sim_pass_ms(int64_t ms)
{
	sim_mono += ms * 1000;
	sim_wall += ms * 1000;
}

/* The wall clock is stepped; the monotonic clock is not. */
static void
sim_step_wall_ms(int64_t ms)
{
	sim_wall += ms * 1000;
}

/* CLOCK_MONOTONIC in microseconds, read here, apart from clock.c. */
static int64_t
monotonic_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
test_real_source(void)
{
	int64_t		lo = monotonic_us();
	int64_t		now = zkl_now();
	int64_t		hi = monotonic_us();
	int64_t		before = zkl_monotonic_us();
	int64_t		child = 0;
	int64_t		after;
	int			fds[2];
	pid_t		pid;

	/*
	 * Between two readings of CLOCK_MONOTONIC taken around it (clock.c adds 1
	 * us so that it is never 0): any other clock, the realtime one above all,
	 * is far off, whatever the machine's uptime.
	 */
	check(now >= lo && now <= hi + 1,
		  "the default source is CLOCK_MONOTONIC: zkl_now() lies between two readings of it");
	if (pipe(fds) != 0)
	{
		check(0, "pipe");
		return;
	}
	pid = fork();
	if (pid == 0)
	{
		int64_t		t = zkl_now();

		(void) !write(fds[1], &t, sizeof(t));
		_exit(0);
	}
	(void) !read(fds[0], &child, sizeof(child));
	waitpid(pid, NULL, 0);
	after = zkl_now();
	check(child >= before && child <= after,
		  "another process reads the same clock (a worker's stamp compares with a backend's reading)");
	close(fds[0]);
	close(fds[1]);
}

static void
test_proof(void)
{
	int64_t		sent;

	zkl_clock = sim_source;
	check(!zkl_proof_holds(0, 3000, zkl_now()), "no heartbeat answered: no proof");
	sent = zkl_now();
	sim_pass_ms(999);
	check(zkl_proof_holds(sent, 3000, zkl_now()), "a proof holds for a third of the session timeout");
	sim_pass_ms(1);
	check(!zkl_proof_holds(sent, 3000, zkl_now()), "and not a microsecond longer");

	/* The wall clock goes back an hour just after a heartbeat's answer. */
	sent = zkl_now();
	sim_step_wall_ms(-3600 * 1000);
	sim_pass_ms(1000);
	check(!zkl_proof_holds(sent, 3000, zkl_now()),
		  "a backward step of the wall clock does not lengthen the proof");
	check(zkl_ms_left(zkl_proof_until(sent, 3000), zkl_now()) == 0, "nor what a commit waits for");

	/* And forward: a proof is not cut short. */
	sent = zkl_now();
	sim_step_wall_ms(3600 * 1000);
	sim_pass_ms(500);
	check(zkl_proof_holds(sent, 3000, zkl_now()), "a forward step does not end a proof early");
	check(zkl_ms_left(zkl_proof_until(sent, 3000), zkl_now()) == 500, "the time left is the monotonic time left");
}

/*
 * The session is given up two thirds of the timeout after the last proof,
 * while ZooKeeper may expire it no earlier than the whole timeout after it,
 * and after the proof's own end: no hold is kept past a moment a commit
 * could still rely on, nor given up while a commit may still use it.
 */
static void
test_give_up(void)
{
	int64_t		sent;

	zkl_clock = sim_source;
	check(zkl_give_up_at(0, 3000) == 0, "no proof: nothing to give up by the clock");
	check(!zkl_give_up_due(0, 3000, zkl_now()), "... never due");
	sent = zkl_now();
	check(zkl_give_up_at(sent, 3000) == zkl_after_ms(sent, 2000), "given up two thirds of the timeout after the proof");
	check(zkl_give_up_at(sent, 3000) > zkl_proof_until(sent, 3000), "... after the proof's end");
	check(zkl_give_up_at(sent, 3000) < zkl_after_ms(sent, 3000), "... before ZooKeeper may expire the session");
	sim_step_wall_ms(3600 * 1000);
	sim_pass_ms(1999);
	check(!zkl_give_up_due(sent, 3000, zkl_now()), "not due a millisecond early, whatever the wall clock did");
	sim_pass_ms(1);
	check(zkl_give_up_due(sent, 3000, zkl_now()), "due on time");
	check(zkl_give_up_at(sent, 2000000000) > sent, "a timeout near INT_MAX does not overflow");
	zkl_clock = zkl_monotonic_us;
}

static void
test_schedules(void)
{
	int64_t		heartbeat;
	int64_t		granted;
	int64_t		reaped;

	zkl_clock = sim_source;
	check(zkl_due(0, 500, zkl_now()), "what never ran is due at once");
	heartbeat = zkl_now();
	granted = zkl_now();
	reaped = zkl_now();
	sim_step_wall_ms(-3600 * 1000);
	sim_pass_ms(499);
	check(!zkl_due(heartbeat, 500, zkl_now()), "a heartbeat is not due before its interval");
	sim_pass_ms(1);
	check(zkl_due(heartbeat, 500, zkl_now()),
		  "after a backward step of the wall clock the heartbeat is due on time, not an hour late");
	sim_pass_ms(1500);
	check(zkl_now() >= zkl_after_ms(granted, 2000),
		  "a hold limit of 2 s ends the hold 2 s after the grant, whatever the wall clock did");
	sim_pass_ms(8000);
	check(zkl_due(reaped, 10000, zkl_now()), "the reaper looks again after its 10 s");
	zkl_clock = zkl_monotonic_us;
}

int
main(void)
{
	test_real_source();
	test_proof();
	test_give_up();
	test_schedules();
	(void) sim_wall;
	return tap_done();
}
