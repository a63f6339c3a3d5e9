/*-------------------------------------------------------------------------
 *
 * dir_acl.c
 *		Whether a lock directory's ACL lets zklock delete the nodes it would
 *		make there.  DELETE is a right of the parent in ZooKeeper: a
 *		directory made by another tool whose ACL grants zklock CREATE but
 *		not DELETE would keep zklock's node until its session ends, and that
 *		node would hold the lock against everyone.  The worker reads the
 *		directory's ACL before its first create there and applies this
 *		rule (worker/undeletable.c).
 *
 * What zklock is to ZooKeeper: "world:anyone" (every client is) and, with
 * zklock.auth set, "digest:<user>:<base64 of SHA-1 of user:password>".
 * An entry of those grants or denies for sure.  An entry of another digest
 * names someone else.  An entry of a scheme whose match the server decides
 * from what zklock cannot see (ip: the address the server sees, x509: a
 * certificate, sasl: a login; any scheme a server plugs in) may or may not
 * be zklock: when only such an entry grants DELETE, the verdict is UNSURE,
 * and the worker creates, but the release waits for the delete's answer.
 * ZooKeeper grants everything on a node whose ACL is empty.  What no ACL
 * tells (a server's superDigest, zookeeper.skipACL) is not known: such a
 * server may allow what this rule refuses (doc/hostile-data.md).
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "rules/dir_acl.h"

/* Whether an entry names zklock surely (1), surely not (0), or maybe (-1). */
static int
zkl_acl_names_us(const zkl_acl_entry *e, const char *digest_id)
{
	if (e->scheme == NULL || e->id == NULL)
		return -1;
	if (strcmp(e->scheme, "world") == 0)
		return strcmp(e->id, "anyone") == 0 ? 1 : 0;
	if (strcmp(e->scheme, "digest") == 0)
		return digest_id != NULL && strcmp(e->id, digest_id) == 0 ? 1 : 0;
	return -1;
}

zkl_dir_verdict
zkl_dir_delete_verdict(const zkl_acl_entry *acl, int n, const char *digest_id)
{
	bool		maybe = false;

	/* ZooKeeper checks nothing on a node without an ACL. */
	if (n == 0)
		return ZKL_DIR_DELETE_ALLOWED;
	for (int i = 0; i < n; i++)
	{
		int			us;

		if ((acl[i].perms & ZKL_PERM_DELETE) == 0)
			continue;
		us = zkl_acl_names_us(&acl[i], digest_id);
		if (us == 1)
			return ZKL_DIR_DELETE_ALLOWED;
		if (us == -1)
			maybe = true;
	}
	return maybe ? ZKL_DIR_DELETE_UNSURE : ZKL_DIR_DELETE_REFUSED;
}

void
zkl_base64(const unsigned char *in, size_t len, char *out)
{
	static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t		o = 0;

	for (size_t i = 0; i < len; i += 3)
	{
		uint32_t	v = (uint32_t) in[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t) in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		out[o++] = alphabet[(v >> 18) & 63];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < len ? alphabet[v & 63] : '=';
	}
	out[o] = '\0';
}
