/*-------------------------------------------------------------------------
 *
 * stats_record.c
 *		The pure parts of zk_lock_stats: how an event adds to a lock's
 *		counters, which entries a full table evicts, and the format of the
 *		file that keeps the figures across a clean restart.  Plain C, no
 *		PostgreSQL calls: run in backends and the postmaster through
 *		stats.c, and in the unit tests (test/unit/stats_record_test.c).
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "rules/stats_record.h"

void
zkl_stats_add(zkl_stats_counters *c, const zkl_stats_sample *s)
{
	/* A request that queued behind a holder waited, whatever came of it. */
	if (s->event != ZKL_STATS_HOLD_END && s->behind)
	{
		c->waited++;
		c->total_wait_time += s->wait_ms;
		if (s->wait_ms > c->max_wait_time)
			c->max_wait_time = s->wait_ms;
	}
	switch (s->event)
	{
		case ZKL_STATS_GRANTED:
			if (s->xact)
				c->acquired_xact++;
			else
				c->acquired_session++;
			if (!s->behind)
				c->granted_at_once++;
			break;
		case ZKL_STATS_TIMEOUT:
			c->timeouts++;
			break;
		case ZKL_STATS_CANCEL:
			c->cancels++;
			break;
		case ZKL_STATS_DEADLOCK:
			c->deadlocks++;
			break;
		case ZKL_STATS_HOLD_END:
			c->holds++;
			c->total_hold_time += s->hold_ms;
			if (s->hold_ms > c->max_hold_time)
				c->max_hold_time = s->hold_ms;
			/* A hold given up past its limit is lost too (ZK002). */
			if (s->end != ZKL_STATS_RELEASED)
				c->losses++;
			if (s->end == ZKL_STATS_HOLD_LIMIT)
				c->hold_limit_expiries++;
			if (s->revoked)
				c->revocations++;
			break;
	}
}

/* How much an entry is used: every request it counted. */
int64_t
zkl_stats_usage(const zkl_stats_counters *c)
{
	return c->acquired_session + c->acquired_xact + c->timeouts + c->cancels + c->deadlocks;
}

int
zkl_stats_victim_count(int max_entries)
{
	int			n = max_entries / 20;

	return n < 1 ? 1 : n;
}

/* Whether entry a should go before entry b. */
static bool
zkl_stats_less_used(const int64_t *usage, const int64_t *last_used, int a, int b)
{
	if (usage[a] != usage[b])
		return usage[a] < usage[b];
	if (last_used[a] != last_used[b])
		return last_used[a] < last_used[b];
	return a < b;
}

/*
 * Keep the nvictims least used seen so far in victims, sorted most used
 * first, so that each entry is compared with the worst kept one: O(n) for
 * the usual few victims, O(n * nvictims) at worst, and no allocation.
 */
int
zkl_stats_choose_victims(const int64_t *usage, const int64_t *last_used, int n,
						 int nvictims, int *victims)
{
	int			kept = 0;

	if (nvictims > n)
		nvictims = n;
	if (nvictims <= 0)
		return 0;
	for (int i = 0; i < n; i++)
	{
		int			pos;

		if (kept == nvictims)
		{
			if (!zkl_stats_less_used(usage, last_used, i, victims[0]))
				continue;
			/* drop the most used of the kept ones */
			memmove(&victims[0], &victims[1], sizeof(int) * (kept - 1));
			kept--;
		}
		/* insert, the most used first */
		pos = kept;
		while (pos > 0 && zkl_stats_less_used(usage, last_used, victims[pos - 1], i))
		{
			victims[pos] = victims[pos - 1];
			pos--;
		}
		victims[pos] = i;
		kept++;
	}
	return kept;
}

size_t
zkl_stats_file_size(int nrecords)
{
	return sizeof(zkl_stats_file_header) + (size_t) nrecords * sizeof(zkl_stats_file_record);
}

void
zkl_stats_format(char *buf, const zkl_stats_file_header *header,
				 const zkl_stats_file_record *records, int nrecords)
{
	memcpy(buf, header, sizeof(*header));
	if (nrecords > 0)
		memcpy(buf + sizeof(*header), records, sizeof(zkl_stats_file_record) * nrecords);
}

static bool
zkl_stats_counters_valid(const zkl_stats_counters *c)
{
	return c->acquired_session >= 0 && c->acquired_xact >= 0 && c->granted_at_once >= 0 &&
		c->granted_at_once <= c->acquired_session + c->acquired_xact &&
		c->waited >= 0 && c->total_wait_time >= 0 && c->max_wait_time >= 0 &&
		c->holds >= 0 && c->total_hold_time >= 0 && c->max_hold_time >= 0 &&
		c->timeouts >= 0 && c->cancels >= 0 && c->deadlocks >= 0 && c->losses >= 0 &&
		c->revocations >= 0 && c->hold_limit_expiries >= 0;
}

bool
zkl_stats_parse(const char *buf, size_t len, zkl_stats_file_header *header,
				zkl_stats_file_record *records, int max_records, int *nrecords,
				const char **error)
{
	*nrecords = 0;
	if (len < sizeof(*header))
	{
		*error = "the file is shorter than its header";
		return false;
	}
	memcpy(header, buf, sizeof(*header));
	if (header->magic != ZKL_STATS_FILE_MAGIC)
	{
		*error = "the file is not a zklock statistics file";
		return false;
	}
	if (header->format != ZKL_STATS_FILE_FORMAT)
	{
		*error = "the file has another format";
		return false;
	}
	/* evicted leaves room for the entries the reader cannot keep. */
	if (header->nentries < 0 || header->evicted < 0 ||
		header->evicted > INT64_MAX - INT32_MAX ||
		len != zkl_stats_file_size(header->nentries))
	{
		*error = "the file's length does not match its number of entries";
		return false;
	}
	for (int i = 0; i < header->nentries; i++)
	{
		zkl_stats_file_record r;

		memcpy(&r, buf + zkl_stats_file_size(i), sizeof(r));
		if ((r.kind != 'x' && r.kind != 's' && r.kind != 'p') ||
			r.name_len < 1 || r.name_len > ZKL_STATS_NAME_LEN ||
			r.name[r.name_len] != '\0' || strlen(r.name) != (size_t) r.name_len ||
			!zkl_stats_counters_valid(&r.counters))
		{
			*error = "an entry of the file is damaged";
			*nrecords = 0;
			return false;
		}
		if (*nrecords < max_records)
			records[(*nrecords)++] = r;
	}
	return true;
}
