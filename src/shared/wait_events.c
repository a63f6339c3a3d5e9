/*-------------------------------------------------------------------------
 *
 * wait_events.c
 *		The wait events under which zklock's processes sleep, as
 *		pg_stat_activity shows them.  Registered by the postmaster when
 *		shared memory is set up (zklock.c); read in backends and the worker.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/wait_event.h"

#include "pg_compat.h"
#include "shared/wait_events.h"

/*
 * The wait_event_info for what a zklock process waits for.  From 17 on,
 * each has its own name, registered in shared memory when it is set up
 * (zkl_register_wait_events), so that no wait, a commit's least of all,
 * meets an error of the registration; processes forked from the postmaster
 * inherit the numbers.  Before 17, all are "Extension" (pg_compat.h).
 */
static uint32 zkl_wait_events[ZKL_WAIT_COUNT];

void
zkl_register_wait_events(void)
{
	static const char *const names[ZKL_WAIT_COUNT] = {
		[ZKL_WAIT_SESSION] = "ZklockSession",
		[ZKL_WAIT_LOCK] = "ZklockAcquire",
		[ZKL_WAIT_WORKER] = "ZklockWorker",
		[ZKL_WAIT_COMMIT] = "ZklockCommit",
		[ZKL_WAIT_WORKER_MAIN] = "ZklockWorkerMain",
	};

	for (int i = 0; i < ZKL_WAIT_COUNT; i++)
		zkl_wait_events[i] = WaitEventExtensionNew(names[i]);
}

uint32
zkl_wait_event(zkl_wait what)
{
	/* A process not forked from the postmaster looks them up. */
	if (zkl_wait_events[what] == 0)
		zkl_register_wait_events();
	return zkl_wait_events[what];
}
