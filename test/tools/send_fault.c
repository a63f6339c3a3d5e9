/*
 * send_fault.c
 *		A send() that fails once on demand, for t/152_silent_drop.pl.
 *
 * Loaded with LD_PRELOAD into a test cluster's processes.  While the file
 * named by ZKL_SEND_FAULT_FILE exists, the next send() on a socket whose
 * peer port is ZKL_SEND_FAULT_PORT (the ZooKeeper server's) removes the
 * file, shuts the socket down both ways and fails with ECONNRESET: what a
 * server's reset looks like to a send that comes before the loop has read
 * it.  Every other send() is the C library's.  Only the zklock worker
 * talks to ZooKeeper, so only its sends are ever failed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*send_fn) (int, const void *, size_t, int);

/* The peer's port of a TCP socket, 0 for any other. */
static int
peer_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t	len = sizeof(ss);

	memset(&ss, 0, sizeof(ss));
	if (getpeername(fd, (struct sockaddr *) &ss, &len) != 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *) &ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *) &ss)->sin6_port);
	return 0;
}

ssize_t
send(int fd, const void *buf, size_t len, int flags)
{
	static send_fn real_send = NULL;
	const char *file = getenv("ZKL_SEND_FAULT_FILE");
	const char *port = getenv("ZKL_SEND_FAULT_PORT");

	if (real_send == NULL)
		real_send = (send_fn) dlsym(RTLD_NEXT, "send");
	if (file != NULL && port != NULL && peer_port(fd) == atoi(port) &&
		unlink(file) == 0)
	{
		shutdown(fd, SHUT_RDWR);
		errno = ECONNRESET;
		return -1;
	}
	return real_send(fd, buf, len, flags);
}
