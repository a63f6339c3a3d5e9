/*-------------------------------------------------------------------------
 *
 * result_shape.h
 *		The check that the SQL declaration of a row- or set-returning C
 *		function has a shape this library knows.
 *
 * A newer library serves databases whose extension is still at an older
 * version until ALTER EXTENSION zklock UPDATE runs; the calling SQL
 * declaration, not the library, decides the descriptor a function fills.
 * As pg_stat_statements does, each function knows the column count of the
 * shape every version declares (ZKL_COLUMNS_* beside it) and refuses any
 * other instead of filling a descriptor it does not know.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_RESULT_SHAPE_H
#define ZKLOCK_RESULT_SHAPE_H

#include "access/tupdesc.h"
#include "fmgr.h"
#include "funcapi.h"

/*
 * The result columns each version declares.  A function whose shape
 * changed has one C entry per shape, or one that takes the shapes of
 * several versions by their count (zk_status).
 */
#define ZKL_COLUMNS_CONTENDERS	8	/* zk_lock_contenders() 1.0 on,
									 * zk_semaphore_contenders() 1.1 on */
#define ZKL_COLUMNS_LOCKS		10	/* zk_locks_internal(), 1.0 on */
#define ZKL_COLUMNS_WAITS_FOR	13	/* zk_waits_for(), 1.2 on */
#define ZKL_COLUMNS_LOCK_STATS	18	/* zk_lock_stats_internal(), 1.4 on */
#define ZKL_COLUMNS_LOCK_STATS_INFO 3	/* zk_lock_stats_info_internal() */
#define ZKL_COLUMNS_STATUS_1_0	18	/* zk_status() of 1.0 and 1.1 */
#define ZKL_COLUMNS_STATUS_1_2	20	/* 1.2 and 1.3: the deadlock counters */
#define ZKL_COLUMNS_STATUS_1_4	21	/* 1.4: near_top_listings */
#define ZKL_COLUMNS_STATUS_1_5	24	/* 1.5: early_losses, session_expiries,
									 * commits_refused */

/* The error for a declaration of a shape the library does not know. */
static inline void
zkl_result_shape_error(TupleDesc desc, const char *function)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("function %s() is declared with %d result columns, a shape this zklock library does not know",
					function, desc->natts),
			 errhint("Install the zklock library of the extension's version, or run ALTER EXTENSION zklock UPDATE.")));
}

/* For a function whose shape has not changed since its first version. */
static inline void
zkl_check_result_columns(TupleDesc desc, const char *function, int ncolumns)
{
	if (desc->natts != ncolumns)
		zkl_result_shape_error(desc, function);
}

/* The same, before a set-returning function builds its tuplestore. */
static inline void
zkl_check_call_columns(FunctionCallInfo fcinfo, const char *function, int ncolumns)
{
	TupleDesc	desc;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	zkl_check_result_columns(desc, function, ncolumns);
}

#endif							/* ZKLOCK_RESULT_SHAPE_H */
