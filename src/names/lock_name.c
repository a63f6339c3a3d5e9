/*-------------------------------------------------------------------------
 *
 * lock_name.c
 *		Mapping of lock names to ZooKeeper node names, and back.  Plain C
 *		with no PostgreSQL, ZooKeeper or shared memory: encode.c calls it
 *		in the backends, test/unit proves it without a server.
 *
 * The mapping is injective and always yields one valid path component:
 * bytes outside [A-Za-z0-9_.-] become %XX (so "/" cannot leave the lock's
 * directory and "%" cannot be confused with an escape), and a leading "."
 * is escaped too, which rules out "." and "..".  Lock names are
 * PostgreSQL text, which never holds a NUL byte.  Decoding is the exact
 * inverse: it takes what the encoding writes and nothing else, so that one
 * lock has one directory and a directory another client made shows as
 * no lock of ours, never as some lock under another spelling.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "names/lock_name.h"

/* Whether byte c is written as itself (first: it begins the name). */
bool
zkl_name_byte_is_plain(unsigned char c, bool first)
{
	if (c == '.')
		return !first;
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		(c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* Write byte c as %XX (upper-case hex) into out[0..2]. */
void
zkl_name_percent(char *out, unsigned char c)
{
	static const char hex[] = "0123456789ABCDEF";

	out[0] = '%';
	out[1] = hex[c >> 4];
	out[2] = hex[c & 0x0F];
}

/*
 * Encode the len bytes of name into out, which has room for
 * ZKL_ENCODED_SIZE(len) bytes; returns the length written (a NUL follows).
 */
int
zkl_name_encode(const char *name, int len, char *out)
{
	int			n = 0;

	for (int i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) name[i];

		if (zkl_name_byte_is_plain(c, i == 0))
			out[n++] = (char) c;
		else
		{
			zkl_name_percent(out + n, c);
			n += 3;
		}
	}
	out[n] = '\0';
	return n;
}

/* The value of a hex digit as the encoder writes them (upper case), or -1. */
static int
zkl_name_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decode encoded into out, which has room for max_len + 1 bytes: returns
 * the name's length (a NUL follows), or -1 when encoded is not what
 * zkl_name_encode writes for a name of 1 to max_len bytes without NUL.
 * Exactly: an escape is upper-case hex of a byte that is never written
 * plain where it stands (not %61, not a later %2E) and not %00, so that
 * every lock name has one node name and no node name shows as another's
 * lock or cut short.
 */
int
zkl_name_decode(const char *encoded, char *out, int max_len)
{
	int			n = 0;

	for (const char *p = encoded; *p; p++)
	{
		if (n >= max_len)
			return -1;
		if (*p == '%')
		{
			int			hi = zkl_name_hex(p[1]);
			int			lo = hi < 0 ? -1 : zkl_name_hex(p[2]);
			unsigned char c = (unsigned char) (hi * 16 + lo);

			if (lo < 0 || c == '\0' || zkl_name_byte_is_plain(c, n == 0))
				return -1;
			out[n++] = (char) c;
			p += 2;
		}
		else if (zkl_name_byte_is_plain((unsigned char) *p, n == 0))
			out[n++] = *p;
		else
			return -1;
	}
	out[n] = '\0';
	return n > 0 ? n : -1;
}

/*
 * The lock name of dir, when dir is a lock directory as the backends build
 * them under root (an absolute path, "/" for none): root, "/" and one
 * component that zkl_name_decode takes.  Decodes it into name (room for
 * max_len + 1 bytes) and returns its length, or -1 for any other path.
 */
int
zkl_lock_dir_decode(const char *root, const char *dir, char *name, int max_len)
{
	size_t		len = strcmp(root, "/") == 0 ? 0 : strlen(root);

	if (strncmp(dir, root, len) != 0 || dir[len] != '/' ||
		strchr(dir + len + 1, '/') != NULL)
		return -1;
	return zkl_name_decode(dir + len + 1, name, max_len);
}

/*
 * Whether node is a node name of a lock layout zklock reads: 1 to
 * size - 1 bytes of printable ASCII, no slash.
 */
bool
zkl_node_name_ok(const char *node, size_t size)
{
	size_t		len = 0;

	for (; node[len] != '\0'; len++)
		if (len + 1 >= size || node[len] <= 0x20 || node[len] >= 0x7F ||
			node[len] == '/')
			return false;
	return len > 0;
}
