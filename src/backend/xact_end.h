/*-------------------------------------------------------------------------
 *
 * xact_end.h
 *		The backend's hooks into PostgreSQL (xact_end.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_XACT_END_H
#define ZKLOCK_XACT_END_H



extern void zkl_backend_init(void);

#endif							/* ZKLOCK_XACT_END_H */
