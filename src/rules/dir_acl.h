/*-------------------------------------------------------------------------
 *
 * dir_acl.h
 *		Whether a lock directory's ACL lets zklock delete the nodes it
 *		would make there (dir_acl.c): the pure rule the worker applies
 *		before its first create in a directory, so that a directory that
 *		would strand zklock's node is refused before anything is made.
 *		Plain C, no PostgreSQL, no ZooKeeper: test/unit proves it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_DIR_ACL_H
#define ZKLOCK_DIR_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ZooKeeper's permission bits (ZOO_PERM_*), as getACL answers them. */
#define ZKL_PERM_READ		1
#define ZKL_PERM_WRITE		2
#define ZKL_PERM_CREATE		4
#define ZKL_PERM_DELETE		8
#define ZKL_PERM_ADMIN		16

/* One entry of a directory's ACL. */
typedef struct zkl_acl_entry
{
	int32_t		perms;
	const char *scheme;
	const char *id;
} zkl_acl_entry;

typedef enum zkl_dir_verdict
{
	ZKL_DIR_DELETE_ALLOWED = 0, /* an entry that surely names zklock grants
								 * DELETE */
	ZKL_DIR_DELETE_UNSURE,		/* only entries zklock cannot evaluate (ip,
								 * x509, sasl, ...) grant it */
	ZKL_DIR_DELETE_REFUSED		/* no entry grants it to zklock */
} zkl_dir_verdict;

extern zkl_dir_verdict zkl_dir_delete_verdict(const zkl_acl_entry *acl, int n,
											  const char *digest_id);

/* base64 of len bytes into out (4 * ((len + 2) / 3) + 1 bytes), as ZooKeeper's digest ids. */
extern void zkl_base64(const unsigned char *in, size_t len, char *out);

/* Bytes zkl_base64 writes for len bytes, with its '\0'. */
#define ZKL_BASE64_SIZE(len)	(4 * (((len) + 2) / 3) + 1)

#endif							/* ZKLOCK_DIR_ACL_H */
