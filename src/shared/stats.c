/*-------------------------------------------------------------------------
 *
 * stats.c
 *		zk_lock_stats: cumulative statistics per lock, modelled on
 *		contrib/pg_stat_statements.  Runs in backends, which count their
 *		own requests and holds (backend/request.c and locks.c call zkl_stats_count, outside
 *		the worker and ZooKeeper's path), and in the postmaster, which sets
 *		the table up, reads it back from the file a clean shutdown wrote,
 *		and writes that file at its own clean exit.
 *
 * The table is bounded by zklock.stats_max: when it is full, the least
 * used entries go (5% at once, stats_record.c chooses) and the eviction
 * counter grows.
 *
 * Kept across a clean restart, reset by a crash: the postmaster writes
 * the file from a shmem_exit callback (zkl_stats_shutdown).  It is the one
 * process sure to run last, after every backend has counted the end of its
 * holds and after the zklock worker, which may itself be restarting or
 * dead at shutdown; it runs that callback with code 0 only at a clean
 * exit, never at a crash restart (shmem_exit(1)), and the file is removed
 * once read, so the figures of a cluster that crashed are not read again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "names/name_text.h"
#include "result_shape.h"
#include "shared/stats.h"

#define ZKL_STATS_FILE		PGSTAT_STAT_PERMANENT_DIRECTORY "/zklock_stats.stat"

bool		zkl_track_stats = true;
int			zkl_stats_max = 1000;

/* Hash key: the lock's name (zero-padded) and kind. */
typedef struct zkl_stats_key
{
	char		name[ZKL_STATS_NAME_LEN + 1];
	char		kind;			/* 'x', 's', 'p' (zkl_mode) */
} zkl_stats_key;

typedef struct zkl_stats_entry
{
	zkl_stats_key key;			/* hash key: first */
	int32		encoding;		/* of the database that counted it first */
	slock_t		mutex;
	int64		last_used;		/* TimestampTz of the last sample */
	zkl_stats_counters counters;
} zkl_stats_entry;

/*
 * What protects what.  zkl_stats->lock (one LWLock, "zklock_stats")
 * protects the hash table's membership and the fields of zkl_stats:
 * finding an entry and reading reset_time and evicted take it shared;
 * making or removing an entry (eviction, reset) and writing reset_time and
 * evicted take it exclusively.  An entry's key and encoding are written
 * when it is made and never change.  Its counters and last_used are
 * changed, by a backend holding the lock shared, under the entry's own
 * spinlock (mutex), and read under it; holding the lock exclusively, one
 * may read or write them without the spinlock (no one else is inside).
 */
typedef struct zkl_stats_state
{
	LWLock	   *lock;
	TimestampTz reset_time;		/* of the last reset of all */
	int64		evicted;		/* entries evicted since then */
} zkl_stats_state;

static zkl_stats_state *zkl_stats = NULL;
static HTAB *zkl_stats_hash = NULL;

PG_FUNCTION_INFO_V1(zk_lock_stats);
PG_FUNCTION_INFO_V1(zk_lock_stats_info);
PG_FUNCTION_INFO_V1(zk_lock_stats_reset);

static void zkl_stats_shutdown(int code, Datum arg);
static void zkl_stats_load(void);

void
zkl_stats_define_settings(void)
{
	DefineCustomBoolVariable("zklock.track_stats",
							 "Counts each lock's requests and holds in zk_lock_stats.",
							 NULL,
							 &zkl_track_stats,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("zklock.stats_max",
							"Number of locks zk_lock_stats keeps; the least used go when it is full.",
							NULL,
							&zkl_stats_max,
							1000, 10, 1000000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);
}

Size
zkl_stats_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(zkl_stats_state)),
					hash_estimate_size(zkl_stats_max, sizeof(zkl_stats_entry)));
}

void
zkl_stats_shmem_request(void)
{
	RequestAddinShmemSpace(zkl_stats_shmem_size());
	RequestNamedLWLockTranche("zklock_stats", 1);
}

/* The postmaster's, and on EXEC_BACKEND every process's, attach. */
void
zkl_stats_shmem_startup(void)
{
	bool		found;
	HASHCTL		info;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	zkl_stats = ShmemInitStruct("zklock stats", sizeof(zkl_stats_state), &found);
	if (!found)
	{
		zkl_stats->lock = &(GetNamedLWLockTranche("zklock_stats"))->lock;
		zkl_stats->reset_time = GetCurrentTimestamp();
		zkl_stats->evicted = 0;
	}
	info.keysize = sizeof(zkl_stats_key);
	info.entrysize = sizeof(zkl_stats_entry);
	zkl_stats_hash = ShmemInitHash("zklock stats hash", zkl_stats_max, zkl_stats_max,
								   &info, HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);

	/* The rest is the postmaster's (or a single-user backend's). */
	if (IsUnderPostmaster)
		return;
	on_shmem_exit(zkl_stats_shutdown, (Datum) 0);
	if (!found)
		zkl_stats_load();
}

bool
zkl_stats_enabled(void)
{
	return zkl_track_stats && zkl_stats != NULL;
}

static void
zkl_stats_make_key(zkl_stats_key *key, const char *name, char kind)
{
	memset(key, 0, sizeof(*key));
	strlcpy(key->name, name, sizeof(key->name));
	key->kind = kind;
}

/*
 * Make room for one more entry: the least used go.  Caller holds the lock
 * exclusively.  Nothing is allocated on the way to an error: this runs in
 * abort and exit callbacks too, and without memory nothing is evicted
 * (the entry then is not made).
 */
static void
zkl_stats_evict(void)
{
	long		n = hash_get_num_entries(zkl_stats_hash);
	int			want = zkl_stats_victim_count(zkl_stats_max);
	zkl_stats_entry **entries;
	int64	   *usage;
	int64	   *last_used;
	int		   *victims;
	HASH_SEQ_STATUS seq;
	zkl_stats_entry *e;
	int			i = 0;
	int			nvictims;

	entries = MemoryContextAllocExtended(TopMemoryContext, sizeof(*entries) * n, MCXT_ALLOC_NO_OOM);
	usage = MemoryContextAllocExtended(TopMemoryContext, sizeof(int64) * n, MCXT_ALLOC_NO_OOM);
	last_used = MemoryContextAllocExtended(TopMemoryContext, sizeof(int64) * n, MCXT_ALLOC_NO_OOM);
	victims = MemoryContextAllocExtended(TopMemoryContext, sizeof(int) * want, MCXT_ALLOC_NO_OOM);
	if (entries && usage && last_used && victims)
	{
		hash_seq_init(&seq, zkl_stats_hash);
		while ((e = hash_seq_search(&seq)) != NULL)
		{
			if (i == n)
			{
				hash_seq_term(&seq);
				break;
			}
			entries[i] = e;
			usage[i] = zkl_stats_usage(&e->counters);
			last_used[i] = e->last_used;
			i++;
		}
		nvictims = zkl_stats_choose_victims(usage, last_used, i, want, victims);
		for (int v = 0; v < nvictims; v++)
			hash_search(zkl_stats_hash, &entries[victims[v]]->key, HASH_REMOVE, NULL);
		zkl_stats->evicted += nvictims;
	}
	if (entries)
		pfree(entries);
	if (usage)
		pfree(usage);
	if (last_used)
		pfree(last_used);
	if (victims)
		pfree(victims);
}

/* Find or make an entry; NULL when there is no room.  Lock held exclusively. */
static zkl_stats_entry *
zkl_stats_enter(const zkl_stats_key *key, TimestampTz now)
{
	zkl_stats_entry *e;
	bool		found;

	e = hash_search(zkl_stats_hash, key, HASH_FIND, NULL);
	if (e != NULL)
		return e;
	if (hash_get_num_entries(zkl_stats_hash) >= zkl_stats_max)
		zkl_stats_evict();
	e = hash_search(zkl_stats_hash, key, HASH_ENTER_NULL, &found);
	if (e != NULL && !found)
	{
		e->encoding = GetDatabaseEncoding();
		SpinLockInit(&e->mutex);
		e->last_used = now;
		memset(&e->counters, 0, sizeof(e->counters));
	}
	return e;
}

void
zkl_stats_count(const char *name, char kind, const zkl_stats_sample *sample, TimestampTz now)
{
	zkl_stats_key key;
	zkl_stats_entry *e;

	if (!zkl_stats_enabled() || zkl_stats_hash == NULL)
		return;
	zkl_stats_make_key(&key, name, kind);

	LWLockAcquire(zkl_stats->lock, LW_SHARED);
	e = hash_search(zkl_stats_hash, &key, HASH_FIND, NULL);
	if (e == NULL)
	{
		/* A new lock: make its entry, as pg_stat_statements does. */
		LWLockRelease(zkl_stats->lock);
		LWLockAcquire(zkl_stats->lock, LW_EXCLUSIVE);
		e = zkl_stats_enter(&key, now);
	}
	if (e != NULL)
	{
		SpinLockAcquire(&e->mutex);
		zkl_stats_add(&e->counters, sample);
		e->last_used = now;
		SpinLockRelease(&e->mutex);
	}
	LWLockRelease(zkl_stats->lock);
}

static void
zkl_stats_require(void)
{
	if (zkl_stats == NULL || zkl_stats_hash == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zklock must be loaded via \"shared_preload_libraries\""),
				 errhint("Add zklock to shared_preload_libraries in postgresql.conf and restart the server.")));
}

static const char *
zkl_stats_kind_name(char kind)
{
	return kind == 's' ? "shared" : kind == 'p' ? "semaphore" : "exclusive";
}

/* Every entry, for the zk_lock_stats view. */
Datum
zk_lock_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS seq;
	zkl_stats_entry *e;

	zkl_stats_require();
	InitMaterializedSRF(fcinfo, 0);
	zkl_check_result_columns(rsinfo->setDesc, "zk_lock_stats_internal", ZKL_COLUMNS_LOCK_STATS);

	LWLockAcquire(zkl_stats->lock, LW_SHARED);
	hash_seq_init(&seq, zkl_stats_hash);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		zkl_stats_counters c;
		Datum		values[ZKL_COLUMNS_LOCK_STATS];
		bool		nulls[ZKL_COLUMNS_LOCK_STATS] = {0};
		int			i = 0;

		SpinLockAcquire(&e->mutex);
		c = e->counters;
		SpinLockRelease(&e->mutex);

		/* A name of a database of another encoding may not be valid here. */
		values[i++] = PointerGetDatum(zkl_text_for_reader(e->key.name, strlen(e->key.name), e->encoding));
		values[i++] = CStringGetTextDatum(zkl_stats_kind_name(e->key.kind));
		values[i++] = Int64GetDatum(c.acquired_session);
		values[i++] = Int64GetDatum(c.acquired_xact);
		values[i++] = Int64GetDatum(c.granted_at_once);
		values[i++] = Int64GetDatum(c.waited);
		values[i++] = Float8GetDatum(c.total_wait_time);
		values[i++] = Float8GetDatum(c.waited > 0 ? c.total_wait_time / c.waited : 0);
		values[i++] = Float8GetDatum(c.max_wait_time);
		values[i++] = Int64GetDatum(c.holds);
		values[i++] = Float8GetDatum(c.total_hold_time);
		values[i++] = Float8GetDatum(c.max_hold_time);
		values[i++] = Int64GetDatum(c.timeouts);
		values[i++] = Int64GetDatum(c.cancels);
		values[i++] = Int64GetDatum(c.deadlocks);
		values[i++] = Int64GetDatum(c.losses);
		values[i++] = Int64GetDatum(c.revocations);
		values[i++] = Int64GetDatum(c.hold_limit_expiries);
		Assert(i == lengthof(values));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(zkl_stats->lock);
	return (Datum) 0;
}

/* The table as a whole, for the zk_lock_stats_info view. */
Datum
zk_lock_stats_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[ZKL_COLUMNS_LOCK_STATS_INFO];
	bool		nulls[ZKL_COLUMNS_LOCK_STATS_INFO] = {0};

	zkl_stats_require();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	zkl_check_result_columns(tupdesc, "zk_lock_stats_info_internal", ZKL_COLUMNS_LOCK_STATS_INFO);
	LWLockAcquire(zkl_stats->lock, LW_SHARED);
	values[0] = Int64GetDatum(hash_get_num_entries(zkl_stats_hash));
	values[1] = Int64GetDatum(zkl_stats->evicted);
	values[2] = TimestampTzGetDatum(zkl_stats->reset_time);
	LWLockRelease(zkl_stats->lock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * Forget the figures of lock name (each kind), or, with NULL, of every
 * lock: then the eviction counter starts again too, and the reset's time
 * is the new start.  EXECUTE is not granted to PUBLIC.
 */
Datum
zk_lock_stats_reset(PG_FUNCTION_ARGS)
{
	zkl_stats_require();
	LWLockAcquire(zkl_stats->lock, LW_EXCLUSIVE);
	if (PG_ARGISNULL(0))
	{
		HASH_SEQ_STATUS seq;
		zkl_stats_entry *e;

		hash_seq_init(&seq, zkl_stats_hash);
		while ((e = hash_seq_search(&seq)) != NULL)
			hash_search(zkl_stats_hash, &e->key, HASH_REMOVE, NULL);
		zkl_stats->evicted = 0;
		zkl_stats->reset_time = GetCurrentTimestamp();
	}
	else
	{
		text	   *name = PG_GETARG_TEXT_PP(0);
		int			len = VARSIZE_ANY_EXHDR(name);
		static const char kinds[] = {'x', 's', 'p'};

		/* A name no lock can have has no figures either. */
		if (len <= ZKL_STATS_NAME_LEN)
		{
			char		buf[ZKL_STATS_NAME_LEN + 1];

			memcpy(buf, VARDATA_ANY(name), len);
			buf[len] = '\0';
			for (int k = 0; k < (int) lengthof(kinds); k++)
			{
				zkl_stats_key key;

				zkl_stats_make_key(&key, buf, kinds[k]);
				hash_search(zkl_stats_hash, &key, HASH_REMOVE, NULL);
			}
		}
	}
	LWLockRelease(zkl_stats->lock);
	PG_RETURN_VOID();
}

/*
 * Read the file a clean shutdown wrote, then remove it: a crash before the
 * next clean shutdown leaves no file, and the figures start from zero, as
 * pg_stat_statements' do.  In the postmaster, before any backend runs.
 */
static void
zkl_stats_load(void)
{
	FILE	   *file;
	struct stat st;
	char	   *buf = NULL;
	zkl_stats_file_header header;
	zkl_stats_file_record *records = NULL;
	int			nrecords = 0;
	const char *error = NULL;

	file = AllocateFile(ZKL_STATS_FILE, PG_BINARY_R);
	if (file == NULL)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("could not read file \"%s\": %m", ZKL_STATS_FILE)));
		return;
	}
	if (fstat(fileno(file), &st) != 0 || st.st_size > (off_t) MaxAllocSize)
		error = "its size is out of bounds";
	else
	{
		buf = palloc(Max(st.st_size, 1));
		if (fread(buf, 1, st.st_size, file) != (size_t) st.st_size)
			error = "it could not be read whole";
	}
	FreeFile(file);
	if (error == NULL)
	{
		/* No more records than the file can hold, nor than the table. */
		int			max_records = (int) Min((size_t) zkl_stats_max,
											(size_t) st.st_size / sizeof(zkl_stats_file_record) + 1);

		records = palloc(sizeof(zkl_stats_file_record) * max_records);
		(void) zkl_stats_parse(buf, st.st_size, &header, records, max_records,
							   &nrecords, &error);
	}
	if (error != NULL)
		ereport(LOG,
				(errmsg("ignoring lock statistics file \"%s\": %s", ZKL_STATS_FILE, error)));
	else
	{
		zkl_stats->reset_time = header.reset_time;
		zkl_stats->evicted = header.evicted + (header.nentries - nrecords);
		for (int i = 0; i < nrecords; i++)
		{
			zkl_stats_key key;
			zkl_stats_entry *e;
			bool		found;

			zkl_stats_make_key(&key, records[i].name, records[i].kind);
			e = hash_search(zkl_stats_hash, &key, HASH_ENTER_NULL, &found);
			if (e == NULL)
				break;
			e->encoding = records[i].encoding;
			SpinLockInit(&e->mutex);
			e->last_used = records[i].last_used;
			e->counters = records[i].counters;
		}
	}
	if (buf)
		pfree(buf);
	if (records)
		pfree(records);
	unlink(ZKL_STATS_FILE);
}

/*
 * The postmaster's exit: at a clean one (code 0) every other process is
 * gone, so the table is complete and no one changes it; write it to a
 * temporary file and rename that into place.
 */
static void
zkl_stats_shutdown(int code, Datum arg)
{
	zkl_stats_file_header header;
	zkl_stats_file_record *records;
	HASH_SEQ_STATUS seq;
	zkl_stats_entry *e;
	int			n = 0;
	long		nentries;
	char	   *buf;
	size_t		size;
	FILE	   *file;
	bool		ok;

	if (code != 0 || zkl_stats == NULL || zkl_stats_hash == NULL)
		return;
	nentries = hash_get_num_entries(zkl_stats_hash);
	records = palloc0(sizeof(zkl_stats_file_record) * Max(nentries, 1));
	hash_seq_init(&seq, zkl_stats_hash);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (n == nentries)
		{
			hash_seq_term(&seq);
			break;
		}
		records[n].kind = e->key.kind;
		records[n].encoding = e->encoding;
		records[n].name_len = strlen(e->key.name);
		strlcpy(records[n].name, e->key.name, sizeof(records[n].name));
		records[n].last_used = e->last_used;
		records[n].counters = e->counters;
		n++;
	}
	memset(&header, 0, sizeof(header));
	header.magic = ZKL_STATS_FILE_MAGIC;
	header.format = ZKL_STATS_FILE_FORMAT;
	header.reset_time = zkl_stats->reset_time;
	header.evicted = zkl_stats->evicted;
	header.nentries = n;
	size = zkl_stats_file_size(n);
	buf = palloc(size);
	zkl_stats_format(buf, &header, records, n);

	file = AllocateFile(ZKL_STATS_FILE ".tmp", PG_BINARY_W);
	ok = file != NULL && fwrite(buf, 1, size, file) == size;
	if (file != NULL && FreeFile(file) != 0)
		ok = false;
	if (!ok)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", ZKL_STATS_FILE ".tmp")));
		unlink(ZKL_STATS_FILE ".tmp");
	}
	else
		(void) durable_rename(ZKL_STATS_FILE ".tmp", ZKL_STATS_FILE, LOG);
	pfree(buf);
	pfree(records);
}
