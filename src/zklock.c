/*-------------------------------------------------------------------------
 *
 * zklock.c
 *		Entry point of the zklock extension, run by the postmaster when the
 *		library is preloaded: it defines the settings and sets up shared
 *		memory, the background worker (worker/) and the backends' hooks
 *		(backend/).  Nothing calls into this file; doc/internals.md draws
 *		the processes and the folders of src/.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "backend/xact_end.h"
#include "pg_compat.h"
#include "settings.h"
#include "shared/shmem.h"
#include "shared/stats.h"
#include "shared/wait_events.h"
#include "worker/worker.h"

ZKL_MODULE_MAGIC;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void zkl_shmem_request(void);
static void zkl_shmem_startup_hook(void);

void		_PG_init(void);

void
_PG_init(void)
{
	/*
	 * Without preloading there is neither shared memory nor a worker; the SQL
	 * functions then fail with a hint (see zkl_require_shmem).
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;

	zkl_define_settings();
	zkl_stats_define_settings();
	MarkGUCPrefixReserved("zklock");

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = zkl_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = zkl_shmem_startup_hook;

	zkl_register_worker();
	zkl_backend_init();
}

static void
zkl_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(zkl_shmem_size());
	RequestNamedLWLockTranche("zklock", 1);
	zkl_stats_shmem_request();
}

static void
zkl_shmem_startup_hook(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	zkl_shmem_startup();
	zkl_stats_shmem_startup();
	zkl_register_wait_events();
}
