/*-------------------------------------------------------------------------
 *
 * lock_name.h
 *		Lock names as ZooKeeper node names (lock_name.c): the encoding and
 *		its exact inverse, as pure functions: plain C, no PostgreSQL,
 *		ZooKeeper or shared memory, proven by unit tests without a server
 *		(test/unit).  encode.c wraps them for the backends.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_LOCK_NAME_H
#define ZKLOCK_LOCK_NAME_H

#include <stdbool.h>
#include <stddef.h>

/* The room the encoding of a name of len bytes takes, its NUL included. */
#define ZKL_ENCODED_SIZE(len) (3 * (len) + 1)

extern bool zkl_name_byte_is_plain(unsigned char c, bool first);
extern void zkl_name_percent(char *out, unsigned char c);
extern int	zkl_name_encode(const char *name, int len, char *out);
extern int	zkl_name_decode(const char *encoded, char *out, int max_len);
extern int	zkl_lock_dir_decode(const char *root, const char *dir, char *name,
								int max_len);
extern bool zkl_node_name_ok(const char *node, size_t size);

#endif							/* ZKLOCK_LOCK_NAME_H */
