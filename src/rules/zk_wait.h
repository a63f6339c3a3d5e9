/*-------------------------------------------------------------------------
 *
 * zk_wait.h
 *		How the worker's loop waits on its ZooKeeper connection
 *		(zk_wait.c): when the wait set must watch another socket, and how
 *		long the loop may sleep before the client library must run again.
 *		Plain C, no PostgreSQL, no ZooKeeper: test/unit proves each rule
 *		on what zookeeper_interest() can answer.
 *
 * The worker drives libzookeeper's single-threaded build from its own loop
 * (worker/zk_io.c): the library has no thread of its own, so it reads,
 * writes, pings and times out only when the loop calls it.  Before each
 * sleep the loop asks it which socket to watch, for what, and until when
 * (zookeeper_interest); after the sleep it lets it act on what the socket
 * became (zookeeper_process).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_ZK_WAIT_H
#define ZKLOCK_ZK_WAIT_H

#include <stdbool.h>

/* What zookeeper_interest() answered, as the loop reads it. */
typedef struct zkl_zk_interest
{
	int			rc;				/* its return code: 0 (ZOK) or an error */
	int			fd;				/* the socket it named, -1 for none */
	bool		want_write;		/* it has bytes to send or a connect to finish */
	bool		connected;		/* the handle's state is connected */
	long		timeout_ms;		/* when it must run again; -1: it named no
								 * time */
} zkl_zk_interest;

/*
 * The socket the loop's wait set watches, as it was added.  Handle numbers
 * start at 1 (session.c): a zkl_zk_watched that has watched no socket has
 * 0 for its handle, which no handle matches.
 */
typedef struct zkl_zk_watched
{
	unsigned int socket_handle; /* the last handle a socket was watched of */
	int			fd;				/* -1: none */
	bool		connected;		/* the handle was connected when it was added */
	bool		want_write;		/* ... and writing was watched for */
} zkl_zk_watched;

/*
 * What the library was last asked of (zookeeper_interest): the handle's
 * number, 0 before any, and the socket it named, -1 for none.
 */
typedef struct zkl_zk_asked
{
	unsigned int handle;
	int			fd;
} zkl_zk_asked;

typedef enum zkl_zk_wait_change
{
	ZKL_ZK_WAIT_KEEP,			/* the wait set is right as it is */
	ZKL_ZK_WAIT_MODIFY,			/* the same socket, watched for more or less */
	ZKL_ZK_WAIT_REBUILD			/* another socket, or none */
} zkl_zk_wait_change;

/*
 * How long the loop sleeps at least after the library answered with an
 * error and a time of zero (a connection just lost, a server that refused
 * the connection): the next attempt comes that soon, never in a spin.  And
 * how long after an error that named no time (a handle whose session is
 * over, hosts that did not resolve), the loop asks again.
 */
#define ZKL_ZK_ERROR_PAUSE_MS	10
#define ZKL_ZK_ERROR_RETRY_MS	100

/* What the library is let do on its socket (as ZOOKEEPER_READ, _WRITE). */
#define ZKL_ZK_WRITE			1
#define ZKL_ZK_READ				2

/* The answers the loop reads off the socket in one pass, at most. */
#define ZKL_ZK_MAX_READS		256

/* The first wait of a reattachment that follows a quick one (ms). */
#define ZKL_ZK_REATTACH_FIRST_MS	1000

extern int	zkl_zk_socket(const zkl_zk_interest *in);
extern zkl_zk_wait_change zkl_zk_wait_change_for(const zkl_zk_interest *in,
												 const zkl_zk_watched *watched);
extern long zkl_zk_sleep_ms(long loop_ms, const zkl_zk_interest *in, bool events_queued);
extern bool zkl_zk_look_again(const zkl_zk_watched *watched, int reported, bool woken_otherwise);
extern int	zkl_zk_events_of(bool in, bool out, bool broken, bool want_write);
extern bool zkl_zk_poke_after_error(const zkl_zk_interest *in);
extern bool zkl_zk_dropped_silently(const zkl_zk_watched *watched, unsigned int handle,
									bool not_connected_state);
extern bool zkl_zk_ask_now(const zkl_zk_asked *asked, unsigned int handle,
						   long ms_since_asked, long asked_timeout_ms);
extern long zkl_zk_reattach_wait_ms(long last_wait_ms, long ms_since_connect, int timeout_ms);
extern bool zkl_zk_read_again(bool readable, int rc, int reads);

#endif							/* ZKLOCK_ZK_WAIT_H */
