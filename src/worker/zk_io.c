/*-------------------------------------------------------------------------
 *
 * zk_io.c
 *		How the worker's loop drives libzookeeper, in the worker process.
 *
 * The worker links libzookeeper's single-threaded build: the library has
 * no I/O thread and no completion thread, and does nothing unless the loop
 * calls it.  Before each sleep the loop asks it what to wait for
 * (zookeeper_interest: the socket, for reading or writing too, and when it
 * must run again to ping or to give up on a silent server), and sleeps on
 * that socket beside its latch and the postmaster's death in one
 * WaitEventSet.  At the start of each pass it lets the library act on what
 * the socket became (zookeeper_process): send what waits, read the
 * answers, run their callbacks, which queue events (zk_events.c) that the
 * same pass handles.  A request goes out from inside its own call
 * (zoo_a*), so an answer costs the loop one wake-up and no hand-over
 * between threads.
 *
 * Everything here runs on the worker's only thread.  The socket is the
 * library's: it opens, closes and replaces it, and the wait set follows
 * (rules/zk_wait.c says when).  The session's liveness is the loop's too:
 * the library pings only when asked, so a pass must stay short, which the
 * pass budget (rules/pass_budget.c) already demands for the heartbeat.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <poll.h>

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/memutils.h"

#include "pg_compat.h"
#include "rules/clock.h"
#include "rules/zk_wait.h"
#include "worker/session.h"
#include "worker/zk_events.h"
#include "worker/zk_io.h"

/* The latch, the postmaster's death and the library's socket. */
#define ZKL_IO_WAIT_EVENTS	3

static WaitEventSet *zkl_io_set = NULL;
static zkl_zk_watched zkl_io_watched = {0, -1, false, false};

/*
 * What the library was last asked of, when (zkl_now()), and the time it
 * named.
 */
static zkl_zk_asked zkl_io_asked = {0, -1};
static int64 zkl_io_asked_at = 0;
static long zkl_io_asked_timeout_ms = -1;

/*
 * Handle number zkl_io_not_before_handle is not let connect before
 * zkl_io_not_before (zkl_now(); 0: no such time).  Any other handle (one
 * that closes a given-up session, the next session's) connects at once.
 */
static int64 zkl_io_not_before = 0;
static uint32 zkl_io_not_before_handle = 0;
static int	zkl_io_socket_pos = -1;

/* What the library may try after the last sleep: ZKL_ZK_READ, ZKL_ZK_WRITE. */
static int	zkl_io_ready = 0;

static int
zkl_io_socket_events(bool want_write)
{
	return WL_SOCKET_READABLE | (want_write ? WL_SOCKET_WRITEABLE : 0);
}

/* The library's flags for what zk_wait.c lets it try. */
static int
zkl_io_library_events(int events)
{
	return ((events & ZKL_ZK_READ) ? ZOOKEEPER_READ : 0) |
		((events & ZKL_ZK_WRITE) ? ZOOKEEPER_WRITE : 0);
}

/* What the library wants now, asked of the handle in use. */
static void
zkl_io_interest(zkl_zk_interest *in)
{
	int			fd = -1;
	int			interest = 0;
	struct timeval tv = {-1, 0};

	in->rc = zookeeper_interest(zkl_zh, &fd, &interest, &tv);
	zkl_io_asked_at = zkl_now();
	zkl_io_asked.handle = zkl_handle_number;
	zkl_io_asked.fd = fd;
	in->fd = fd;
	in->want_write = (interest & ZOOKEEPER_WRITE) != 0;
	in->connected = zoo_state(zkl_zh) == ZOO_CONNECTED_STATE;
	/* It sets the time on every path that gets past its first checks. */
	in->timeout_ms = tv.tv_sec < 0 ? -1 :
		(long) tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
	zkl_io_asked_timeout_ms = zkl_zk_sleep_ms(-1, in, false);
}

/*
 * The library not asked now: between two attempts at connecting, before
 * the delay it named, or a handle not let connect yet.  No socket, and the
 * time left.
 */
static void
zkl_io_not_asked(zkl_zk_interest *in, long ms_left)
{
	in->rc = 0;
	in->fd = -1;
	in->want_write = false;
	in->connected = false;
	in->timeout_ms = Max(ms_left, 0);
}

/*
 * Let handle number handle connect only from at on: a reattachment after
 * a quick one (session.c) waits.  Requests made meanwhile wait in the
 * handle's queue.
 */
void
zkl_io_connect_not_before(uint32 handle, int64 at)
{
	zkl_io_not_before_handle = handle;
	zkl_io_not_before = at;
}

/*
 * A new wait set, with the socket the library named if any.  The old one
 * goes whole: its epoll may still hold a socket the library closed.
 */
static void
zkl_io_build(const zkl_zk_interest *in)
{
	int			fd = zkl_zk_socket(in);

	if (zkl_io_set != NULL)
		FreeWaitEventSet(zkl_io_set);
	zkl_io_set = zkl_process_wait_event_set(ZKL_IO_WAIT_EVENTS);
	AddWaitEventToSet(zkl_io_set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(zkl_io_set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	zkl_io_socket_pos = -1;
	if (fd >= 0)
		zkl_io_socket_pos = AddWaitEventToSet(zkl_io_set, zkl_io_socket_events(in->want_write),
											  fd, NULL, NULL);
	if (fd >= 0)
		zkl_io_watched.socket_handle = zkl_handle_number;
	zkl_io_watched.fd = fd;
	zkl_io_watched.connected = in->connected;
	zkl_io_watched.want_write = in->want_write;
}

/*
 * Whether the library closed its connection inside a request's call, when
 * the send failed, without a word: no session event, no completion of the
 * requests in flight, and its queues as they were (a request half sent
 * among them).  Left alone it would connect again with that state: the
 * stale requests fail only at the first answer on the new connection, and
 * the half-sent request's tail would reach the server as a frame of its
 * own.  The worker closes such a handle and opens another on the same
 * session instead (session.c), before the library is asked anything.
 */
bool
zkl_io_dropped(void)
{
	return zkl_zh != NULL &&
		zkl_zk_dropped_silently(&zkl_io_watched, zkl_handle_number,
								zoo_state(zkl_zh) == ZOO_NOTCONNECTED_STATE);
}

/* What a look at the socket that does not wait finds. */
static int
zkl_io_look(void)
{
	struct pollfd pfd;

	pfd.fd = zkl_io_watched.fd;
	pfd.events = POLLIN | (zkl_io_watched.want_write ? POLLOUT : 0);
	pfd.revents = 0;
	if (poll(&pfd, 1, 0) <= 0)
		return 0;
	return zkl_zk_events_of((pfd.revents & POLLIN) != 0, (pfd.revents & POLLOUT) != 0,
							(pfd.revents & (POLLHUP | POLLERR)) != 0,
							zkl_io_watched.want_write);
}

/*
 * Sleep until the latch is set, the socket is ready, or timeout_ms (the
 * loop's own time, -1 for none) or the library's time has passed.  Asking
 * the library may run callbacks (a connection that timed out fails every
 * request in flight): then there is no sleep.
 */
void
zkl_io_wait(long timeout_ms, uint32 wait_event_info)
{
	zkl_zk_interest in = {0, -1, false, false, -1};
	WaitEvent	events[ZKL_IO_WAIT_EVENTS];
	int			reported = 0;
	int			n;

	if (zkl_zh != NULL)
	{
		int64		now = zkl_now();
		long		since = zkl_ms_left(now, zkl_io_asked_at);

		if (zkl_handle_number == zkl_io_not_before_handle && now < zkl_io_not_before)
			zkl_io_not_asked(&in, zkl_ms_left(zkl_io_not_before, now));
		else if (!zkl_zk_ask_now(&zkl_io_asked, zkl_handle_number, since, zkl_io_asked_timeout_ms))
			zkl_io_not_asked(&in, zkl_io_asked_timeout_ms - since);
		else
		{
			zkl_io_interest(&in);
			if (zkl_zk_poke_after_error(&in))
			{
				(void) zookeeper_process(zkl_zh, ZOOKEEPER_READ | ZOOKEEPER_WRITE);
				zkl_io_interest(&in);
			}
		}
	}
	if (zkl_io_set == NULL)
		zkl_io_build(&in);
	else
		switch (zkl_zk_wait_change_for(&in, &zkl_io_watched))
		{
			case ZKL_ZK_WAIT_REBUILD:
				zkl_io_build(&in);
				break;
			case ZKL_ZK_WAIT_MODIFY:
				ModifyWaitEvent(zkl_io_set, zkl_io_socket_pos,
								zkl_io_socket_events(in.want_write), NULL);
				zkl_io_watched.want_write = in.want_write;
				break;
			case ZKL_ZK_WAIT_KEEP:
				break;
		}

	n = WaitEventSetWait(zkl_io_set, zkl_zk_sleep_ms(timeout_ms, &in, zkl_events_queued()),
						 events, lengthof(events), wait_event_info);
	for (int i = 0; i < n; i++)
	{
		if (events[i].pos != zkl_io_socket_pos || zkl_io_socket_pos < 0)
			continue;
		if (events[i].events & WL_SOCKET_READABLE)
			reported |= ZKL_ZK_READ;
		if (events[i].events & WL_SOCKET_WRITEABLE)
			reported |= ZKL_ZK_WRITE;
	}
	if (zkl_zk_look_again(&zkl_io_watched, reported, n > 0))
		reported = zkl_io_look();
	zkl_io_ready = reported;
}

/*
 * Let the library act on what the socket became: finish a connect, send
 * what waits, and take the answers that came, one a call, up to a pass's
 * share.  Nothing to do when the socket was not ready.
 */
void
zkl_io_process(void)
{
	bool		readable = (zkl_io_ready & ZKL_ZK_READ) != 0;
	int			events = zkl_io_library_events(zkl_io_ready);
	int			reads = 0;
	int			rc;

	zkl_io_ready = 0;
	if (zkl_zh == NULL || events == 0)
		return;
	do
	{
		rc = zookeeper_process(zkl_zh, events);
		events = ZOOKEEPER_READ;
		reads++;
	} while (zkl_zk_read_again(readable, rc, reads));
}

/*
 * The library's socket while its handle is connected, -1 otherwise: the
 * one it named last, asked of this handle.  A connection is only made
 * inside zookeeper_interest, which no pass calls, so within a pass it is
 * still the library's, or closed.
 */
int
zkl_io_connected_socket(void)
{
	if (zkl_zh == NULL || zkl_io_asked.handle != zkl_handle_number ||
		zkl_io_asked.fd < 0 || zoo_state(zkl_zh) != ZOO_CONNECTED_STATE)
		return -1;
	return zkl_io_asked.fd;
}
