/*-------------------------------------------------------------------------
 *
 * name_text.h
 *		Lock names (and other bytes that zklock shows) as text valid in the
 *		reading database (name_text.c), for the views and functions that
 *		show them, in backends.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_NAME_TEXT_H
#define ZKLOCK_NAME_TEXT_H

#include "postgres.h"

extern text *zkl_text_for_reader(const char *bytes, int len, int src_encoding);

#endif							/* ZKLOCK_NAME_TEXT_H */
