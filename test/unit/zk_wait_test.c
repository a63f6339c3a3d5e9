/*-------------------------------------------------------------------------
 *
 * zk_wait_test.c
 *		Unit tests of how the worker's loop waits on its ZooKeeper
 *		connection (rules/zk_wait.c), on answers zookeeper_interest() can
 *		give: a connection being made, one made, a socket closed and its
 *		number given to the next, a timeout, a handle whose session is over.
 *
 *-------------------------------------------------------------------------
 */
#include "rules/zk_wait.h"
#include "unit_tap.h"

#define ZK_ERR	(-4)			/* an error code, as ZCONNECTIONLOSS */

static zkl_zk_interest
answer(int rc, int fd, bool want_write, bool connected, long timeout_ms)
{
	zkl_zk_interest in = {rc, fd, want_write, connected, timeout_ms};

	return in;
}

static void
test_wait_set(void)
{
	zkl_zk_watched none = {-1, false, false};
	zkl_zk_watched connecting7 = {7, false, true};
	zkl_zk_watched connected7 = {7, true, false};
	zkl_zk_interest in;

	in = answer(0, 7, true, false, 3333);
	check(zkl_zk_wait_change_for(&in, &none) == ZKL_ZK_WAIT_REBUILD,
		  "a first socket is added");
	check(zkl_zk_wait_change_for(&in, &connecting7) == ZKL_ZK_WAIT_REBUILD,
		  "the same number while connecting is added again (the library may have opened another socket under it)");
	in = answer(0, 7, false, true, 3333);
	check(zkl_zk_wait_change_for(&in, &connecting7) == ZKL_ZK_WAIT_REBUILD,
		  "once connected, the socket added while connecting is added again, once");
	check(zkl_zk_wait_change_for(&in, &connected7) == ZKL_ZK_WAIT_KEEP,
		  "a connected socket, watched as asked, is kept");
	in = answer(0, 7, true, true, 3333);
	check(zkl_zk_wait_change_for(&in, &connected7) == ZKL_ZK_WAIT_MODIFY,
		  "bytes to send: the same socket is watched for writing too");
	in = answer(0, 9, false, true, 3333);
	check(zkl_zk_wait_change_for(&in, &connected7) == ZKL_ZK_WAIT_REBUILD,
		  "another socket number: rebuilt");
	in = answer(0, -1, false, false, 0);
	check(zkl_zk_wait_change_for(&in, &connected7) == ZKL_ZK_WAIT_REBUILD,
		  "no socket any more: rebuilt without one");
	check(zkl_zk_wait_change_for(&in, &none) == ZKL_ZK_WAIT_KEEP,
		  "no socket, none watched: kept");
	in = answer(ZK_ERR, 7, false, false, 0);
	check(zkl_zk_socket(&in) == -1,
		  "after an error the number named is not watched (the library may have closed it)");
	check(zkl_zk_wait_change_for(&in, &connected7) == ZKL_ZK_WAIT_REBUILD,
		  "after an error the socket watched is dropped");
}

static void
test_sleep(void)
{
	zkl_zk_interest in;

	in = answer(0, 7, false, true, 3333);
	check(zkl_zk_sleep_ms(-1, &in, false) == 3333,
		  "nothing of the loop's own: until the library must ping");
	check(zkl_zk_sleep_ms(500, &in, false) == 500,
		  "the loop's own time when it comes first");
	check(zkl_zk_sleep_ms(5000, &in, false) == 3333,
		  "the library's time when it comes first");
	check(zkl_zk_sleep_ms(5000, &in, true) == 0,
		  "events already queued: no sleep");
	in = answer(0, 7, false, true, 0);
	check(zkl_zk_sleep_ms(-1, &in, false) == 0,
		  "a time of zero without an error: at once");
	in = answer(ZK_ERR, -1, false, false, 0);
	check(zkl_zk_sleep_ms(-1, &in, false) == ZKL_ZK_ERROR_PAUSE_MS,
		  "an error with a time of zero (a lost connection): the next try soon, not in a spin");
	check(zkl_zk_sleep_ms(2, &in, false) == 2,
		  "... unless the loop has its own business sooner");
	in = answer(ZK_ERR, -1, false, false, 166);
	check(zkl_zk_sleep_ms(-1, &in, false) == 166,
		  "an error with a delay (every server tried): the library's delay");
	in = answer(ZK_ERR, -1, false, false, -1);
	check(zkl_zk_sleep_ms(-1, &in, false) == ZKL_ZK_ERROR_RETRY_MS,
		  "an error that names no time (a session over): asked again, never forgotten");
	check(zkl_zk_sleep_ms(5000, &in, true) == 0,
		  "... and events queued still end the sleep at once");
}

static void
test_events_to_try(void)
{
	zkl_zk_watched connected = {7, true, false};
	zkl_zk_watched sending = {7, true, true};
	zkl_zk_watched connecting = {7, false, true};
	zkl_zk_watched none = {-1, false, false};

	check(zkl_zk_events_to_try(&connected, ZKL_ZK_READ, false) == ZKL_ZK_READ,
		  "a readable socket: read");
	check(zkl_zk_events_to_try(&connecting, ZKL_ZK_WRITE, false) == ZKL_ZK_WRITE,
		  "a connect finished (writable): let the library finish it");
	check(zkl_zk_events_to_try(&connected, 0, false) == 0,
		  "a sleep that timed out saw the socket idle: nothing");
	check(zkl_zk_events_to_try(&connected, 0, true) == ZKL_ZK_READ,
		  "woken by the latch alone: read all the same (the latch may have hidden the socket)");
	check(zkl_zk_events_to_try(&sending, 0, true) == (ZKL_ZK_READ | ZKL_ZK_WRITE),
		  "... and write, when bytes wait to be sent");
	check(zkl_zk_events_to_try(&connecting, 0, true) == 0,
		  "never on a socket still connecting");
	check(zkl_zk_events_to_try(&none, 0, true) == 0, "nor without a socket");
}

static void
test_reads(void)
{
	check(zkl_zk_read_again(true, 0, 1), "an answer taken off a readable socket: read again");
	check(!zkl_zk_read_again(true, -117, 1), "nothing more to read (ZNOTHING): stop");
	check(!zkl_zk_read_again(true, ZK_ERR, 1), "a lost connection: stop");
	check(!zkl_zk_read_again(false, 0, 1), "a socket that was only writable: no read");
	check(zkl_zk_read_again(true, 0, ZKL_ZK_MAX_READS - 1), "below the pass's share: read again");
	check(!zkl_zk_read_again(true, 0, ZKL_ZK_MAX_READS),
		  "the pass's share read: the rest waits for the next pass");
}

int
main(void)
{
	test_wait_set();
	test_sleep();
	test_events_to_try();
	test_reads();
	return tap_done();
}
