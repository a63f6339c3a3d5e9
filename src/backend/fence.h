/*-------------------------------------------------------------------------
 *
 * fence.h
 *		Fences and their tokens (fence.c), for the triggers of
 *		fence_trigger.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_FENCE_H
#define ZKLOCK_FENCE_H

/*
 * Where the token of a fenced write comes from (zklock 1.4).  A write that
 * carries no token of its own (an UPDATE that leaves the token column
 * alone, a DELETE) is fenced with the session's own token for the lock of
 * the resource; a session that holds no such lock is refused, unless it may
 * write the fencing table directly (it could write any token by hand).
 */
typedef enum zkl_fence_token
{
	ZKL_TOKEN_PRESENTED,		/* given to zk_fence or zk_fence_table: the
								 * caller claims to hold the lock with it
								 * (zklock 1.5) */
	ZKL_TOKEN_GIVEN,			/* the row's as written, or the writer's own
								 * (zkl_writer_token): accepted when the
								 * session holds the lock with it or its
								 * transaction presented it */
	ZKL_TOKEN_UNCHANGED,		/* the row's, left as it was, and no lock is
								 * held: refused, or for a caller that may
								 * write the table, fenced as it is */
	ZKL_TOKEN_NONE				/* a delete, and no lock is held: refused, or
								 * for a caller that may write the table, let
								 * through unfenced */
} zkl_fence_token;

/*
 * Where the tokens of a fence live (zklock 1.3).  ZKL_FENCE_1_1 is the one
 * namespace of 1.1 and 1.2, kept for a database not yet updated: its
 * functions run as the extension's owner (SECURITY DEFINER) and accept any
 * token.  From 1.3 zk_fence keys its rows on the calling role as well, the
 * trigger on its table, in a table of its own, so that neither can reach
 * the other's rows nor another role's.
 */
typedef enum zkl_fence_kind
{
	ZKL_FENCE_1_1,				/* zk_fence_tokens (resource) */
	ZKL_FENCE_ROLE,				/* zk_fence_tokens (fencer, resource) */
	ZKL_FENCE_TABLE,			/* zk_fence_table_tokens (fenced_table,
								 * resource) */
	ZKL_FENCE_KINDS
}			zkl_fence_kind;

extern void zkl_fence(zkl_fence_kind kind, text *resource, int64 token, Oid key,
					  zkl_fence_token how);
extern bool zkl_writer_token(text *resource, int64 *token);

#endif							/* ZKLOCK_FENCE_H */
