/*
 * zkrelay: a network of the benchmark's own, on loopback.  It accepts
 * connections on a loopback port and relays each one to ZooKeeper, holding
 * every chunk of bytes for a fixed delay in each direction, so that a lock
 * client pays a real round trip per request it waits for (twice the delay)
 * while ZooKeeper, the clients and the relay still share one machine.
 * Every contender (zklock's worker, Curator, kazoo, the ZooKeeper floor)
 * connects through the same relay.
 *
 *   zkrelay UPSTREAM_PORT DELAY_US
 *       listens on a free port of 127.0.0.1, prints it on a line of its
 *       own, then relays until SIGTERM or SIGINT.
 *
 * Each direction of a connection has a reader thread, which stamps what it
 * reads with the time it is due and queues it, and a writer thread, which
 * sends each chunk when it is due, in order.  Both sockets have
 * TCP_NODELAY, as a low-latency network path would: the relay adds the
 * delay, never Nagle's algorithm's.  A chunk is whatever one read returned,
 * so requests written back to back leave together, as they would in one
 * segment.
 *
 * Build: cc -O2 -o zkrelay zkrelay.c -lpthread
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK_MAX 65536

typedef struct chunk
{
	struct chunk *next;
	struct timespec due;
	size_t		len;
	char		data[];
}			chunk;

/* One direction of one connection: from -> to, with its queue. */
typedef struct direction
{
	int			from;
	int			to;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	chunk	   *head;
	chunk	   *tail;
	int			eof;			/* the reader is done */
}			direction;

static long delay_us;
static int	upstream_port;

static void
die(const char *what)
{
	perror(what);
	exit(1);
}

static void
nodelay(int fd)
{
	int			one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
		die("setsockopt TCP_NODELAY");
}

static void
due_after_delay(struct timespec *due)
{
	clock_gettime(CLOCK_MONOTONIC, due);
	due->tv_nsec += (delay_us % 1000000) * 1000;
	due->tv_sec += delay_us / 1000000 + due->tv_nsec / 1000000000;
	due->tv_nsec %= 1000000000;
}

/* Read what comes, stamp it, queue it. */
static void *
reader_main(void *arg)
{
	direction  *d = arg;
	char	   *buf = malloc(CHUNK_MAX);

	if (buf == NULL)
		die("malloc");
	for (;;)
	{
		ssize_t		n = read(d->from, buf, CHUNK_MAX);
		chunk	   *c;

		if (n <= 0)
			break;
		/* A chunk as large as what was read: requests are small. */
		c = malloc(sizeof(chunk) + (size_t) n);
		if (c == NULL)
			die("malloc");
		memcpy(c->data, buf, (size_t) n);
		c->len = (size_t) n;
		c->next = NULL;
		due_after_delay(&c->due);
		pthread_mutex_lock(&d->mutex);
		if (d->tail)
			d->tail->next = c;
		else
			d->head = c;
		d->tail = c;
		pthread_cond_signal(&d->cond);
		pthread_mutex_unlock(&d->mutex);
	}
	free(buf);
	pthread_mutex_lock(&d->mutex);
	d->eof = 1;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->mutex);
	return NULL;
}

/* Send each chunk when it is due; pass the end on once the queue is empty. */
static void *
writer_main(void *arg)
{
	direction  *d = arg;

	for (;;)
	{
		chunk	   *c;
		size_t		off = 0;

		pthread_mutex_lock(&d->mutex);
		while (d->head == NULL && !d->eof)
			pthread_cond_wait(&d->cond, &d->mutex);
		c = d->head;
		if (c == NULL)
		{
			pthread_mutex_unlock(&d->mutex);
			break;
		}
		d->head = c->next;
		if (d->head == NULL)
			d->tail = NULL;
		pthread_mutex_unlock(&d->mutex);

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &c->due, NULL) == EINTR)
			;
		while (off < c->len)
		{
			ssize_t		n = write(d->to, c->data + off, c->len - off);

			if (n <= 0)
				break;
			off += (size_t) n;
		}
		free(c);
		if (off == 0)
			break;
	}
	shutdown(d->to, SHUT_WR);
	return NULL;
}

static void
start_direction(direction * d, int from, int to, pthread_t * threads)
{
	d->from = from;
	d->to = to;
	d->head = d->tail = NULL;
	d->eof = 0;
	pthread_mutex_init(&d->mutex, NULL);
	pthread_cond_init(&d->cond, NULL);
	if (pthread_create(&threads[0], NULL, reader_main, d) != 0 ||
		pthread_create(&threads[1], NULL, writer_main, d) != 0)
		die("pthread_create");
}

/* One client connection: relay both ways, then close both sockets. */
static void *
connection_main(void *arg)
{
	int			client = (int) (intptr_t) arg;
	int			upstream;
	direction	up,
				down;
	pthread_t	threads[4];
	struct sockaddr_in addr;

	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t) upstream_port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	upstream = socket(AF_INET, SOCK_STREAM, 0);
	if (upstream < 0 || connect(upstream, (struct sockaddr *) &addr, sizeof(addr)) != 0)
	{
		close(client);
		if (upstream >= 0)
			close(upstream);
		return NULL;
	}
	nodelay(client);
	nodelay(upstream);
	start_direction(&up, client, upstream, &threads[0]);
	start_direction(&down, upstream, client, &threads[2]);
	for (int i = 0; i < 4; i++)
		pthread_join(threads[i], NULL);
	close(client);
	close(upstream);
	return NULL;
}

int
main(int argc, char **argv)
{
	int			listener;
	int			one = 1;
	struct sockaddr_in addr;
	socklen_t	len = sizeof(addr);

	if (argc != 3)
	{
		fprintf(stderr, "usage: zkrelay UPSTREAM_PORT DELAY_US\n");
		return 2;
	}
	upstream_port = atoi(argv[1]);
	delay_us = atol(argv[2]);
	signal(SIGPIPE, SIG_IGN);

	listener = socket(AF_INET, SOCK_STREAM, 0);
	if (listener < 0)
		die("socket");
	setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(listener, (struct sockaddr *) &addr, sizeof(addr)) != 0 ||
		listen(listener, 128) != 0 ||
		getsockname(listener, (struct sockaddr *) &addr, &len) != 0)
		die("listen");
	printf("%d\n", ntohs(addr.sin_port));
	fflush(stdout);

	for (;;)
	{
		int			client = accept(listener, NULL, NULL);
		pthread_t	t;

		if (client < 0)
		{
			if (errno == EINTR)
				continue;
			die("accept");
		}
		if (pthread_create(&t, NULL, connection_main, (void *) (intptr_t) client) != 0)
			die("pthread_create");
		pthread_detach(t);
	}
}
