/*-------------------------------------------------------------------------
 *
 * slot_recovery.h
 *		What the worker does with every slot at once (slot_recovery.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_SLOT_RECOVERY_H
#define ZKLOCK_SLOT_RECOVERY_H



extern int	zkl_session_lost(const char *cause);
extern void zkl_adopt_slots(void);
extern void zkl_rewatch_all(void);
extern void zkl_check_holds(void);
extern void zkl_reap_dead_backends(void);

#endif							/* ZKLOCK_SLOT_RECOVERY_H */
