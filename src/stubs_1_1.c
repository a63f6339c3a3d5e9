/* stubs_1_1.c: placeholders of zklock 1.1's functions while they are built */
#include "postgres.h"
#include "fmgr.h"

#define ZKL_STUB(fn) \
	PG_FUNCTION_INFO_V1(fn); \
	Datum fn(PG_FUNCTION_ARGS) { elog(ERROR, #fn " is not built yet"); PG_RETURN_NULL(); }

ZKL_STUB(zk_semaphore_acquire)
ZKL_STUB(zk_semaphore_acquire_xact)
ZKL_STUB(zk_semaphore_try)
ZKL_STUB(zk_semaphore_try_xact)
ZKL_STUB(zk_semaphore_release)
ZKL_STUB(zk_semaphore_contenders)
ZKL_STUB(zk_lock_verify)
ZKL_STUB(zk_lock_revoke)
