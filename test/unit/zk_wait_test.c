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
	zkl_zk_watched none = {0, -1, false, false};
	zkl_zk_watched connecting7 = {1, 7, false, true};
	zkl_zk_watched connected7 = {1, 7, true, false};
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
test_look_again(void)
{
	zkl_zk_watched connected = {1, 7, true, false};
	zkl_zk_watched connecting = {1, 7, false, true};
	zkl_zk_watched none = {0, -1, false, false};

	check(!zkl_zk_look_again(&connected, ZKL_ZK_READ, true),
		  "the sleep reported the socket: no second look");
	check(!zkl_zk_look_again(&connected, 0, false),
		  "a sleep that timed out saw the socket idle: no second look");
	check(zkl_zk_look_again(&connected, 0, true),
		  "woken by the latch alone: look at the socket (the latch may have hidden it)");
	check(zkl_zk_look_again(&connecting, 0, true),
		  "... connecting too: a connect or a handshake may have finished");
	check(!zkl_zk_look_again(&none, 0, true), "nothing to look at without a socket");

	check(zkl_zk_events_of(true, false, false, false) == ZKL_ZK_READ, "readable: read");
	check(zkl_zk_events_of(false, true, false, false) == 0,
		  "writable with nothing to send: nothing (a write is only for a connect or queued bytes)");
	check(zkl_zk_events_of(false, true, false, true) == ZKL_ZK_WRITE,
		  "writable with a connect to finish: write");
	check(zkl_zk_events_of(false, false, true, true) == (ZKL_ZK_READ | ZKL_ZK_WRITE),
		  "broken: read (and write if wanted), to find the error");
	check(zkl_zk_events_of(false, false, false, true) == 0, "nothing ready: nothing");
}

static void
test_errors(void)
{
	zkl_zk_interest in;
	zkl_zk_watched connected = {4, 7, true, false};
	zkl_zk_watched connecting = {4, 7, false, true};
	zkl_zk_watched fresh = {4, -1, false, false};
	zkl_zk_watched none = {0, -1, false, false};
	zkl_zk_asked asked_socket = {4, 7};
	zkl_zk_asked asked_between = {4, -1};
	zkl_zk_asked asked_never = {0, -1};

	in = answer(ZK_ERR, 7, false, true, 3333);
	check(zkl_zk_poke_after_error(&in),
		  "an error on a connected, open socket (a ping not sent): let the library try it at once");
	in = answer(ZK_ERR, 7, false, false, 0);
	check(!zkl_zk_poke_after_error(&in),
		  "an error after which the handle is not connected (the socket closed): no poke");
	in = answer(0, 7, false, true, 3333);
	check(!zkl_zk_poke_after_error(&in), "no error: no poke");

	check(zkl_zk_dropped_silently(&connected, 4, true),
		  "\"not connected\" on the handle watched as connected: dropped without a word");
	check(!zkl_zk_dropped_silently(&connected, 5, true),
		  "... not on a newer handle that has had no socket yet");
	check(!zkl_zk_dropped_silently(&fresh, 5, true),
		  "... nor on the newer handle once its wait set is built without a socket");
	check(zkl_zk_dropped_silently(&connecting, 4, true),
		  "... but on a handle whose socket was watched while connecting (a drop in the handshake's pass)");
	check(!zkl_zk_dropped_silently(&connected, 4, false), "a connected handle: nothing dropped");
	check(!zkl_zk_dropped_silently(&none, 1, true),
		  "the first handle, \"not connected\" as it is made, before any socket: nothing dropped");

	check(zkl_zk_ask_now(&asked_socket, 4, 0, 3333), "a socket named last time: asked at once");
	check(zkl_zk_ask_now(&asked_between, 5, 0, 166),
		  "a new handle: asked at once, whatever the last one named (its wait set may have been built with no handle)");
	check(zkl_zk_ask_now(&asked_never, 1, 0, 3333), "the first handle: asked at once");
	check(!zkl_zk_ask_now(&asked_between, 4, 20, 166),
		  "no socket, the library's delay not over: not asked (a wake would connect at once)");
	check(zkl_zk_ask_now(&asked_between, 4, 166, 166), "the delay over: asked");
	check(zkl_zk_ask_now(&asked_between, 4, 0, -1), "no delay named: asked");
}

static void
test_reattach_wait(void)
{
	check(zkl_zk_reattach_wait_ms(-1, 0, 10000) == 0, "the first reattachment: at once");
	check(zkl_zk_reattach_wait_ms(0, 200, 10000) == 1000,
		  "one after a connection of 200 ms: a second");
	check(zkl_zk_reattach_wait_ms(1000, 500, 10000) == 1666,
		  "the next quick one: twice the last, up to a sixth of the timeout");
	check(zkl_zk_reattach_wait_ms(1666, 100, 10000) == 1666, "... and no more");
	check(zkl_zk_reattach_wait_ms(1666, 3333, 10000) == 0,
		  "after a connection that lasted a third of the timeout: at once again");
	check(zkl_zk_reattach_wait_ms(0, 100, 3000) == 500,
		  "a short timeout: a sixth of it, below the first second");
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
	test_look_again();
	test_errors();
	test_reattach_wait();
	test_reads();
	return tap_done();
}
