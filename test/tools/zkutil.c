/*
 * zkutil: a tiny ZooKeeper command-line client for zklock's tests.
 *
 * Tests use it to look at (and poke) ZooKeeper independently of the
 * extension, so a bug in the extension cannot hide behind its own view of
 * the tree.  Synchronous API: simplicity matters more than speed here.
 *
 *   zkutil HOSTS ls PATH          children, sorted, one per line
 *   zkutil HOSTS get PATH         node data, raw, to stdout
 *   zkutil HOSTS stat PATH        czxid=, ephemeralOwner=0x..., numChildren=, ...
 *   zkutil HOSTS create PATH [DATA] [--ephemeral] [--sequential]
 *                 [--ephemeral-sequential] [--container] [--parents]
 *                 [--hold SECONDS] [--session-timeout MS]
 *                                 prints the created path; --hold keeps the
 *                                 session (and so any ephemeral node) alive
 *                                 for SECONDS; SIGTERM/SIGINT end the hold
 *                                 early with a clean close, SIGKILL leaves
 *                                 the session to expire (a crashed holder)
 *   zkutil HOSTS delete PATH
 *   zkutil HOSTS mntr|wchc|wchp|wchs|ruok|srvr|stat4|cons|conf|dump|envi|isro
 *                                 four-letter word over plain TCP to the
 *                                 first host ("stat4" sends "stat")
 *
 * Exit status: 0 ok, 1 usage or other error, 2 cannot connect,
 * 3 node does not exist (nothing printed), 4 session expired during --hold.
 *
 * Build: cc -Wall -Wextra -O2 -o zkutil zkutil.c -lzookeeper_mt
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* The synchronous API is only declared for the multi-threaded library. */
#ifndef THREADED
#define THREADED
#endif
#include <zookeeper/zookeeper.h>

#define EXIT_ERR 1
#define EXIT_NOCONN 2
#define EXIT_NONODE 3
#define EXIT_EXPIRED 4

#define CONNECT_WAIT_MS 10000
#define DEFAULT_SESSION_MS 10000
#define MAX_DATA (1024 * 1024 + 1)	/* jute.maxbuffer default is 1 MiB */

static const char *progname = "zkutil";

/* Session state reported by the watcher, which runs on a library thread. */
static pthread_mutex_t state_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t state_cv = PTHREAD_COND_INITIALIZER;
static int	session_state = 0;

static volatile sig_atomic_t stop_requested = 0;

static void
usage(void)
{
	fprintf(stderr,
			"usage: %s HOSTS COMMAND [ARGS]\n"
			"  ls PATH | get PATH | stat PATH | delete PATH\n"
			"  create PATH [DATA] [--ephemeral] [--sequential] [--ephemeral-sequential]\n"
			"         [--container] [--parents] [--hold SECONDS] [--session-timeout MS]\n"
			"  mntr | wchc | wchp | wchs | ruok | srvr | stat4 | cons | conf | dump | envi | isro\n",
			progname);
	exit(EXIT_ERR);
}

static void
watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	(void) zh;
	(void) path;
	(void) ctx;
	if (type != ZOO_SESSION_EVENT)
		return;
	pthread_mutex_lock(&state_mu);
	session_state = state;
	pthread_cond_broadcast(&state_cv);
	pthread_mutex_unlock(&state_mu);
}

static void
on_stop_signal(int signo)
{
	(void) signo;
	stop_requested = 1;
}

/* Open a session and wait (bounded) until it is connected. */
static zhandle_t *
zk_connect(const char *hosts, int session_ms)
{
	zhandle_t  *zh;
	struct timespec deadline;
	int			connected;

	/* The C client logs every refused connection attempt; tests want quiet. */
	if (getenv("ZKUTIL_DEBUG"))
		zoo_set_debug_level(ZOO_LOG_LEVEL_DEBUG);
	else
		zoo_set_debug_level((ZooLogLevel) 0);

	zh = zookeeper_init(hosts, watcher, session_ms, NULL, NULL, 0);
	if (zh == NULL)
	{
		fprintf(stderr, "%s: cannot create ZooKeeper handle for \"%s\": %s\n",
				progname, hosts, strerror(errno));
		exit(EXIT_NOCONN);
	}

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += CONNECT_WAIT_MS / 1000;

	pthread_mutex_lock(&state_mu);
	while (session_state != ZOO_CONNECTED_STATE &&
		   session_state != ZOO_EXPIRED_SESSION_STATE &&
		   session_state != ZOO_AUTH_FAILED_STATE)
	{
		if (pthread_cond_timedwait(&state_cv, &state_mu, &deadline) == ETIMEDOUT)
			break;
	}
	connected = (session_state == ZOO_CONNECTED_STATE);
	pthread_mutex_unlock(&state_mu);

	if (!connected)
	{
		fprintf(stderr, "%s: cannot connect to ZooKeeper at \"%s\" within %d s\n",
				progname, hosts, CONNECT_WAIT_MS / 1000);
		zookeeper_close(zh);
		exit(EXIT_NOCONN);
	}
	return zh;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Map a ZooKeeper error to an exit status, printing all but ZNONODE. */
static int
zk_fail(const char *what, const char *path, int rc)
{
	if (rc == ZNONODE)
		return EXIT_NONODE;
	fprintf(stderr, "%s: %s %s: %s\n", progname, what, path, zerror(rc));
	if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ||
		rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE)
		return EXIT_NOCONN;
	return EXIT_ERR;
}

static int
cmd_ls(zhandle_t *zh, const char *path)
{
	struct String_vector children = {0, NULL};
	int			rc = zoo_get_children(zh, path, 0, &children);

	if (rc != ZOK)
		return zk_fail("ls", path, rc);
	qsort(children.data, (size_t) children.count, sizeof(char *), cmp_str);
	for (int i = 0; i < children.count; i++)
		printf("%s\n", children.data[i]);
	deallocate_String_vector(&children);
	return 0;
}

static int
cmd_get(zhandle_t *zh, const char *path)
{
	char	   *buf = malloc(MAX_DATA);
	int			len = MAX_DATA;
	struct Stat st;
	int			rc;

	if (buf == NULL)
	{
		fprintf(stderr, "%s: out of memory\n", progname);
		return EXIT_ERR;
	}
	rc = zoo_get(zh, path, 0, buf, &len, &st);
	if (rc != ZOK)
	{
		free(buf);
		return zk_fail("get", path, rc);
	}
	if (len > 0)				/* -1 means the node has null data */
		fwrite(buf, 1, (size_t) len, stdout);
	free(buf);
	return 0;
}

static int
cmd_stat(zhandle_t *zh, const char *path)
{
	struct Stat st;
	int			rc = zoo_exists(zh, path, 0, &st);

	if (rc != ZOK)
		return zk_fail("stat", path, rc);
	/* czxid in decimal: it is the fencing token zk_lock_acquire returns. */
	printf("czxid=%lld\n", (long long) st.czxid);
	printf("mzxid=%lld\n", (long long) st.mzxid);
	printf("pzxid=%lld\n", (long long) st.pzxid);
	printf("ctime=%lld\n", (long long) st.ctime);
	printf("mtime=%lld\n", (long long) st.mtime);
	printf("version=%d\n", st.version);
	printf("cversion=%d\n", st.cversion);
	printf("ephemeralOwner=0x%llx\n", (unsigned long long) st.ephemeralOwner);
	printf("dataLength=%d\n", st.dataLength);
	printf("numChildren=%d\n", st.numChildren);
	return 0;
}

static int
cmd_delete(zhandle_t *zh, const char *path)
{
	int			rc = zoo_delete(zh, path, -1);

	if (rc != ZOK)
		return zk_fail("delete", path, rc);
	return 0;
}

/* Create every missing ancestor of path as a container node, like Curator. */
static int
create_parents(zhandle_t *zh, const char *path)
{
	char	   *p = strdup(path);
	int			rc = ZOK;

	if (p == NULL)
		return ZSYSTEMERROR;
	for (char *s = strchr(p + 1, '/'); s != NULL; s = strchr(s + 1, '/'))
	{
		*s = '\0';
		rc = zoo_create(zh, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER,
						NULL, 0);
		*s = '/';
		if (rc != ZOK && rc != ZNODEEXISTS)
			break;
		rc = ZOK;
	}
	free(p);
	return rc;
}

static int
cmd_create(zhandle_t *zh, const char *path, const char *data, int mode,
		   int parents, long hold_s)
{
	char		created[1024];
	struct Stat st;
	int			rc;

	if (parents && (rc = create_parents(zh, path)) != ZOK)
		return zk_fail("create parents of", path, rc);

	rc = zoo_create2(zh, path, data, data ? (int) strlen(data) : -1,
					 &ZOO_OPEN_ACL_UNSAFE, mode, created, sizeof(created), &st);
	if (rc != ZOK)
	{
		/* Creating under a missing parent is an error worth a message here. */
		fprintf(stderr, "%s: create %s: %s\n", progname, path, zerror(rc));
		return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ? EXIT_NOCONN : EXIT_ERR;
	}
	printf("%s\n", created);
	fflush(stdout);

	if (hold_s > 0)
	{
		struct timespec start,
					now,
					nap = {0, 100 * 1000 * 1000};

		clock_gettime(CLOCK_MONOTONIC, &start);
		for (;;)
		{
			int			state;

			if (stop_requested)
				break;
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - start.tv_sec >= hold_s)
				break;
			state = zoo_state(zh);
			if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
			{
				fprintf(stderr, "%s: session expired while holding %s\n",
						progname, created);
				return EXIT_EXPIRED;
			}
			nanosleep(&nap, NULL);
		}
	}
	return 0;
}

/* Send a four-letter word to the first host and copy the reply to stdout. */
static int
four_letter_word(const char *hosts, const char *word)
{
	char		host[256];
	char	   *port;
	const char *end;
	size_t		n;
	struct addrinfo hints,
			   *res,
			   *ai;
	int			fd = -1,
				rc;
	char		buf[8192];
	struct timespec t0,
				t1;

	/* First entry of "h1:p1,h2:p2/chroot"; [v6]:port is accepted too. */
	end = hosts + strcspn(hosts, ",/");
	n = (size_t) (end - hosts);
	if (n == 0 || n >= sizeof(host))
	{
		fprintf(stderr, "%s: bad host list \"%s\"\n", progname, hosts);
		return EXIT_ERR;
	}
	memcpy(host, hosts, n);
	host[n] = '\0';
	port = strrchr(host, ':');
	if (port == NULL)
	{
		fprintf(stderr, "%s: no port in \"%s\"\n", progname, host);
		return EXIT_ERR;
	}
	*port++ = '\0';
	if (host[0] == '[')
	{
		memmove(host, host + 1, strlen(host));
		host[strcspn(host, "]")] = '\0';
	}

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0)
	{
		fprintf(stderr, "%s: %s:%s: %s\n", progname, host, port, gai_strerror(rc));
		return EXIT_NOCONN;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next)
	{
		struct pollfd pfd;
		int			err = 0;
		socklen_t	errlen = sizeof(err);

		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd < 0)
			continue;
		/* Non-blocking connect so an unreachable host fails within the bound. */
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		pfd.fd = fd;
		pfd.events = POLLOUT;
		if (errno == EINPROGRESS && poll(&pfd, 1, CONNECT_WAIT_MS) == 1 &&
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &errlen) == 0 && err == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
	{
		fprintf(stderr, "%s: cannot connect to %s:%s\n", progname, host, port);
		return EXIT_NOCONN;
	}

	if (write(fd, word, 4) != 4)
	{
		fprintf(stderr, "%s: send %s: %s\n", progname, word, strerror(errno));
		close(fd);
		return EXIT_NOCONN;
	}

	/* The server answers and closes; read to EOF within the bound. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;)
	{
		struct pollfd pfd = {fd, POLLIN, 0};
		ssize_t		got;
		int			left;

		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = CONNECT_WAIT_MS - (int) ((t1.tv_sec - t0.tv_sec) * 1000 +
										(t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&pfd, 1, left) != 1)
		{
			fprintf(stderr, "%s: timeout reading %s reply\n", progname, word);
			close(fd);
			return EXIT_NOCONN;
		}
		got = read(fd, buf, sizeof(buf));
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (got < 0)
		{
			/* A reset after the full reply is normal for 4lw; stop there. */
			if (errno == ECONNRESET)
				break;
			fprintf(stderr, "%s: read %s reply: %s\n", progname, word, strerror(errno));
			close(fd);
			return EXIT_NOCONN;
		}
		if (got == 0)
			break;
		fwrite(buf, 1, (size_t) got, stdout);
	}
	close(fd);
	return 0;
}

static long
parse_long(const char *s, const char *what)
{
	char	   *end;
	long		v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *s == '\0' || *end != '\0' || v < 0)
	{
		fprintf(stderr, "%s: bad %s \"%s\"\n", progname, what, s);
		exit(EXIT_ERR);
	}
	return v;
}

int
main(int argc, char **argv)
{
	static const char *const words[] = {
		"mntr", "wchc", "wchp", "wchs", "ruok", "srvr", "cons", "conf", "dump",
		"envi", "isro", NULL
	};
	const char *hosts,
			   *cmd;
	zhandle_t  *zh;
	int			rc;

	if (argc < 3)
		usage();
	hosts = argv[1];
	cmd = argv[2];

	for (int i = 0; words[i] != NULL; i++)
		if (strcmp(cmd, words[i]) == 0)
			return argc == 3 ? four_letter_word(hosts, cmd) : (usage(), EXIT_ERR);
	/* "stat" is taken by the znode command; the 4lw is spelled stat4. */
	if (strcmp(cmd, "stat4") == 0)
		return argc == 3 ? four_letter_word(hosts, "stat") : (usage(), EXIT_ERR);

	if (strcmp(cmd, "create") == 0)
	{
		const char *path = NULL,
				   *data = NULL;
		int			ephemeral = 0,
					sequential = 0,
					container = 0,
					parents = 0;
		int			session_ms = DEFAULT_SESSION_MS;
		long		hold_s = 0;
		int			mode;

		for (int i = 3; i < argc; i++)
		{
			if (strcmp(argv[i], "--ephemeral-sequential") == 0)
				ephemeral = sequential = 1;
			else if (strcmp(argv[i], "--ephemeral") == 0)
				ephemeral = 1;
			else if (strcmp(argv[i], "--sequential") == 0)
				sequential = 1;
			else if (strcmp(argv[i], "--container") == 0)
				container = 1;
			else if (strcmp(argv[i], "--parents") == 0 || strcmp(argv[i], "-p") == 0)
				parents = 1;
			else if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc)
				hold_s = parse_long(argv[++i], "--hold seconds");
			else if (strcmp(argv[i], "--session-timeout") == 0 && i + 1 < argc)
				session_ms = (int) parse_long(argv[++i], "--session-timeout ms");
			else if (strncmp(argv[i], "--", 2) == 0)
				usage();
			else if (path == NULL)
				path = argv[i];
			else if (data == NULL)
				data = argv[i];
			else
				usage();
		}
		if (path == NULL || (container && (ephemeral || sequential)))
			usage();
		mode = container ? ZOO_CONTAINER
			: ephemeral && sequential ? ZOO_EPHEMERAL_SEQUENTIAL
			: ephemeral ? ZOO_EPHEMERAL
			: sequential ? ZOO_PERSISTENT_SEQUENTIAL
			: ZOO_PERSISTENT;

		if (hold_s > 0)
		{
			struct sigaction sa;

			/* A clean stop closes the session, so ephemerals vanish at once. */
			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = on_stop_signal;
			sigemptyset(&sa.sa_mask);
			sigaction(SIGTERM, &sa, NULL);
			sigaction(SIGINT, &sa, NULL);
			sigaction(SIGHUP, &sa, NULL);
		}
		zh = zk_connect(hosts, session_ms);
		rc = cmd_create(zh, path, data, mode, parents, hold_s);
		zookeeper_close(zh);
		return rc;
	}

	if (argc != 4)
		usage();
	zh = zk_connect(hosts, DEFAULT_SESSION_MS);
	if (strcmp(cmd, "ls") == 0)
		rc = cmd_ls(zh, argv[3]);
	else if (strcmp(cmd, "get") == 0)
		rc = cmd_get(zh, argv[3]);
	else if (strcmp(cmd, "stat") == 0)
		rc = cmd_stat(zh, argv[3]);
	else if (strcmp(cmd, "delete") == 0)
		rc = cmd_delete(zh, argv[3]);
	else
	{
		zookeeper_close(zh);
		usage();
		return EXIT_ERR;
	}
	zookeeper_close(zh);
	return rc;
}
