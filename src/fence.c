/*-------------------------------------------------------------------------
 *
 * fence.c
 *		Fencing enforced by PostgreSQL: zk_fence(resource, token) and the row
 *		trigger zk_fence_trigger(resource, token_column) refuse a fencing
 *		token older than the newest one accepted for the resource in this
 *		database.
 *
 * The newest token of each resource is one row of the extension's table
 * zk_fence_tokens.  One statement checks a token and records it:
 *
 *		INSERT ... ON CONFLICT (resource) DO UPDATE ...
 *			WHERE t.token <= EXCLUDED.token
 *
 * A resource seen for the first time is inserted; a known one is updated
 * when the token is not older (an equal token is the same holder writing
 * again).  ON CONFLICT locks the existing row even when the WHERE clause
 * fails, and a concurrent first insert of the same resource waits for the
 * other inserter, so the callers of one resource are serialised until their
 * transactions end: a second caller waits for the first one's commit or
 * rollback, then compares its token with what the first one left.  When the
 * statement wrote nothing the token was older; the row, locked by us and
 * so stable, gives the token it lost to.  A refusal is an error, so the
 * caller's write is never made.
 *
 * Both functions are SECURITY DEFINER: their callers need EXECUTE, no right
 * on the table.  The extension is relocatable, so the table is named by the
 * schema the catalogs give the extension now, never through search_path;
 * the two statements are prepared once per session and again when that
 * schema is moved or renamed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

/* A fencing token older than one already accepted for its resource. */
#define ERRCODE_ZKLOCK_STALE_TOKEN	MAKE_SQLSTATE('Z','K','0','0','3')

PG_FUNCTION_INFO_V1(zk_fence);
PG_FUNCTION_INFO_V1(zk_fence_trigger);

/*
 * The session's prepared statements and the schema-qualified table name
 * they were made for ("schema".zk_fence_tokens, in TopMemoryContext).
 */
static char *fence_table = NULL;
static SPIPlanPtr fence_upsert = NULL;
static SPIPlanPtr fence_current = NULL;

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
 * Make sure the statements are prepared for the table where it is now.
 * Runs inside SPI_connect().
 */
static void
zkl_fence_prepare(void)
{
	char	   *nspname;
	char	   *table;
	StringInfoData sql;
	Oid			argtypes[2] = {TEXTOID, INT8OID};
	SPIPlanPtr	upsert;
	SPIPlanPtr	current;

	nspname = get_namespace_name(zkl_extension_schema());
	if (nspname == NULL)
		elog(ERROR, "schema of extension \"zklock\" not found");
	table = psprintf("%s.zk_fence_tokens", quote_identifier(nspname));
	if (fence_table != NULL && strcmp(fence_table, table) == 0)
		return;

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "INSERT INTO %s AS t (resource, token, accepted_at) "
					 "VALUES ($1, $2, now()) "
					 "ON CONFLICT (resource) DO UPDATE "
					 "SET token = EXCLUDED.token, accepted_at = EXCLUDED.accepted_at "
					 "WHERE t.token <= EXCLUDED.token",
					 table);
	upsert = SPI_prepare(sql.data, 2, argtypes);
	if (upsert == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s",
			 sql.data, SPI_result_code_string(SPI_result));

	resetStringInfo(&sql);
	appendStringInfo(&sql, "SELECT token FROM %s WHERE resource = $1", table);
	current = SPI_prepare(sql.data, 1, argtypes);
	if (current == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s",
			 sql.data, SPI_result_code_string(SPI_result));

	/* Both made: only now replace what the session kept. */
	if (SPI_keepplan(upsert) != 0 || SPI_keepplan(current) != 0)
		elog(ERROR, "SPI_keepplan failed");
	if (fence_upsert != NULL)
		SPI_freeplan(fence_upsert);
	if (fence_current != NULL)
		SPI_freeplan(fence_current);
	if (fence_table != NULL)
		pfree(fence_table);
	fence_upsert = upsert;
	fence_current = current;
	fence_table = MemoryContextStrdup(TopMemoryContext, table);
}

/*
 * Accept token for resource, or raise ZK003 when a newer token was
 * accepted before.  The caller has checked both for NULL.
 */
static void
zkl_fence(text *resource, int64 token)
{
	Datum		values[2];
	int			rc;

	values[0] = PointerGetDatum(resource);
	values[1] = Int64GetDatum(token);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	zkl_fence_prepare();

	rc = SPI_execute_plan(fence_upsert, values, NULL, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "recording the fencing token failed: %s",
			 SPI_result_code_string(rc));

	if (SPI_processed == 0)
	{
		/*
		 * Refused.  The row is locked by us, its token newer; read it with a
		 * new snapshot (not read-only): under READ COMMITTED the statement's
		 * snapshot may predate the commit that wrote it.
		 */
		int64		accepted;
		bool		isnull;

		rc = SPI_execute_plan(fence_current, values, NULL, false, 1);
		if (rc != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "the accepted fencing token of resource \"%s\" could not be read",
				 text_to_cstring(resource));
		accepted = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 1,
											   &isnull));
		ereport(ERROR,
				(errcode(ERRCODE_ZKLOCK_STALE_TOKEN),
				 errmsg("stale fencing token for resource \"%s\"",
						text_to_cstring(resource)),
				 errdetail("Token %lld is older than token %lld, already accepted.",
						   (long long) token, (long long) accepted),
				 errhint("The holder of the older token has lost its lock to a later holder; "
						 "take the lock again for a new token.")));
	}

	SPI_finish();
}

Datum
zk_fence(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("fencing resource must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("fencing token must not be null")));

	zkl_fence(PG_GETARG_TEXT_PP(0), PG_GETARG_INT64(1));
	PG_RETURN_VOID();
}

/*
 * BEFORE INSERT OR UPDATE ... FOR EACH ROW
 * EXECUTE FUNCTION zk_fence_trigger('resource', 'token_column'):
 * fences each new row version with the token in its column.
 */
Datum
zk_fence_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Trigger    *trigger;
	Relation	rel;
	TupleDesc	tupdesc;
	HeapTuple	newtuple;
	const char *column;
	int			attnum;
	Oid			type;
	Datum		value;
	bool		isnull;
	int64		token;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("zk_fence_trigger: must be called as trigger")));
	if (!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!(TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) ||
		  TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("zk_fence_trigger: must be fired BEFORE INSERT OR UPDATE FOR EACH ROW")));
	/* NEW: the row inserted, or the new version of the row updated */
	if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		newtuple = trigdata->tg_trigtuple;
	else
		newtuple = trigdata->tg_newtuple;

	trigger = trigdata->tg_trigger;
	rel = trigdata->tg_relation;
	if (trigger->tgnargs != 2)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("zk_fence_trigger: trigger \"%s\" on relation \"%s\" needs 2 arguments, the resource and the token column, not %d",
						trigger->tgname, RelationGetRelationName(rel),
						trigger->tgnargs)));

	column = trigger->tgargs[1];
	tupdesc = RelationGetDescr(rel);
	attnum = SPI_fnumber(tupdesc, column);
	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						column, RelationGetRelationName(rel)),
				 errcontext("zk_fence_trigger() of trigger \"%s\"",
							trigger->tgname)));
	type = getBaseType(TupleDescAttr(tupdesc, attnum - 1)->atttypid);
	if (type != INT8OID && type != INT4OID && type != INT2OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of relation \"%s\" is of type %s, not bigint or integer",
						column, RelationGetRelationName(rel),
						format_type_be(TupleDescAttr(tupdesc, attnum - 1)->atttypid)),
				 errcontext("zk_fence_trigger() of trigger \"%s\"",
							trigger->tgname)));

	value = heap_getattr(newtuple, attnum, tupdesc, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("null fencing token in column \"%s\" of relation \"%s\"",
						column, RelationGetRelationName(rel)),
				 errdetail("Trigger \"%s\" refuses a row without a fencing token.",
						   trigger->tgname)));
	if (type == INT8OID)
		token = DatumGetInt64(value);
	else if (type == INT4OID)
		token = DatumGetInt32(value);
	else
		token = DatumGetInt16(value);

	zkl_fence(cstring_to_text(trigger->tgargs[0]), token);

	return PointerGetDatum(newtuple);
}
