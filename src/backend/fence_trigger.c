/*-------------------------------------------------------------------------
 *
 * fence_trigger.c
 *		The fencing of rows, in the backends: the trigger
 *		zk_fence_trigger(resource, token_column) fences each new row version
 *		with the token in its column (or the session's own), the delete
 *		trigger and zk_fence_table fence a table's deletes and writes.  Each
 *		goes through zkl_fence (fence.c), whose top says how a fence works.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "backend/fence.h"

PG_FUNCTION_INFO_V1(zk_fence_trigger);
PG_FUNCTION_INFO_V1(zk_fence_trigger_1_3);
PG_FUNCTION_INFO_V1(zk_fence_delete_trigger);
PG_FUNCTION_INFO_V1(zk_fence_table);

/*
 * The new row version with token in its token column (attnum, of base type
 * type): an update that left the column alone writes the token it is
 * fenced with, so that the row says whose write it is.
 */
static HeapTuple
zkl_set_row_token(HeapTuple tuple, Relation rel, int attnum, Oid type, int64 token)
{
	Datum		value;
	bool		isnull = false;

	if ((type == INT4OID && (token < PG_INT32_MIN || token > PG_INT32_MAX)) ||
		(type == INT2OID && (token < PG_INT16_MIN || token > PG_INT16_MAX)))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("fencing token %lld does not fit column \"%s\" of relation \"%s\"",
						(long long) token,
						NameStr(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attname),
						RelationGetRelationName(rel))));
	if (type == INT8OID)
		value = Int64GetDatum(token);
	else if (type == INT4OID)
		value = Int32GetDatum((int32) token);
	else
		value = Int16GetDatum((int16) token);
	return heap_modify_tuple_by_cols(tuple, RelationGetDescr(rel), 1, &attnum, &value, &isnull);
}

/*
 * The table whose fence a row of table relid is fenced in (zklock 1.5): the
 * root of its tree, a partition's partitioned root or an inheritance
 * child's topmost parent, so that a tree has one fence whichever member
 * the row is in.  A table that inherits from two tables has no one root:
 * it is refused, as is a table that is gone.
 */
static Oid
zkl_fence_root(Oid relid)
{
	for (;;)
	{
		Relation	inherits;
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tuple;
		Oid			parent = InvalidOid;
		int			parents = 0;

		if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("relation with OID %u does not exist", relid)));
		if (get_rel_relispartition(relid))
			return llast_oid(get_partition_ancestors(relid));

		inherits = table_open(InheritsRelationId, AccessShareLock);
		ScanKeyInit(&key, Anum_pg_inherits_inhrelid, BTEqualStrategyNumber,
					F_OIDEQ, ObjectIdGetDatum(relid));
		scan = systable_beginscan(inherits, InheritsRelidSeqnoIndexId, true,
								  NULL, 1, &key);
		while (HeapTupleIsValid(tuple = systable_getnext(scan)))
		{
			parent = ((Form_pg_inherits) GETSTRUCT(tuple))->inhparent;
			parents++;
		}
		systable_endscan(scan);
		table_close(inherits, AccessShareLock);

		if (parents == 0)
			return relid;
		if (parents > 1)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot fence table \"%s\": it inherits from %d tables",
							get_rel_name(relid), parents),
					 errdetail("The rows of an inheritance tree are fenced in the fence of its topmost table, and a table with several parents has no one such table."),
					 errhint("Fence a table that inherits from one table at most.")));
		relid = parent;
	}
}

/* The table whose fence a row of rel is fenced in. */
static Oid
zkl_fenced_table(Relation rel)
{
	return zkl_fence_root(RelationGetRelid(rel));
}

/* zk_fence_trigger is called as a trigger, fired as it must be. */
static void
zkl_check_trigger_call(FunctionCallInfo fcinfo)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

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
}

/*
 * The trigger's token column (its second argument): its number, and its
 * base type in *type, bigint, integer or smallint.
 */
static int
zkl_token_column(Trigger *trigger, Relation rel, Oid *type)
{
	const char *column = trigger->tgargs[1];
	TupleDesc	tupdesc = RelationGetDescr(rel);
	int			attnum = SPI_fnumber(tupdesc, column);

	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						column, RelationGetRelationName(rel)),
				 errcontext("zk_fence_trigger() of trigger \"%s\"",
							trigger->tgname)));
	*type = getBaseType(TupleDescAttr(tupdesc, attnum - 1)->atttypid);
	if (*type != INT8OID && *type != INT4OID && *type != INT2OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of relation \"%s\" is of type %s, not bigint or integer",
						column, RelationGetRelationName(rel),
						format_type_be(TupleDescAttr(tupdesc, attnum - 1)->atttypid)),
				 errcontext("zk_fence_trigger() of trigger \"%s\"",
							trigger->tgname)));
	return attnum;
}

/* The token in column attnum (of base type type) of tuple; false if NULL. */
static bool
zkl_row_token(HeapTuple tuple, TupleDesc tupdesc, int attnum, Oid type, int64 *token)
{
	bool		isnull;
	Datum		value = heap_getattr(tuple, attnum, tupdesc, &isnull);

	if (isnull)
		return false;
	if (type == INT8OID)
		*token = DatumGetInt64(value);
	else if (type == INT4OID)
		*token = DatumGetInt32(value);
	else
		*token = DatumGetInt16(value);
	return true;
}

/*
 * BEFORE INSERT OR UPDATE ... FOR EACH ROW
 * EXECUTE FUNCTION zk_fence_trigger('resource', 'token_column'):
 * fences each new row version with the token in its column.  An UPDATE
 * whose new row carries the old row's token (zklock 1.5: decided from the
 * rows, not from the statement, so that MERGE, ON CONFLICT, rules and
 * other triggers get one answer; before, from tg_updatedcols) has no
 * token of its own: the row's is whoever wrote last.  It is fenced with
 * the writer's own token (zkl_writer_token: its hold's, or the one its
 * transaction presented), which it writes in the column, and refused when
 * the writer has none.  The ORM that reloads a row and saves every column
 * is such an update.
 */
static Datum
zkl_fence_row(FunctionCallInfo fcinfo, zkl_fence_kind kind)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Trigger    *trigger;
	Relation	rel;
	TupleDesc	tupdesc;
	HeapTuple	newtuple;
	const char *column;
	int			attnum;
	Oid			type;
	int64		token;
	int64		old_token;
	Oid			fenced;
	text	   *resource;
	zkl_fence_token how = ZKL_TOKEN_GIVEN;

	zkl_check_trigger_call(fcinfo);
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
	attnum = zkl_token_column(trigger, rel, &type);
	resource = cstring_to_text(trigger->tgargs[0]);

	/*
	 * A tree's rows are fenced in its root's fence (the trigger of a
	 * partitioned table fires on the partition the row goes to, an
	 * inheritance child's trigger on the child).
	 */
	fenced = kind == ZKL_FENCE_TABLE ? zkl_fenced_table(rel) : RelationGetRelid(rel);

	if (!zkl_row_token(newtuple, tupdesc, attnum, type, &token))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("null fencing token in column \"%s\" of relation \"%s\"",
						column, RelationGetRelationName(rel)),
				 errdetail("Trigger \"%s\" refuses a row without a fencing token.",
						   trigger->tgname)));

	/* An update that leaves the token as it was: the writer's own token. */
	if (kind == ZKL_FENCE_TABLE && TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) &&
		zkl_row_token(trigdata->tg_trigtuple, tupdesc, attnum, type, &old_token) &&
		old_token == token)
	{
		int64		writer;

		if (zkl_writer_token(resource, &writer))
		{
			if (writer != token)
				newtuple = zkl_set_row_token(newtuple, rel, attnum, type, writer);
			zkl_fence(kind, resource, writer, fenced, ZKL_TOKEN_GIVEN);
			return PointerGetDatum(newtuple);
		}
		how = ZKL_TOKEN_UNCHANGED;
	}

	zkl_fence(kind, resource, token, fenced, how);

	return PointerGetDatum(newtuple);
}

/* zk_fence_trigger of 1.1 and 1.2 */
Datum
zk_fence_trigger(PG_FUNCTION_ARGS)
{
	return zkl_fence_row(fcinfo, ZKL_FENCE_1_1);
}

/*
 * zk_fence_trigger from 1.3: the fence of resource that belongs to the
 * trigger's table, advanced by proof.
 */
Datum
zk_fence_trigger_1_3(PG_FUNCTION_ARGS)
{
	return zkl_fence_row(fcinfo, ZKL_FENCE_TABLE);
}

/*
 * zk_fence_delete_trigger from 1.4: BEFORE DELETE ... FOR EACH ROW
 * EXECUTE FUNCTION zk_fence_delete_trigger('resource'): fences each delete
 * (MERGE's too) with the session's own token for lock resource, in the
 * table's fence of resource, the one zk_fence_trigger keeps; a session
 * that holds no such lock is refused (ZK004), unless it may write the
 * fencing table directly.
 */
Datum
zk_fence_delete_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Trigger    *trigger;
	Relation	rel;
	text	   *resource;
	int64		held;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("zk_fence_delete_trigger: must be called as trigger")));
	if (!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("zk_fence_delete_trigger: must be fired BEFORE DELETE FOR EACH ROW")));
	trigger = trigdata->tg_trigger;
	rel = trigdata->tg_relation;
	if (trigger->tgnargs != 1)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("zk_fence_delete_trigger: trigger \"%s\" on relation \"%s\" needs 1 argument, the resource, not %d",
						trigger->tgname, RelationGetRelationName(rel),
						trigger->tgnargs)));

	resource = cstring_to_text(trigger->tgargs[0]);
	if (zkl_writer_token(resource, &held))
		zkl_fence(ZKL_FENCE_TABLE, resource, held, zkl_fenced_table(rel), ZKL_TOKEN_GIVEN);
	else
		zkl_fence(ZKL_FENCE_TABLE, resource, 0, zkl_fenced_table(rel), ZKL_TOKEN_NONE);
	return PointerGetDatum(trigdata->tg_trigtuple);
}

/*
 * zk_fence_table(fenced_table, resource, token) from 1.4: fences the
 * table's own fence of resource (the one its triggers keep: its tree's
 * root's) as the trigger would a row with token, or, for a NULL token,
 * with the writer's own token for lock resource (its hold's, or one its
 * transaction presented), refused (ZK004) when it has none unless it may
 * write the fencing table; returns the token fenced with.  A token given
 * is presented (zklock 1.5): the transaction's claim to hold the lock with
 * it, which lets the rows it then writes carry it.  A transaction that
 * calls it before its row writes takes the fence's row first, so that two
 * transactions of one holder wait for each other there rather than
 * deadlock over rows each locked before its trigger reached the fence.
 * Only a writer of the table whose fence it is (INSERT, UPDATE or DELETE
 * on the root: from 1.5, not on the member named) may reach the fence: a
 * writer of one partition could otherwise hold the whole tree's fence row.
 */
Datum
zk_fence_table(PG_FUNCTION_ARGS)
{
	Oid			relid;
	text	   *resource;
	int64		token;
	Oid			fenced;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("fenced table and resource must not be null")));
	relid = PG_GETARG_OID(0);
	resource = PG_GETARG_TEXT_PP(1);
	fenced = zkl_fence_root(relid);
	if (pg_class_aclcheck(fenced, GetUserId(), ACL_INSERT | ACL_UPDATE | ACL_DELETE) != ACLCHECK_OK)
	{
		if (fenced != relid)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to fence table \"%s\"", get_rel_name(relid)),
					 errdetail("The fence of \"%s\" is the fence of its whole tree, \"%s\"'s, reached only by the roles that may insert, update or delete rows of \"%s\".",
							   get_rel_name(relid), get_rel_name(fenced), get_rel_name(fenced))));
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to fence table \"%s\"", get_rel_name(relid)),
				 errdetail("A table's fence is reached only by the roles that may insert, update or delete its rows.")));
	}
	if (!PG_ARGISNULL(2))
	{
		token = PG_GETARG_INT64(2);
		zkl_fence(ZKL_FENCE_TABLE, resource, token, fenced, ZKL_TOKEN_PRESENTED);
		PG_RETURN_INT64(token);
	}
	if (!zkl_writer_token(resource, &token))
	{
		zkl_fence(ZKL_FENCE_TABLE, resource, 0, fenced, ZKL_TOKEN_NONE);
		PG_RETURN_NULL();
	}
	zkl_fence(ZKL_FENCE_TABLE, resource, token, fenced, ZKL_TOKEN_GIVEN);
	PG_RETURN_INT64(token);
}
