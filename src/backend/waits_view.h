/*-------------------------------------------------------------------------
 *
 * waits_view.h
 *		zk_waits_for(), the waits-for graph shown (waits_view.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_BACKEND_WAITS_VIEW_H
#define ZKLOCK_BACKEND_WAITS_VIEW_H

#include "fmgr.h"

extern void zkl_list_waits_for(FunctionCallInfo fcinfo);

#endif							/* ZKLOCK_BACKEND_WAITS_VIEW_H */
