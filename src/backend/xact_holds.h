/*-------------------------------------------------------------------------
 *
 * xact_holds.h
 *		This backend's transaction-scope holds, counted per lock and
 *		resource owner (xact_holds.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_XACT_HOLDS_H
#define ZKLOCK_XACT_HOLDS_H

#include "utils/resowner.h"

#include "names/name_limits.h"

/* A local lock's key: 'x' or 's' for the mode, then the lock name. */
#define ZKL_KEY_LEN		(ZKL_MAX_NAME_LEN + 2)

/*
 * The transaction-scope holds of one lock that belong to one resource
 * owner: counted, not listed.
 */
typedef struct zkl_xact_hold
{
	char		key[ZKL_KEY_LEN];
	ResourceOwner owner;
	int32		count;
} zkl_xact_hold;

extern zkl_xact_hold *zkl_xact_holds;
extern int	zkl_n_xact_holds;

extern void zkl_reserve_xact_hold(void);
extern void zkl_remember_xact_hold(const char *key);
extern bool zkl_take_xact_hold(ResourceOwner owner, char *key, int32 *count);
extern void zkl_drop_one_xact_hold(const char *key);
extern void zkl_pass_xact_holds(ResourceOwner owner, ResourceOwner parent);
extern void zkl_forget_xact_holds(const char *key);
extern void zkl_forget_all_xact_holds(void);

#endif							/* ZKLOCK_XACT_HOLDS_H */
