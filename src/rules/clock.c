/*-------------------------------------------------------------------------
 *
 * clock.c
 *		The time source of every timing that decides something (see
 *		clock.h), and the small decisions made with it.  Runs in the
 *		worker and in backends; plain C, no PostgreSQL.
 *
 *-------------------------------------------------------------------------
 */
/* clock_gettime under -std=c99 (the unit tests build so). */
#define _POSIX_C_SOURCE 200809L

#include <time.h>

#include "rules/clock.h"

/* CLOCK_MONOTONIC in microseconds; never 0 on a running machine. */
int64_t
zkl_monotonic_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000 + 1;
}

zkl_time_source zkl_clock = zkl_monotonic_us;

int64_t
zkl_now(void)
{
	return zkl_clock();
}

int64_t
zkl_after_ms(int64_t t, int64_t ms)
{
	return t + ms * 1000;
}

/* Milliseconds from now to deadline, rounded up; 0 once it has passed. */
int64_t
zkl_ms_left(int64_t deadline, int64_t now)
{
	return deadline > now ? (deadline - now + 999) / 1000 : 0;
}

int64_t
zkl_proof_until(int64_t proof_sent, int timeout_ms)
{
	return proof_sent == 0 ? 0 : zkl_after_ms(proof_sent, timeout_ms / 3);
}

bool
zkl_proof_holds(int64_t proof_sent, int timeout_ms, int64_t now)
{
	return proof_sent != 0 && now < zkl_proof_until(proof_sent, timeout_ms);
}

int64_t
zkl_give_up_at(int64_t proof_sent, int timeout_ms)
{
	return proof_sent == 0 ? 0 : zkl_after_ms(proof_sent, (int64_t) timeout_ms * 2 / 3);
}

bool
zkl_give_up_due(int64_t proof_sent, int timeout_ms, int64_t now)
{
	return proof_sent != 0 && now >= zkl_give_up_at(proof_sent, timeout_ms);
}

bool
zkl_due(int64_t last, int64_t interval_ms, int64_t now)
{
	return last == 0 || now >= zkl_after_ms(last, interval_ms);
}
