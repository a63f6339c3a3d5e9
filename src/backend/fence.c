/*-------------------------------------------------------------------------
 *
 * fence.c
 *		Fencing enforced by PostgreSQL, in the backends: zk_fence(resource,
 *		token) and the row trigger zk_fence_trigger(resource, token_column)
 *		(fence_trigger.c) refuse a fencing token older than the newest one
 *		accepted for the resource in this database.
 *
 * The newest token of each fence is one row of a table of the extension.
 * A fence is one resource (any text; the name of the lock its writers take)
 * of one role for zk_fence (zk_fence_tokens, keyed on the calling role and
 * the resource) and of one table for the trigger (zk_fence_table_tokens,
 * keyed on the trigger's table and the resource), so that no role reaches
 * a fence of another role or of a table it cannot write.  (1.1 and 1.2 had
 * one namespace, zk_fence_tokens keyed on the resource alone; their
 * functions still work that way in a database not updated.)  One statement
 * checks a token and records it:
 *
 *		INSERT ... ON CONFLICT (key, resource) DO UPDATE ...
 *			WHERE t.token <= EXCLUDED.token
 *
 * A resource seen for the first time is inserted; a known one is updated
 * when the token is not older (an equal token is the same holder writing
 * again).  ON CONFLICT locks the existing row even when the WHERE clause
 * fails, and a concurrent first insert of the same resource waits for the
 * other inserter, so the callers of one fence are serialised until their
 * transactions end: a second caller waits for the first one's commit or
 * rollback, then compares its token with what the first one left.  When the
 * statement wrote nothing the token was older; the row, locked by us and
 * so stable, gives the token it lost to.  A refusal is an error, so the
 * caller's write is never made.
 *
 * From 1.3 a token advances a fence only when it is proven a holder's of
 * the lock named by the resource (zkl_fence_proven): no role can push a
 * fence beyond what its writers' next lock will give them.
 *
 * From 1.5 a token that a fenced row carries is the writer's only when the
 * session holds the lock with it, or its transaction presented it to
 * zk_fence or zk_fence_table (fence_claims) and ZooKeeper confirms it:
 * anyone may copy the current holder's token from a row.
 *
 * A write that carries no token of its own (zkl_fence_token: an UPDATE whose
 * row keeps its token, a delete through zk_fence_delete_trigger,
 * zk_fence_table without a token) is fenced with the session's own token
 * for the lock, and refused without it.  A fence row stays locked until
 * the fencer's transaction ends, so each fence is noted on the hold whose
 * token it used (zkl_note_fence_row): should that lock be lost first, the
 * worker ends the backend rather than let a stale holder, idle in its
 * transaction, keep the next holder waiting.
 *
 * Callers need EXECUTE, no right on the tables: the statements run as the
 * tables' owner (1.1 and 1.2: SECURITY DEFINER; from 1.3 the C code
 * switches, so that it knows its caller).  The extension is relocatable,
 * so the tables are named by the schema the catalogs give the extension
 * now, never through search_path; the statements are prepared once per
 * session and again when that schema is moved or renamed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "backend/contenders.h"
#include "backend/error_codes.h"
#include "backend/fence.h"
#include "backend/locks.h"
#include "pg_compat.h"
#include "settings.h"

PG_FUNCTION_INFO_V1(zk_fence);
PG_FUNCTION_INFO_V1(zk_fence_1_3);

/*
 * The session's prepared statements of each kind and the schema-qualified
 * table name they were made for (in TopMemoryContext).
 */
typedef struct zkl_fence_plans
{
	char	   *table;
	Oid			relid;
	bool		named;			/* zk_fence_tokens has fencer_name (1.5) */
	SPIPlanPtr	upsert;
	SPIPlanPtr	current;
}			zkl_fence_plans;

static zkl_fence_plans fence_plans[ZKL_FENCE_KINDS];

/*
 * The tokens this transaction presented (zklock 1.5): given to zk_fence or
 * zk_fence_table, and accepted.  Presenting a token is the caller's claim
 * that it holds lock resource with it (a Curator or kazoo holder, or a
 * zklock holder's second connection); a token that a row carries is the
 * writer's only when the session holds the lock with it or the
 * transaction presented it, never because the row had it already.  In
 * TopTransactionContext; a subtransaction's claims go with its abort.
 */
typedef struct zkl_fence_claim
{
	SubTransactionId subid;
	int64		token;
	char		resource[FLEXIBLE_ARRAY_MEMBER];
}			zkl_fence_claim;

static List *fence_claims = NIL;
static bool fence_claim_callbacks = false;

/*
 * The schema of the zklock extension, as pg_extension says now.
 * (get_extension_schema() is not exported before PostgreSQL 16.)
 */
static Oid
zkl_extension_schema(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			nsp = InvalidOid;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("zklock"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		nsp = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	if (!OidIsValid(nsp))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"zklock\" is not installed in this database")));
	return nsp;
}

/*
 * The statements' text, for table (schema-qualified) keyed on keycol (NULL:
 * the 1.1 table, keyed on the resource alone).  Every operator and function
 * is pg_catalog's by name: the statements run as the tables' owner and must
 * not depend on a search_path.
 *
 * From 1.5 a row of zk_fence_tokens carries the name its role had when it
 * was written (named): a row of another name is a dropped role's whose OID
 * came back (or the role was renamed), never the caller's fence.  It is not
 * read, and the upsert writes over it whatever its token.
 */
static void
zkl_fence_upsert_sql(StringInfo sql, const char *table, const char *keycol,
					 bool named)
{
	if (keycol == NULL)
		appendStringInfo(sql,
						 "INSERT INTO %s AS t (resource, token, accepted_at) "
						 "VALUES ($1, $2, pg_catalog.now()) "
						 "ON CONFLICT (resource) DO UPDATE ", table);
	else if (named)
		appendStringInfo(sql,
						 "INSERT INTO %s AS t (fencer, fencer_name, resource, token, accepted_at) "
						 "VALUES ($3, pg_catalog.pg_get_userbyid($3), $1, $2, pg_catalog.now()) "
						 "ON CONFLICT (fencer, resource) DO UPDATE ", table);
	else
		appendStringInfo(sql,
						 "INSERT INTO %s AS t (%s, resource, token, accepted_at) "
						 "VALUES ($3, $1, $2, pg_catalog.now()) "
						 "ON CONFLICT (%s, resource) DO UPDATE ",
						 table, keycol, keycol);
	appendStringInfoString(sql,
						   "SET token = EXCLUDED.token, accepted_at = EXCLUDED.accepted_at ");
	if (named)
		appendStringInfoString(sql,
							   ", fencer_name = EXCLUDED.fencer_name "
							   "WHERE t.token OPERATOR(pg_catalog.<=) EXCLUDED.token "
							   "OR (t.fencer_name OPERATOR(pg_catalog.=) EXCLUDED.fencer_name) IS FALSE");
	else
		appendStringInfoString(sql,
							   "WHERE t.token OPERATOR(pg_catalog.<=) EXCLUDED.token");
}

/* The read of a fence's accepted token: see zkl_fence_upsert_sql. */
static void
zkl_fence_current_sql(StringInfo sql, const char *table, const char *keycol,
					  bool named)
{
	appendStringInfo(sql, "SELECT token FROM %s WHERE resource OPERATOR(pg_catalog.=) $1", table);
	if (keycol != NULL)
		appendStringInfo(sql, " AND %s OPERATOR(pg_catalog.=) $3", keycol);
	if (named)
		appendStringInfoString(sql,
							   " AND (fencer_name OPERATOR(pg_catalog.=) pg_catalog.pg_get_userbyid($3)) IS NOT FALSE");
}

/* sql prepared, or an error. */
static SPIPlanPtr
zkl_fence_plan(const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s",
			 sql, SPI_result_code_string(SPI_result));
	return plan;
}

/*
 * Make sure the statements of kind are prepared for its table where it is
 * now; the plans.  Runs inside SPI_connect().
 */
static zkl_fence_plans *
zkl_fence_prepare(zkl_fence_kind kind)
{
	zkl_fence_plans *plans = &fence_plans[kind];
	const char *relname = kind == ZKL_FENCE_TABLE ? "zk_fence_table_tokens" : "zk_fence_tokens";
	const char *keycol = kind == ZKL_FENCE_ROLE ? "fencer" :
	kind == ZKL_FENCE_TABLE ? "fenced_table" : NULL;
	Oid			nsp;
	Oid			relid;
	char	   *nspname;
	char	   *table;
	StringInfoData sql;
	Oid			argtypes[3] = {TEXTOID, INT8OID,
	kind == ZKL_FENCE_TABLE ? REGCLASSOID : REGROLEOID};
	int			nargs = keycol != NULL ? 3 : 2;
	SPIPlanPtr	upsert;
	SPIPlanPtr	current;
	bool		named;

	nsp = zkl_extension_schema();
	nspname = get_namespace_name(nsp);
	relid = get_relname_relid(relname, nsp);
	if (nspname == NULL || !OidIsValid(relid))
		elog(ERROR, "table \"%s\" of extension \"zklock\" not found", relname);
	named = kind == ZKL_FENCE_ROLE &&
		get_attnum(relid, "fencer_name") != InvalidAttrNumber;
	table = psprintf("%s.%s", quote_identifier(nspname), relname);
	if (plans->table != NULL && strcmp(plans->table, table) == 0 &&
		plans->relid == relid && plans->named == named)
		return plans;

	initStringInfo(&sql);
	zkl_fence_upsert_sql(&sql, table, keycol, named);
	upsert = zkl_fence_plan(sql.data, nargs, argtypes);
	resetStringInfo(&sql);
	zkl_fence_current_sql(&sql, table, keycol, named);
	current = zkl_fence_plan(sql.data, nargs, argtypes);

	/* Both made: only now replace what the session kept. */
	if (SPI_keepplan(upsert) != 0 || SPI_keepplan(current) != 0)
		elog(ERROR, "SPI_keepplan failed");
	if (plans->upsert != NULL)
		SPI_freeplan(plans->upsert);
	if (plans->current != NULL)
		SPI_freeplan(plans->current);
	if (plans->table != NULL)
		pfree(plans->table);
	plans->upsert = upsert;
	plans->current = current;
	plans->table = MemoryContextStrdup(TopMemoryContext, table);
	plans->relid = relid;
	plans->named = named;
	return plans;
}

/*
 * The token the fence of values (resource, token, key) has accepted, read
 * with a new snapshot: under READ COMMITTED the statement's snapshot may
 * predate the commit that wrote it.  False when it has none.
 */
static bool
zkl_fence_current(zkl_fence_plans * plans, Datum *values, int64 *accepted)
{
	int			rc;
	bool		isnull;

	rc = SPI_execute_plan(plans->current, values, NULL, false, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading the accepted fencing token failed: %s",
			 SPI_result_code_string(rc));
	if (SPI_processed == 0)
		return false;
	*accepted = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 1,
											&isnull));
	return true;
}

/* The transaction ended: its claims with it (their memory was its). */
static void
zkl_claims_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			fence_claims = NIL;
			break;
		default:
			break;
	}
}

/* A subtransaction's claims go with its abort, pass to its parent at commit. */
static void
zkl_claims_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		foreach(lc, fence_claims)
		{
			zkl_fence_claim *claim = lfirst(lc);

			if (claim->subid == mySubid)
				claim->subid = parentSubid;
		}
	}
	else if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		foreach(lc, fence_claims)
		{
			zkl_fence_claim *claim = lfirst(lc);

			if (claim->subid == mySubid)
				fence_claims = foreach_delete_current(fence_claims, lc);
		}
	}
}

/* This transaction presented token for lock resource. */
static void
zkl_note_claim(text *resource, int64 token)
{
	char	   *name = text_to_cstring(resource);
	MemoryContext old;
	zkl_fence_claim *claim;
	ListCell   *lc;

	foreach(lc, fence_claims)
	{
		claim = lfirst(lc);
		if (claim->token == token && strcmp(claim->resource, name) == 0)
			return;
	}
	if (!fence_claim_callbacks)
	{
		RegisterXactCallback(zkl_claims_xact_callback, NULL);
		RegisterSubXactCallback(zkl_claims_subxact_callback, NULL);
		fence_claim_callbacks = true;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	claim = palloc(offsetof(zkl_fence_claim, resource) + strlen(name) + 1);
	claim->subid = GetCurrentSubTransactionId();
	claim->token = token;
	strcpy(claim->resource, name);
	fence_claims = lappend(fence_claims, claim);
	MemoryContextSwitchTo(old);
}

/*
 * Whether this transaction presented *token for lock resource, or, with
 * any, the newest token it presented for it (into *token).
 */
static bool
zkl_claimed(text *resource, int64 *token, bool any)
{
	char	   *name = text_to_cstring(resource);
	bool		found = false;
	ListCell   *lc;

	foreach(lc, fence_claims)
	{
		zkl_fence_claim *claim = lfirst(lc);

		if (strcmp(claim->resource, name) != 0)
			continue;
		if (!any && claim->token == *token)
			return true;
		if (any && (!found || claim->token > *token))
		{
			*token = claim->token;
			found = true;
		}
	}
	return found;
}

/*
 * The token this session writes with under lock resource: the token of its
 * own hold, or else the newest one its transaction presented (zkl_fence
 * proves the latter through ZooKeeper when it fences with it).  False when
 * it has neither: a write without a token of its own needs the lock.
 */
bool
zkl_writer_token(text *resource, int64 *token)
{
	if (zkl_held_token(resource, token))
		return true;
	return zkl_claimed(resource, token, true);
}

/* The owner of a fencing table, who may write it. */
static Oid
zkl_table_owner(Oid relid)
{
	HeapTuple	tuple;
	Oid			owner;

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/*
 * Whether token is a holder's of lock resource now: this session's own
 * hold, or any client's by ZooKeeper's word (as zk_lock_verify asks).  A
 * proven token is a czxid ZooKeeper gave, so never one above the newest
 * zxid of the ensemble.  A token that a row carries (how: ZKL_TOKEN_GIVEN)
 * is asked of ZooKeeper only when this transaction presented it: a token
 * copied from a row, this table's or another's, is no claim to the lock
 * (*claimed false then).
 */
static bool
zkl_fence_proven(text *resource, int64 token, zkl_fence_token how, bool *claimed)
{
	int64		held;

	*claimed = true;
	if (zkl_held_token(resource, &held) && held == token)
		return true;
	if (how == ZKL_TOKEN_GIVEN && !zkl_claimed(resource, &token, false))
	{
		*claimed = false;
		return false;
	}
	return zkl_verify_token(resource, token);
}

/* A fenced write without a token of its own, by a session without the lock. */
pg_noreturn static void
zkl_report_no_lock(text *resource, zkl_fence_token how)
{
	ereport(ERROR,
			(errcode(ERRCODE_ZKLOCK_UNPROVEN_TOKEN),
			 errmsg("this session does not hold lock \"%s\", which its fenced write needs",
					text_to_cstring(resource)),
			 errdetail(how == ZKL_TOKEN_NONE ?
					   "A delete from a fenced table, or zk_fence_table without a token, is fenced with the token of the lock this session holds, or of the one its transaction presented." :
					   "An update whose row keeps the token it had is fenced with the token of the lock this session holds, or of the one its transaction presented: the row's token is whoever wrote last."),
			 errhint("Take lock \"%s\" first, or, holding it through another client, present its token with zk_fence_table first in the transaction.",
					 text_to_cstring(resource))));
}

/*
 * A token that would advance the fence, or equals its newest, and is not
 * the writer's: one the transaction never claimed (a row's, copied), or
 * one no holder has now.
 */
pg_noreturn static void
zkl_report_unproven(text *resource, int64 token, bool claimed)
{
	if (!claimed)
		ereport(ERROR,
				(errcode(ERRCODE_ZKLOCK_UNPROVEN_TOKEN),
				 errmsg("fencing token %lld is not this session's for lock \"%s\"",
						(long long) token, text_to_cstring(resource)),
				 errdetail("This session does not hold lock \"%s\" with that token, and its transaction did not present it with zk_fence or zk_fence_table: a token copied from a row is no claim to the lock.",
						   text_to_cstring(resource)),
				 errhint("Take lock \"%s\" and write with its token, or, holding it through another client, present that token with zk_fence_table first in the transaction.",
						 text_to_cstring(resource))));
	ereport(ERROR,
			(errcode(ERRCODE_ZKLOCK_UNPROVEN_TOKEN),
			 errmsg("fencing token %lld is not a holder's of lock \"%s\"",
					(long long) token, text_to_cstring(resource)),
			 errdetail("Neither this session nor any ZooKeeper client holds lock \"%s\" with that token now.",
					   text_to_cstring(resource)),
			 errhint("Fence with the token the acquire of lock \"%s\" returned, while it is held.",
					 text_to_cstring(resource))));
}

/* The upsert refused token: the row is locked by us, its token newer. */
pg_noreturn static void
zkl_report_stale(zkl_fence_plans * plans, Datum *values, text *resource, int64 token)
{
	int64		accepted;

	if (!zkl_fence_current(plans, values, &accepted))
		elog(ERROR, "the accepted fencing token of resource \"%s\" could not be read",
			 text_to_cstring(resource));
	ereport(ERROR,
			(errcode(ERRCODE_ZKLOCK_STALE_TOKEN),
			 errmsg("stale fencing token for resource \"%s\"",
					text_to_cstring(resource)),
			 errdetail("Token %lld is older than token %lld, already accepted.",
					   (long long) token, (long long) accepted),
			 errhint("The holder of the older token has lost its lock to a later holder; "
					 "take the lock again for a new token.")));
}

/*
 * A write without a token of its own, by a session without the lock: a row
 * whose token is older than the fence's is told so (ZK003), as its stale
 * holder writing that token would be; otherwise the lock is missing
 * (ZK004).  Runs as the fencing table's owner, whom the error gives up.
 */
pg_noreturn static void
zkl_refuse_tokenless(zkl_fence_plans * plans, Datum *values, text *resource,
					 int64 token, zkl_fence_token how)
{
	int64		accepted;

	if (how == ZKL_TOKEN_UNCHANGED &&
		zkl_fence_current(plans, values, &accepted) && token < accepted)
		zkl_report_stale(plans, values, resource, token);
	zkl_report_no_lock(resource, how);
}

/*
 * Accept token for resource in the fence of kind (key: the role or the
 * table of the 1.3 kinds), or raise ZK003 when a newer token was accepted
 * before, or, from 1.3, ZK004 when the token would advance the fence and
 * is no holder's of lock resource.  The caller has checked both for NULL.
 *
 * From 1.3 the functions run as their caller (SECURITY INVOKER), so that
 * the caller is known here; the statements run as the owner of the
 * fencing table, the only role besides superusers that may write it.  A
 * caller that may write the table directly (insert and update it) needs
 * no proof, as it could write any token by hand: a superuser repairing or
 * restoring a fence.  The proof is asked for a token that would advance
 * the fence and for an equal one, which anyone may read from the fence or
 * from a fenced row (an UPDATE that writes a row's own token back): the
 * session's own hold proves it without a ZooKeeper call.  An older token
 * is refused, and since a fence only ever grows, the upsert that follows
 * refuses what became older meanwhile.
 */
void
zkl_fence(zkl_fence_kind kind, text *resource, int64 token, Oid key,
		  zkl_fence_token how)
{
	Datum		values[3];
	int			rc;
	zkl_fence_plans *plans;
	Oid			caller;
	int			sec_context;
	int64		accepted;

	values[0] = PointerGetDatum(resource);
	values[1] = Int64GetDatum(token);
	values[2] = ObjectIdGetDatum(key);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plans = zkl_fence_prepare(kind);

	GetUserIdAndSecContext(&caller, &sec_context);
	if (kind != ZKL_FENCE_1_1)
	{
		bool		exempt;
		Oid			owner = zkl_table_owner(plans->relid);
		int			owner_context = sec_context | SECURITY_LOCAL_USERID_CHANGE |
		SECURITY_RESTRICTED_OPERATION;

		exempt = zkl_fence_bypass &&
			pg_class_aclcheck(plans->relid, caller, ACL_INSERT) == ACLCHECK_OK &&
			pg_class_aclcheck(plans->relid, caller, ACL_UPDATE) == ACLCHECK_OK;

		/* A write without a token of its own, by a session without the lock */
		if ((how == ZKL_TOKEN_UNCHANGED || how == ZKL_TOKEN_NONE) && !exempt)
		{
			SetUserIdAndSecContext(owner, owner_context);
			zkl_refuse_tokenless(plans, values, resource, token, how);
		}
		if (how == ZKL_TOKEN_NONE)
		{
			SPI_finish();
			return;
		}

		/*
		 * The statements run as the owner, the proof as the caller (whose the
		 * worker's inspection is).  An error on the way restores the caller
		 * with the (sub)transaction.
		 */
		if (!exempt)
		{
			bool		known;
			bool		claimed;

			SetUserIdAndSecContext(owner, owner_context);
			known = zkl_fence_current(plans, values, &accepted);
			SetUserIdAndSecContext(caller, sec_context);
			if ((!known || token >= accepted) &&
				!zkl_fence_proven(resource, token, how, &claimed))
				zkl_report_unproven(resource, token, claimed);
		}
		SetUserIdAndSecContext(owner, owner_context);
	}

	rc = SPI_execute_plan(plans->upsert, values, NULL, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "recording the fencing token failed: %s",
			 SPI_result_code_string(rc));

	if (SPI_processed == 0)
		zkl_report_stale(plans, values, resource, token);

	SetUserIdAndSecContext(caller, sec_context);
	SPI_finish();

	/* A token presented and accepted is this transaction's claim. */
	if (kind != ZKL_FENCE_1_1 && how == ZKL_TOKEN_PRESENTED)
		zkl_note_claim(resource, token);

	/* The row stays locked until the transaction ends: see zkl_mark_lost. */
	zkl_note_fence_row(resource);
}

/* The arguments of zk_fence, checked for NULL. */
static void
zkl_fence_args(FunctionCallInfo fcinfo, text **resource, int64 *token)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("fencing resource must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("fencing token must not be null")));
	*resource = PG_GETARG_TEXT_PP(0);
	*token = PG_GETARG_INT64(1);
}

/* zk_fence of 1.1 and 1.2 */
Datum
zk_fence(PG_FUNCTION_ARGS)
{
	text	   *resource;
	int64		token;

	zkl_fence_args(fcinfo, &resource, &token);
	zkl_fence(ZKL_FENCE_1_1, resource, token, InvalidOid, ZKL_TOKEN_PRESENTED);
	PG_RETURN_VOID();
}

/* zk_fence from 1.3: the caller's own fence of resource, advanced by proof */
Datum
zk_fence_1_3(PG_FUNCTION_ARGS)
{
	text	   *resource;
	int64		token;

	zkl_fence_args(fcinfo, &resource, &token);
	zkl_fence(ZKL_FENCE_ROLE, resource, token, GetUserId(), ZKL_TOKEN_PRESENTED);
	PG_RETURN_VOID();
}
