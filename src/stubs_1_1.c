/* stubs_1_1.c: placeholders of zklock 1.1's functions while they are built */
#include "postgres.h"
#include "fmgr.h"

#define ZKL_STUB(fn) \
	PG_FUNCTION_INFO_V1(fn); \
	Datum fn(PG_FUNCTION_ARGS) { elog(ERROR, #fn " is not built yet"); PG_RETURN_NULL(); }

ZKL_STUB(zk_fence)
ZKL_STUB(zk_fence_trigger)
