/*-------------------------------------------------------------------------
 *
 * send_hold.c
 *		A pass's sends to ZooKeeper held back until the pass ends, in the
 *		worker process.
 *
 * The client library writes each request in two calls, its length and
 * then its body, on a socket with TCP_NODELAY: each call went as a
 * segment of its own, and a pass's several requests as twice as many.
 * The worker's loop holds the connected socket's sends (TCP_CORK) from
 * the start of a pass's work, and lets them go at its end, before it
 * sleeps: the pass's requests leave together, in as few segments as they
 * fill.  Anything that waits for an answer inside a pass lets them go
 * first: the close of a handle (session.c), whose request the library
 * waits for, and the worker's exit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "worker/send_hold.h"

/* The socket whose sends are held, -1 for none. */
static int	zkl_held_socket = -1;

/*
 * Hold the sends on sock (-1: no connected socket, nothing held).  Where
 * the system has no TCP_CORK, every send goes at once, as before.
 */
void
zkl_hold_sends(int sock)
{
#ifdef TCP_CORK
	int			on = 1;

	if (sock < 0 || zkl_held_socket >= 0)
		return;
	if (setsockopt(sock, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)) == 0)
		zkl_held_socket = sock;
#endif
}

/*
 * Let the held sends go.  If the library closed the socket meanwhile, the
 * call fails on a number that is no longer a socket, or not a TCP one:
 * both harmless.
 */
void
zkl_send_held(void)
{
#ifdef TCP_CORK
	int			off = 0;

	if (zkl_held_socket < 0)
		return;
	(void) setsockopt(zkl_held_socket, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
	zkl_held_socket = -1;
#endif
}
