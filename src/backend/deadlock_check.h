/*-------------------------------------------------------------------------
 *
 * deadlock_check.h
 *		A backend's deadlock check of its zklock wait, and when it is due
 *		again (deadlock_check.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_BACKEND_DEADLOCK_CHECK_H
#define ZKLOCK_BACKEND_DEADLOCK_CHECK_H

extern char *zkl_deadlock_check(int slotno, uint32 generation, const char *name);
extern bool zkl_deadlock_recheck_due(int slotno, uint32 generation);

#endif							/* ZKLOCK_BACKEND_DEADLOCK_CHECK_H */
