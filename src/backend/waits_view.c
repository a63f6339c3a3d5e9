/*-------------------------------------------------------------------------
 *
 * waits_view.c
 *		zk_waits_for(): the waits-for graph as this cluster sees it, every
 *		published wait's edges in one reading (waits_graph.c).  Runs in
 *		backends.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "backend/waits_graph.h"
#include "backend/waits_view.h"
#include "names/name_text.h"
#include "result_shape.h"
#include "shared/shmem.h"

/*
 * The most lock directories one call reads: a view for a person, bounded
 * as a deadlock check is (ZKL_MAX_CYCLE), but wider.
 */
#define ZKL_WAITS_VIEW_MAX_DIRS 64

/* ms since 1970 as a timestamp */
static TimestampTz
zkl_timestamp_of_ms(int64 ms)
{
	return (TimestampTz) (ms - (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000) * 1000;
}

static Datum
zkl_session_text(int64 session)
{
	return CStringGetTextDatum(psprintf("0x%llx", (unsigned long long) session));
}

/*
 * zk_waits_for(): every edge this cluster can see, from every published
 * wait, with this cluster's waits on PostgreSQL locks among their blockers.
 * Reads at most ZKL_WAITS_VIEW_MAX_DIRS lock directories.
 */
void
zkl_list_waits_for(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	zkl_graph  *g;

	zkl_require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	g = zkl_read_graph(NULL, ZKL_WAITS_VIEW_MAX_DIRS, 0);
	for (int i = 0; i < g->nedges; i++)
	{
		const zkl_wait_edge *e = &g->edges[i];
		const zkl_edge_info *info = &g->info[i];
		Datum		values[ZKL_COLUMNS_WAITS_FOR];
		bool		nulls[ZKL_COLUMNS_WAITS_FOR] = {0};
		bool		zk = e->kind == ZKL_WAIT_ZKLOCK;

		values[0] = CStringGetTextDatum(info->waiter_cluster);
		values[1] = Int32GetDatum(e->waiter.pid);
		values[2] = zkl_session_text(e->waiter.session);
		values[3] = CStringGetTextDatum(zk ? "zklock" : "postgresql");
		nulls[4] = !zk;
		if (zk)
			values[4] = CStringGetTextDatum(info->lock);
		nulls[5] = info->mode == NULL;
		if (info->mode)
			values[5] = CStringGetTextDatum(info->mode);
		nulls[6] = !zk;
		values[6] = Int64GetDatum(e->czxid);
		nulls[7] = info->since_ms == 0;
		values[7] = TimestampTzGetDatum(zkl_timestamp_of_ms(info->since_ms));
		nulls[8] = info->blocker_cluster == NULL;
		if (info->blocker_cluster)
			values[8] = CStringGetTextDatum(info->blocker_cluster);
		nulls[9] = e->blocker.pid == 0;
		values[9] = Int32GetDatum(e->blocker.pid);
		values[10] = zkl_session_text(e->blocker.session);
		values[11] = CStringGetTextDatum(info->blocker_client);
		nulls[12] = info->blocker_node == NULL;
		if (info->blocker_node)
			values[12] = PointerGetDatum(zkl_text_for_reader(info->blocker_node,
															 strlen(info->blocker_node), PG_UTF8));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}
