/*-------------------------------------------------------------------------
 *
 * deadlock.h
 *		Deadlock detection across clusters (deadlock.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_DEADLOCK_H
#define ZKLOCK_DEADLOCK_H

#include "fmgr.h"

extern char *zkl_deadlock_check(int slotno, uint32 generation, const char *name);
extern void zkl_list_waits_for(FunctionCallInfo fcinfo);

#endif							/* ZKLOCK_DEADLOCK_H */
