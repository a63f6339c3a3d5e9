/*-------------------------------------------------------------------------
 *
 * clock.h
 *		The time source of every timing that decides something: the proof
 *		that the session is alive, the heartbeats, the hold limit and the
 *		reaping of dead backends' slots (clock.c).  Plain C, no PostgreSQL,
 *		so that unit tests (test/unit) can put a clock of their own behind
 *		it and prove the decisions without a server.
 *
 * CLOCK_MONOTONIC never steps (an NTP step, a resumed virtual machine, an
 * administrator's date command move only the wall clock) and is one clock
 * for every process of the machine, so a time the worker stamps in shared
 * memory can be compared with a backend's own reading.  Times that users
 * read (zk_status().last_contact, zk_locks' times) stay on the wall clock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_CLOCK_H
#define ZKLOCK_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* Microseconds on a clock that never steps; 0 means "never". */
typedef int64_t (*zkl_time_source) (void);

/* What zkl_now() reads: CLOCK_MONOTONIC, unless a unit test put its own. */
extern zkl_time_source zkl_clock;

extern int64_t zkl_monotonic_us(void);
extern int64_t zkl_now(void);
extern int64_t zkl_after_ms(int64_t t, int64_t ms);
extern int64_t zkl_ms_left(int64_t deadline, int64_t now);

/*
 * The proof: a request sent at proof_sent was answered through the leader,
 * so the session lives until at least a third of the timeout after it.
 */
extern int64_t zkl_proof_until(int64_t proof_sent, int timeout_ms);
extern bool zkl_proof_holds(int64_t proof_sent, int timeout_ms, int64_t now);

/*
 * When the worker gives its session up, holds and all, unless a newer proof
 * came: two thirds of the timeout after proof_sent, a third before the
 * earliest moment ZooKeeper may expire the session (doc/failures.md says
 * what the third left is for); 0 without a proof.
 */
extern int64_t zkl_give_up_at(int64_t proof_sent, int timeout_ms);
extern bool zkl_give_up_due(int64_t proof_sent, int timeout_ms, int64_t now);

/* Whether something done last at last, every interval_ms, is due again. */
extern bool zkl_due(int64_t last, int64_t interval_ms, int64_t now);

#endif							/* ZKLOCK_CLOCK_H */
