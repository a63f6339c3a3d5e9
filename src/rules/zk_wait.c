/*-------------------------------------------------------------------------
 *
 * zk_wait.c
 *		How the worker's loop waits on its ZooKeeper connection (see
 *		zk_wait.h).  Runs in the worker; plain C, no PostgreSQL.
 *
 *-------------------------------------------------------------------------
 */
#include "rules/zk_wait.h"

/*
 * The socket to watch: the one the library named, if its answer was not an
 * error.  After an error the number it named may be one it has just closed
 * (a connection that timed out names the old socket, then closes it).
 */
int
zkl_zk_socket(const zkl_zk_interest *in)
{
	return in->rc == 0 && in->fd >= 0 ? in->fd : -1;
}

/*
 * Whether the wait set must change.  Another socket, or none: build it
 * again.  While the handle is not connected, or was not when the socket was
 * added, build it again even for the same number: the library closes a
 * socket and opens the next one between two of the loop's questions (a
 * refused connection, the next server), the kernel gives the new socket the
 * number just freed, and the wait set, whose epoll forgot the closed one,
 * would never hear of the new one.  A connected handle keeps its socket
 * until the connection ends, which makes it not connected first.
 */
zkl_zk_wait_change
zkl_zk_wait_change_for(const zkl_zk_interest *in, const zkl_zk_watched *watched)
{
	int			fd = zkl_zk_socket(in);

	if (fd != watched->fd)
		return ZKL_ZK_WAIT_REBUILD;
	if (fd < 0)
		return ZKL_ZK_WAIT_KEEP;
	if (!in->connected || !watched->connected)
		return ZKL_ZK_WAIT_REBUILD;
	if (in->want_write != watched->want_write)
		return ZKL_ZK_WAIT_MODIFY;
	return ZKL_ZK_WAIT_KEEP;
}

/*
 * How long the loop may sleep, in ms (-1: until an event): its own time
 * (loop_ms, -1 for none) or the library's, whichever comes first; at once
 * when events are already queued (a callback ran while the library was
 * asked).  After an error the library gets another try soon, never in a
 * spin.
 */
long
zkl_zk_sleep_ms(long loop_ms, const zkl_zk_interest *in, bool events_queued)
{
	long		zk_ms = in->timeout_ms;

	if (events_queued)
		return 0;
	if (in->rc != 0)
		zk_ms = zk_ms < 0 ? ZKL_ZK_ERROR_RETRY_MS :
			(zk_ms < ZKL_ZK_ERROR_PAUSE_MS ? ZKL_ZK_ERROR_PAUSE_MS : zk_ms);
	if (zk_ms < 0)
		return loop_ms;
	if (loop_ms < 0 || zk_ms < loop_ms)
		return zk_ms;
	return loop_ms;
}

/*
 * Whether the socket must be looked at after a sleep that did not report
 * it: the sleep ended for something else (the latch).  WaitEventSetWait
 * returns at once with the latch alone when the latch was already set,
 * without looking at the socket: under a steady stream of requests that is
 * every sleep, and answers (or a connect finishing) would wait on the
 * socket for as long as the stream lasts.  A look costs one poll(2) that
 * does not wait.
 */
bool
zkl_zk_look_again(const zkl_zk_watched *watched, int reported, bool woken_otherwise)
{
	return watched->fd >= 0 && reported == 0 && woken_otherwise;
}

/*
 * What a look at the socket (poll's POLLIN, POLLOUT, and POLLHUP or
 * POLLERR) lets the library try: reading when it is readable or broken
 * (the read finds the error), writing when it is writable, or broken, and
 * the library has bytes to send or a connect to finish.
 */
int
zkl_zk_events_of(bool in, bool out, bool broken, bool want_write)
{
	int			events = 0;

	if (in || broken)
		events |= ZKL_ZK_READ;
	if ((out || broken) && want_write)
		events |= ZKL_ZK_WRITE;
	return events;
}

/*
 * Whether the library must be let try its socket at once after it
 * answered with an error: a connected socket is still open (a ping it
 * could not send), and only a read or a write on it runs the library's
 * own handling of the broken connection (every request in flight fails as
 * a connection loss, the socket is closed, the next server is tried).
 * Left alone, the socket would drop out of the wait set and the loss would
 * be found only when the receive timeout ran out.
 */
bool
zkl_zk_poke_after_error(const zkl_zk_interest *in)
{
	return in->rc != 0 && in->fd >= 0 && in->connected;
}

/*
 * Whether the library dropped a connection without saying so: its state is
 * "not connected", which is the state of a handle that never had a socket,
 * or of one whose send failed inside a request's call (the single-threaded
 * library then closes the socket and runs no handler, no watcher and no
 * completion), on a handle that has had a socket.  Its failed connections
 * leave another state (0), so any socket of the handle counts, not only a
 * connected one: the drop may come in the pass that finished the
 * handshake.
 */
bool
zkl_zk_dropped_silently(const zkl_zk_watched *watched, unsigned int handle,
						bool not_connected_state)
{
	return not_connected_state && watched->socket_handle == handle;
}

/*
 * Whether to ask the library what to wait for now.  Asking is what makes it
 * connect: when its last answer named no socket (between two attempts at
 * connecting, it names the delay it wants), asking again before that delay
 * is over would connect at once, and every wake of the loop (each backend's
 * request) would become an attempt, with a resolution of zklock.hosts.  A
 * new handle, or a socket named last time, is asked at once.
 */
bool
zkl_zk_ask_now(const zkl_zk_asked *asked, unsigned int handle,
			   long ms_since_asked, long asked_timeout_ms)
{
	if (asked->handle != handle || asked->fd >= 0)
		return true;
	return asked_timeout_ms < 0 || ms_since_asked >= asked_timeout_ms;
}

/*
 * How long a reattachment after a dropped connection waits before it
 * connects, in ms: none for the first, nor after a connection that lasted
 * a third of the session's timeout; after a quicker one, twice the last
 * wait, from ZKL_ZK_REATTACH_FIRST_MS up to a sixth of the timeout.  A
 * server that resets every connection after its handshake then costs a
 * full redo of the watches and a log line less and less often, while the
 * session is still reached well before it is given up (at two thirds of
 * the timeout after the last proof, which a drop leaves at most a sixth
 * old).  last_wait_ms is -1 before the first; ms_since_connect counts from
 * when the last one was let connect.
 */
long
zkl_zk_reattach_wait_ms(long last_wait_ms, long ms_since_connect, int timeout_ms)
{
	long		cap = timeout_ms / 6;
	long		wait;

	if (last_wait_ms < 0 || ms_since_connect >= timeout_ms / 3)
		return 0;
	wait = last_wait_ms * 2;
	if (wait < ZKL_ZK_REATTACH_FIRST_MS)
		wait = ZKL_ZK_REATTACH_FIRST_MS;
	return wait < cap ? wait : cap;
}

/*
 * Whether to let the library read once more in this pass: it takes one
 * answer off the socket per call, and says 0 (ZOK) when it took one.  Only
 * when the socket was readable, and at most ZKL_ZK_MAX_READS answers a
 * pass: the rest waits for the next, which comes at once (the socket stays
 * readable).
 */
bool
zkl_zk_read_again(bool readable, int rc, int reads)
{
	return readable && rc == 0 && reads < ZKL_ZK_MAX_READS;
}
