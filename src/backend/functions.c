/*-------------------------------------------------------------------------
 *
 * functions.c
 *		The SQL interface of zklock, in the backends: argument checks and
 *		result shapes.  The work is done in acquire.c, locks.c,
 *		contenders.c and waits_view.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "backend/acquire.h"
#include "backend/contenders.h"
#include "backend/waits_view.h"
#include "backend/locks.h"
#include "backend/request.h"
#include "names/encode.h"
#include "names/name_text.h"
#include "result_shape.h"

PG_FUNCTION_INFO_V1(zk_lock_acquire);
PG_FUNCTION_INFO_V1(zk_lock_acquire_xact);
PG_FUNCTION_INFO_V1(zk_lock_try);
PG_FUNCTION_INFO_V1(zk_lock_try_xact);
PG_FUNCTION_INFO_V1(zk_lock_acquire_shared);
PG_FUNCTION_INFO_V1(zk_lock_acquire_xact_shared);
PG_FUNCTION_INFO_V1(zk_lock_try_shared);
PG_FUNCTION_INFO_V1(zk_lock_try_xact_shared);
PG_FUNCTION_INFO_V1(zk_lock_release_shared);
PG_FUNCTION_INFO_V1(zk_lock_acquire_set);
PG_FUNCTION_INFO_V1(zk_lock_acquire_xact_set);
PG_FUNCTION_INFO_V1(zk_lock_contenders);
PG_FUNCTION_INFO_V1(zk_lock_release);
PG_FUNCTION_INFO_V1(zk_lock_release_all);
PG_FUNCTION_INFO_V1(zk_lock_token);
PG_FUNCTION_INFO_V1(zk_lock_check);
PG_FUNCTION_INFO_V1(zk_lock_path);
PG_FUNCTION_INFO_V1(zk_locks);
PG_FUNCTION_INFO_V1(zk_status);
PG_FUNCTION_INFO_V1(zk_status_1_5);
PG_FUNCTION_INFO_V1(zk_waits_for);
PG_FUNCTION_INFO_V1(zk_lock_verify);
PG_FUNCTION_INFO_V1(zk_lock_revoke);
PG_FUNCTION_INFO_V1(zk_semaphore_acquire);
PG_FUNCTION_INFO_V1(zk_semaphore_acquire_xact);
PG_FUNCTION_INFO_V1(zk_semaphore_try);
PG_FUNCTION_INFO_V1(zk_semaphore_try_xact);
PG_FUNCTION_INFO_V1(zk_semaphore_release);
PG_FUNCTION_INFO_V1(zk_semaphore_contenders);

static text *
zkl_name_arg(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("ZooKeeper lock name must not be null")));
	return PG_GETARG_TEXT_PP(0);
}

/*
 * An interval as whole milliseconds, rounded up so that a positive timeout
 * below 1 ms still waits; a month counts 30 days, as in interval
 * arithmetic.  The sum is taken without overflow: false when it is
 * negative; an interval longer than int64 milliseconds can hold (300000
 * years) comes back as PG_INT64_MAX, a wait no clock will see end.  From 17
 * on 'infinity' (every field at its maximum) is such an interval, and
 * '-infinity' (every field at its minimum) a negative one.
 */
static bool
zkl_interval_ms(const Interval *iv, int64 *ms)
{
#ifdef HAVE_INT128
	int128		us = (int128) iv->time + (int128) iv->day * USECS_PER_DAY +
	(int128) iv->month * DAYS_PER_MONTH * USECS_PER_DAY;

	if (us < 0)
		return false;
	us = (us + 999) / 1000;
	*ms = us > PG_INT64_MAX ? PG_INT64_MAX : (int64) us;
	return true;
#else
	long double us = (long double) iv->time + (long double) iv->day * USECS_PER_DAY +
	(long double) iv->month * DAYS_PER_MONTH * USECS_PER_DAY;

	if (us < 0)
		return false;
	us = (us + 999) / 1000;
	*ms = us >= (long double) PG_INT64_MAX ? PG_INT64_MAX : (int64) us;
	return true;
#endif
}

/* The timeout argument (number argno) in ms; -1 when NULL (use lock_timeout). */
static int64
zkl_timeout_arg(FunctionCallInfo fcinfo, int argno)
{
	int64		ms;

	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return -1;
	if (!zkl_interval_ms(PG_GETARG_INTERVAL_P(argno), &ms))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ZooKeeper lock timeout must not be negative"),
				 errhint("Use NULL to wait as long as lock_timeout allows, or 0 not to wait.")));
	return ms;
}

static Datum
zkl_acquire_sql(FunctionCallInfo fcinfo, bool shared, bool xact)
{
	text	   *name = zkl_name_arg(fcinfo);
	int64		timeout_ms = zkl_timeout_arg(fcinfo, 1);
	int64		token;

	if (!zkl_acquire(name, shared ? ZKL_MODE_SHARED : ZKL_MODE_EXCLUSIVE, 0, xact, false, timeout_ms, &token))
	{
		/* Only an explicit zero timeout gets here: report it like a timeout. */
		char		key[ZKL_MAX_NAME_LEN + 1];

		zkl_name_key(name, key);
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("could not obtain ZooKeeper lock \"%s\"", key),
				 errdetail("Another holder has it and the timeout is zero.")));
	}
	PG_RETURN_INT64(token);
}

Datum
zk_lock_acquire(PG_FUNCTION_ARGS)
{
	return zkl_acquire_sql(fcinfo, false, false);
}

Datum
zk_lock_acquire_xact(PG_FUNCTION_ARGS)
{
	return zkl_acquire_sql(fcinfo, false, true);
}

Datum
zk_lock_acquire_shared(PG_FUNCTION_ARGS)
{
	return zkl_acquire_sql(fcinfo, true, false);
}

Datum
zk_lock_acquire_xact_shared(PG_FUNCTION_ARGS)
{
	return zkl_acquire_sql(fcinfo, true, true);
}

static Datum
zkl_try_sql(FunctionCallInfo fcinfo, bool shared, bool xact)
{
	int64		token;

	PG_RETURN_BOOL(zkl_acquire(zkl_name_arg(fcinfo), shared ? ZKL_MODE_SHARED : ZKL_MODE_EXCLUSIVE, 0,
							   xact, true, 0, &token));
}

Datum
zk_lock_try(PG_FUNCTION_ARGS)
{
	return zkl_try_sql(fcinfo, false, false);
}

Datum
zk_lock_try_xact(PG_FUNCTION_ARGS)
{
	return zkl_try_sql(fcinfo, false, true);
}

Datum
zk_lock_try_shared(PG_FUNCTION_ARGS)
{
	return zkl_try_sql(fcinfo, true, false);
}

Datum
zk_lock_try_xact_shared(PG_FUNCTION_ARGS)
{
	return zkl_try_sql(fcinfo, true, true);
}

Datum
zk_lock_release(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(zkl_release_session(zkl_name_arg(fcinfo), ZKL_MODE_EXCLUSIVE));
}

Datum
zk_lock_release_shared(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(zkl_release_session(zkl_name_arg(fcinfo), ZKL_MODE_SHARED));
}

/* Several exclusive locks at once; returns their tokens in the given order. */
static Datum
zkl_acquire_set_sql(FunctionCallInfo fcinfo, bool xact)
{
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	const char **names;
	int64	   *tokens;
	Datum	   *result;
	int64		timeout_ms = zkl_timeout_arg(fcinfo, 1);
	char		key[ZKL_MAX_NAME_LEN + 1];

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("ZooKeeper lock names must not be null")));
	arr = PG_GETARG_ARRAYTYPE_P(0);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("ZooKeeper lock names must be a one-dimensional array")));

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ZooKeeper lock names must not be an empty array")));

	names = palloc(sizeof(char *) * n);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("ZooKeeper lock name must not be null"),
					 errdetail("Element %d of the array is null.", i + 1)));
		/* Each key as long as its name: memory in proportion to the array. */
		zkl_name_key(DatumGetTextPP(elems[i]), key);
		names[i] = pstrdup(key);
	}

	tokens = palloc(sizeof(int64) * n);
	zkl_acquire_set(names, n, xact, timeout_ms, tokens);

	result = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
		result[i] = Int64GetDatum(tokens[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(result, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
										  TYPALIGN_DOUBLE));
}

Datum
zk_lock_acquire_set(PG_FUNCTION_ARGS)
{
	return zkl_acquire_set_sql(fcinfo, false);
}

Datum
zk_lock_acquire_xact_set(PG_FUNCTION_ARGS)
{
	return zkl_acquire_set_sql(fcinfo, true);
}

/* Every contender for the lock, from every client, in queue order. */
Datum
zk_lock_contenders(PG_FUNCTION_ARGS)
{
	zkl_check_call_columns(fcinfo, "zk_lock_contenders", ZKL_COLUMNS_CONTENDERS);
	zkl_list_contenders(fcinfo, zkl_name_arg(fcinfo));
	return (Datum) 0;
}

Datum
zk_lock_release_all(PG_FUNCTION_ARGS)
{
	zkl_release_all_session(true);
	PG_RETURN_VOID();
}

Datum
zk_lock_token(PG_FUNCTION_ARGS)
{
	int64		token;

	if (!zkl_held_token(zkl_name_arg(fcinfo), &token))
		PG_RETURN_NULL();
	PG_RETURN_INT64(token);
}

/*
 * True only while this backend holds the lock and the session that granted
 * it is proven alive as a commit needs it (zkl_held_proven); never waits.
 */
Datum
zk_lock_check(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(zkl_held_proven(zkl_name_arg(fcinfo)));
}

Datum
zk_lock_path(PG_FUNCTION_ARGS)
{
	text	   *name = zkl_name_arg(fcinfo);

	zkl_require_shmem();
	PG_RETURN_TEXT_P(cstring_to_text(zkl_lock_dir(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name))));
}

static const char *
zkl_slot_state_name(zkl_slot_state state)
{
	switch (state)
	{
		case ZKL_SLOT_WAITING:
			return "waiting";
		case ZKL_SLOT_HELD:
			return "held";
		case ZKL_SLOT_RELEASING:
		case ZKL_SLOT_BUSY:
			return "releasing";
		case ZKL_SLOT_LOST:
			return "lost";
		case ZKL_SLOT_FAILED:
			return "failed";
		case ZKL_SLOT_FREE:
			break;
	}
	return "free";
}

static const char *
zkl_scope_name(const zkl_slot *slot)
{
	if (slot->session_count > 0 && slot->xact_count > 0)
		return "session+transaction";
	return slot->xact_count > 0 ? "transaction" : "session";
}

/* One row of zk_locks, copied out of its slot under the shared lock. */
typedef struct zkl_lock_row
{
	int			pid;
	Oid			dbid;
	int			encoding;		/* of the database that asked: name's bytes */
	char	   *name;
	const char *mode;
	const char *scope;
	const char *state;
	char	   *path;			/* NULL: no node yet */
	int64		token;			/* 0: none yet */
	TimestampTz requested_at;
	TimestampTz granted_at;		/* 0: not granted */
}			zkl_lock_row;

/*
 * Every request and hold of this cluster, for the zk_locks view.  The rows
 * are copied out under the shared lock and turned into tuples after it is
 * released: the worker's grants and proofs take that lock exclusively, and
 * must not wait while a result set converts names or spills to disk.
 */
Datum
zk_locks(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	zkl_lock_row *rows;
	int			nrows = 0;
	bool		suspended;

	zkl_require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	zkl_check_result_columns(rsinfo->setDesc, "zk_locks_internal", ZKL_COLUMNS_LOCKS);
	rows = palloc(sizeof(zkl_lock_row) * zkl_shared->nslots);

	LWLockAcquire(zkl_shared->lock, LW_SHARED);

	/*
	 * A hold is "held" only while the session that granted it is connected;
	 * while it is suspended (or being reattached) nothing confirms the hold,
	 * which may be lost without the worker knowing yet: "suspended", as
	 * Curator calls that state.  zk_lock_check answers false then.
	 */
	suspended = zkl_shared->session_state != ZKL_SESSION_CONNECTED;
	for (int i = zkl_shared->used_head; i >= 0; i = zkl_shared->slots[i].next)
	{
		zkl_slot   *slot = &zkl_shared->slots[i];
		zkl_lock_row *row;

		if (slot->inspect)
			continue;
		Assert(nrows < zkl_shared->nslots);
		row = &rows[nrows++];
		row->pid = slot->pid;
		row->dbid = slot->dbid;
		row->encoding = slot->encoding;
		row->name = pstrdup(slot->name);
		row->mode = slot->permits > 0 ? "semaphore" :
			slot->kind == ZKL_NODE_READ ? "shared" : "exclusive";
		row->scope = zkl_scope_name(slot);
		row->state = slot->stranded ? "stranded" :
			slot->state == ZKL_SLOT_HELD && slot->take_reason != ZKL_TAKE_NONE ? "lost" :
			slot->state == ZKL_SLOT_HELD && suspended ? "suspended" :
			slot->state == ZKL_SLOT_HELD && slot->revoke_requested ? "revoke requested" :
			zkl_slot_state_name(slot->state);
		row->path = slot->node[0] != '\0' ? psprintf("%s/%s", slot->dir, slot->node) : NULL;
		row->token = slot->token;
		row->requested_at = slot->requested_at;
		row->granted_at = slot->state == ZKL_SLOT_WAITING ? 0 : slot->granted_at;
	}
	LWLockRelease(zkl_shared->lock);

	for (int i = 0; i < nrows; i++)
	{
		zkl_lock_row *row = &rows[i];
		Datum		values[ZKL_COLUMNS_LOCKS];
		bool		nulls[ZKL_COLUMNS_LOCKS] = {0};

		values[0] = Int32GetDatum(row->pid);
		values[1] = ObjectIdGetDatum(row->dbid);
		/* A name of a database of another encoding may not be valid here. */
		values[2] = PointerGetDatum(zkl_text_for_reader(row->name, strlen(row->name), row->encoding));
		values[3] = CStringGetTextDatum(row->mode);
		values[4] = CStringGetTextDatum(row->scope);
		values[5] = CStringGetTextDatum(row->state);
		values[6] = row->path ? CStringGetTextDatum(row->path) : (Datum) 0;
		nulls[6] = row->path == NULL;
		values[7] = Int64GetDatum(row->token);
		nulls[7] = row->token == 0;
		values[8] = TimestampTzGetDatum(row->requested_at);
		values[9] = TimestampTzGetDatum(row->granted_at);
		nulls[9] = row->granted_at == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

static const char *
zkl_session_state_name(zkl_session_state state)
{
	switch (state)
	{
		case ZKL_SESSION_CONNECTED:
			return "connected";
		case ZKL_SESSION_SUSPENDED:
			return "suspended";
		case ZKL_SESSION_EXPIRED:
			return "expired";
		case ZKL_SESSION_STARTING:
			break;
	}
	return "connecting";
}

/*
 * The worker's session and counters, as one row of the shape the calling
 * declaration has: each version added columns at the end (ZKL_COLUMNS_STATUS_*),
 * so a shape is the first columns of the newest.  zk_status is the C entry
 * of the declarations of 1.0 to 1.4 (databases not yet updated, and the
 * renamed zk_status_1_1() and zk_status_1_3() that updates keep for the
 * users' objects that depend on them); zk_status_1_5 that of 1.5.
 */
static Datum
zkl_status_row(FunctionCallInfo fcinfo, int ncolumns)
{
	TupleDesc	tupdesc;
	Datum		values[ZKL_COLUMNS_STATUS_1_5];
	bool		nulls[ZKL_COLUMNS_STATUS_1_5] = {0};
	int			used;
	zkl_shared_state *s;

	zkl_require_shmem();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	zkl_check_result_columns(tupdesc, "zk_status", ncolumns);
	s = zkl_shared;

	LWLockAcquire(s->lock, LW_SHARED);
	used = s->nused - s->nreserve_used;
	values[0] = CStringGetTextDatum(s->worker_pid == 0 ? "no worker" : zkl_session_state_name(s->session_state));
	if (s->session_id != 0)
		values[1] = CStringGetTextDatum(psprintf("0x%llx", (unsigned long long) s->session_id));
	else
		nulls[1] = true;
	values[2] = CStringGetTextDatum(s->server);
	nulls[2] = s->server[0] == '\0';
	values[3] = Int32GetDatum(s->negotiated_timeout);
	nulls[3] = s->negotiated_timeout == 0;
	values[4] = TimestampTzGetDatum(s->connected_since);
	nulls[4] = s->connected_since == 0 || s->session_state != ZKL_SESSION_CONNECTED;
	values[5] = TimestampTzGetDatum(s->last_contact);
	nulls[5] = s->last_contact == 0;
	values[6] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.acquired));
	values[7] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.released));
	values[8] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.timeouts));
	values[9] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.cancels));
	values[10] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.lost));
	values[11] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.requests));
	values[12] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.watch_events));
	values[13] = Int32GetDatum(used);
	values[14] = Int32GetDatum(s->nlock_slots);
	values[15] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.release_requests));
	values[16] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.handoffs));
	values[17] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.handoff_requests));
	/* ZKL_COLUMNS_STATUS_1_0: the columns before are those of 1.0 and 1.1. */
	values[18] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.deadlock_checks));
	values[19] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.deadlocks_found));
	/* ZKL_COLUMNS_STATUS_1_2: 1.2 and 1.3. */
	values[20] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.near_top_listings));
	/* ZKL_COLUMNS_STATUS_1_4. */
	values[21] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.early_losses));
	values[22] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.session_expiries));
	values[23] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters.commits_refused));
	/* ZKL_COLUMNS_STATUS_1_5. */
	LWLockRelease(s->lock);

	/* The descriptor takes the first ncolumns. */
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* zk_status() of 1.0 to 1.4: one of their shapes, by the column count. */
Datum
zk_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	int			ncolumns;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	switch (tupdesc->natts)
	{
		case ZKL_COLUMNS_STATUS_1_0:
		case ZKL_COLUMNS_STATUS_1_2:
		case ZKL_COLUMNS_STATUS_1_4:
			ncolumns = tupdesc->natts;
			break;
		default:
			zkl_result_shape_error(tupdesc, "zk_status");
			pg_unreachable();
	}
	return zkl_status_row(fcinfo, ncolumns);
}

/* zk_status() of 1.5. */
Datum
zk_status_1_5(PG_FUNCTION_ARGS)
{
	return zkl_status_row(fcinfo, ZKL_COLUMNS_STATUS_1_5);
}

/* The waits-for edges this cluster can see (waits_view.c). */
Datum
zk_waits_for(PG_FUNCTION_ARGS)
{
	zkl_check_call_columns(fcinfo, "zk_waits_for", ZKL_COLUMNS_WAITS_FOR);
	zkl_list_waits_for(fcinfo);
	return (Datum) 0;
}

/* Whether the contender whose czxid is token holds lock name now. */
Datum
zk_lock_verify(PG_FUNCTION_ARGS)
{
	text	   *name = zkl_name_arg(fcinfo);

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("fencing token must not be null")));
	PG_RETURN_BOOL(zkl_verify_token(name, PG_GETARG_INT64(1)));
}

/* Ask every holder of lock name to give it up; how many were asked. */
Datum
zk_lock_revoke(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(zkl_revoke_holders(zkl_name_arg(fcinfo)));
}

/*
 * The permits argument of a semaphore: how many holders it admits.  Every
 * client of one semaphore must give the same number, as with Curator.
 */
static int
zkl_permits_arg(FunctionCallInfo fcinfo)
{
	int32		permits;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("number of permits of a ZooKeeper semaphore must not be null")));
	permits = PG_GETARG_INT32(1);
	if (permits < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("number of permits of a ZooKeeper semaphore must be at least 1"),
				 errdetail("The number given was %d.", permits)));
	return permits;
}

static Datum
zkl_semaphore_acquire_sql(FunctionCallInfo fcinfo, bool xact)
{
	text	   *name = zkl_name_arg(fcinfo);
	int			permits = zkl_permits_arg(fcinfo);
	int64		timeout_ms = zkl_timeout_arg(fcinfo, 2);
	int64		token;

	if (!zkl_acquire(name, ZKL_MODE_SEMAPHORE, permits, xact, false, timeout_ms, &token))
	{
		char		key[ZKL_MAX_NAME_LEN + 1];

		zkl_name_key(name, key);
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("could not obtain a permit of ZooKeeper semaphore \"%s\"", key),
				 errdetail("All %d permits are held and the timeout is zero.", permits)));
	}
	PG_RETURN_INT64(token);
}

Datum
zk_semaphore_acquire(PG_FUNCTION_ARGS)
{
	return zkl_semaphore_acquire_sql(fcinfo, false);
}

Datum
zk_semaphore_acquire_xact(PG_FUNCTION_ARGS)
{
	return zkl_semaphore_acquire_sql(fcinfo, true);
}

Datum
zk_semaphore_try(PG_FUNCTION_ARGS)
{
	int64		token;

	PG_RETURN_BOOL(zkl_acquire(zkl_name_arg(fcinfo), ZKL_MODE_SEMAPHORE, zkl_permits_arg(fcinfo),
							   false, true, 0, &token));
}

Datum
zk_semaphore_try_xact(PG_FUNCTION_ARGS)
{
	int64		token;

	PG_RETURN_BOOL(zkl_acquire(zkl_name_arg(fcinfo), ZKL_MODE_SEMAPHORE, zkl_permits_arg(fcinfo),
							   true, true, 0, &token));
}

Datum
zk_semaphore_release(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(zkl_release_session(zkl_name_arg(fcinfo), ZKL_MODE_SEMAPHORE));
}

Datum
zk_semaphore_contenders(PG_FUNCTION_ARGS)
{
	zkl_check_call_columns(fcinfo, "zk_semaphore_contenders", ZKL_COLUMNS_CONTENDERS);
	zkl_list_semaphore(fcinfo, zkl_name_arg(fcinfo));
	return (Datum) 0;
}
