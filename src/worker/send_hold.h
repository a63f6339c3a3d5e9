/*-------------------------------------------------------------------------
 *
 * send_hold.h
 *		A pass's sends to ZooKeeper held back until the pass ends
 *		(send_hold.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_SEND_HOLD_H
#define ZKLOCK_SEND_HOLD_H

extern void zkl_hold_sends(int sock);
extern void zkl_send_held(void);

#endif							/* ZKLOCK_SEND_HOLD_H */
