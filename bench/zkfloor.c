/*
 * zkfloor: the ZooKeeper floor of zklock's benchmark.  A bare client of
 * libzookeeper_mt (the threaded build of the C library whose
 * single-threaded build zklock's worker drives from its loop) that does the
 * requests of one lock cycle and nothing else: no SQL, no shared memory, no
 * worker, no lock bookkeeping.  What a lock client spends above these
 * figures is its own overhead.
 *
 *   zkfloor CONNECT sync      SECONDS WARMUP MAXN
 *       one thread: create an ephemeral sequential node, then delete it,
 *       both with the synchronous API (two round trips per cycle);
 *   zkfloor CONNECT pipelined SECONDS WARMUP MAXN
 *       one thread: the requests of zklock's fast path, asynchronous:
 *       create and list the directory back to back and wait for the
 *       listing (one round trip), then send the delete without waiting;
 *   zkfloor CONNECT exists    SECONDS WARMUP MAXN
 *       one thread: exists("/"), synchronous: one read round trip, the
 *       least any request costs;
 *   zkfloor CONNECT threads   SECONDS WARMUP THREADS
 *       THREADS threads sharing one session, each doing sync cycles on
 *       its own directory (the floor of 16 clients on 16 locks).
 *
 * WARMUP cycles (per thread) are done first and not measured; then cycles
 * run for SECONDS, or until MAXN were measured; "measuring" is printed as
 * they start.  Then one line, a JSON object:
 * {"n": cycles, "seconds": measured time, "session": "0x...", "lat_ms":
 * [per-cycle latency, single-thread modes only]}.  It then waits for a
 * line or the end of stdin before it exits, so that run.sh can read its CPU
 * time first.
 *
 * Build: cc -O2 -o zkfloor zkfloor.c -lzookeeper_mt -lpthread
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* The synchronous API is declared for the multithreaded library only. */
#ifndef THREADED
#define THREADED
#endif
#include <zookeeper/zookeeper.h>

#define ROOT		"/zkbench-floor"
#define MAX_THREADS	256

static zhandle_t *zh;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int	connected;
static int	listed;				/* pipelined: listings answered */
static int	outstanding;		/* pipelined: deletes not yet answered */

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void
die(const char *what, int rc)
{
	fprintf(stderr, "zkfloor: %s: %s\n", what, zerror(rc));
	exit(1);
}

static void
watcher(zhandle_t *h, int type, int state, const char *path, void *ctx)
{
	if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE)
	{
		pthread_mutex_lock(&mu);
		connected = 1;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
}

static void
ensure(const char *path)
{
	int			rc = zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);

	if (rc != ZOK && rc != ZNODEEXISTS)
		die(path, rc);
}

/* One synchronous cycle in DIR: create, then delete. */
static void
sync_cycle(const char *dir)
{
	char		prefix[128];
	char		made[160];
	int			rc;

	snprintf(prefix, sizeof(prefix), "%s/n-", dir);
	rc = zoo_create(zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
					made, sizeof(made));
	if (rc != ZOK)
		die("create", rc);
	rc = zoo_delete(zh, made, -1);
	if (rc != ZOK)
		die("delete", rc);
}

static void
exists_cycle(const char *dir)
{
	struct Stat st;
	int			rc = zoo_exists(zh, "/", 0, &st);

	if (rc != ZOK)
		die("exists", rc);
}

/* Pipelined cycle: what zklock's worker sends for an uncontended lock. */
static char pending_node[160];

static void
created(int rc, const char *value, const void *data)
{
	if (rc != ZOK)
		die("create", rc);
	pthread_mutex_lock(&mu);
	snprintf(pending_node, sizeof(pending_node), "%s", value);
	pthread_mutex_unlock(&mu);
}

static void
children(int rc, const struct String_vector *strings, const void *data)
{
	if (rc != ZOK)
		die("get_children", rc);
	pthread_mutex_lock(&mu);
	listed++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void
deleted(int rc, const void *data)
{
	if (rc != ZOK)
		die("delete", rc);
	pthread_mutex_lock(&mu);
	outstanding--;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void
pipelined_cycle(const char *dir)
{
	char		prefix[128];
	char		node[160];
	int			want;
	int			rc;

	snprintf(prefix, sizeof(prefix), "%s/n-", dir);
	pthread_mutex_lock(&mu);
	want = listed + 1;
	pthread_mutex_unlock(&mu);
	rc = zoo_acreate(zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
					 created, NULL);
	if (rc != ZOK)
		die("acreate", rc);
	rc = zoo_aget_children(zh, dir, 0, children, NULL);
	if (rc != ZOK)
		die("aget_children", rc);
	/* Replies come in order: once the listing is in, so is the create. */
	pthread_mutex_lock(&mu);
	while (listed < want)
		pthread_cond_wait(&cv, &mu);
	snprintf(node, sizeof(node), "%s", pending_node);
	outstanding++;
	pthread_mutex_unlock(&mu);
	rc = zoo_adelete(zh, node, -1, deleted, NULL);
	if (rc != ZOK)
		die("adelete", rc);
}

typedef struct worker_arg
{
	int			id;
	int			warmup;
	double		seconds;
	pthread_barrier_t *barrier;
	long		n;
} worker_arg;

static void *
thread_main(void *p)
{
	worker_arg *a = p;
	char		dir[64];
	double		start;

	snprintf(dir, sizeof(dir), ROOT "/t%d", a->id);
	ensure(dir);
	for (int i = 0; i < a->warmup; i++)
		sync_cycle(dir);
	pthread_barrier_wait(a->barrier);
	start = now_ms();
	while (now_ms() - start < a->seconds * 1e3)
	{
		sync_cycle(dir);
		a->n++;
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	const char *mode;
	double		seconds;
	int			warmup;
	long		maxn;
	double		t0;

	if (argc != 6)
	{
		fprintf(stderr, "usage: zkfloor CONNECT sync|pipelined|exists|threads SECONDS WARMUP MAXN|THREADS\n");
		return 2;
	}
	mode = argv[2];
	seconds = atof(argv[3]);
	warmup = atoi(argv[4]);
	maxn = atol(argv[5]);

	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	zh = zookeeper_init(argv[1], watcher, 10000, NULL, NULL, 0);
	if (zh == NULL)
	{
		perror("zkfloor: zookeeper_init");
		return 1;
	}
	pthread_mutex_lock(&mu);
	while (!connected)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	ensure(ROOT);

	if (strcmp(mode, "threads") == 0)
	{
		int			nthreads = (int) maxn;
		pthread_t	th[MAX_THREADS];
		worker_arg	args[MAX_THREADS];
		pthread_barrier_t barrier;
		long		total = 0;

		if (nthreads < 1 || nthreads > MAX_THREADS)
		{
			fprintf(stderr, "zkfloor: 1..%d threads\n", MAX_THREADS);
			return 2;
		}
		pthread_barrier_init(&barrier, NULL, nthreads + 1);
		for (int i = 0; i < nthreads; i++)
		{
			args[i] = (worker_arg)
			{
				i, warmup, seconds, &barrier, 0
			};
			pthread_create(&th[i], NULL, thread_main, &args[i]);
		}
		pthread_barrier_wait(&barrier);
		t0 = now_ms();
		printf("measuring\n");
		fflush(stdout);
		for (int i = 0; i < nthreads; i++)
		{
			pthread_join(th[i], NULL);
			total += args[i].n;
		}
		printf("{\"n\": %ld, \"seconds\": %.6f, \"session\": \"0x%llx\"}\n",
			   total, (now_ms() - t0) / 1e3, (unsigned long long) zoo_client_id(zh)->client_id);
	}
	else
	{
		void		(*cycle) (const char *dir);
		char		dir[64];
		double	   *lat;
		long		n = 0;

		if (strcmp(mode, "pipelined") == 0)
			cycle = pipelined_cycle;
		else if (strcmp(mode, "sync") == 0)
			cycle = sync_cycle;
		else if (strcmp(mode, "exists") == 0)
			cycle = exists_cycle;
		else
		{
			fprintf(stderr, "zkfloor: unknown mode %s\n", mode);
			return 2;
		}
		snprintf(dir, sizeof(dir), ROOT "/%s", mode);
		lat = malloc(sizeof(double) * (maxn > 0 ? maxn : 1));
		ensure(dir);
		for (int i = 0; i < warmup; i++)
			cycle(dir);
		printf("measuring\n");
		fflush(stdout);
		t0 = now_ms();
		while (n < maxn && now_ms() - t0 < seconds * 1e3)
		{
			double		s = now_ms();

			cycle(dir);
			lat[n++] = now_ms() - s;
		}
		printf("{\"n\": %ld, \"seconds\": %.6f, \"session\": \"0x%llx\", \"lat_ms\": [",
			   n, (now_ms() - t0) / 1e3, (unsigned long long) zoo_client_id(zh)->client_id);
		for (long i = 0; i < n; i++)
			printf("%s%.4f", i ? "," : "", lat[i]);
		printf("]}\n");
		/* Let the last deletes land before the session closes. */
		pthread_mutex_lock(&mu);
		while (outstanding > 0)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
	}
	fflush(stdout);
	for (int c = getchar(); c != EOF && c != '\n'; c = getchar())
		;
	zookeeper_close(zh);
	return 0;
}
