/*-------------------------------------------------------------------------
 *
 * zk_io.h
 *		How the worker's loop drives libzookeeper (zk_io.c): it sleeps on
 *		the library's socket beside its latch, and lets the library read,
 *		write, ping and call back.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_ZK_IO_H
#define ZKLOCK_ZK_IO_H

extern bool zkl_io_dropped(void);
extern void zkl_io_connect_not_before(uint32 handle, int64 at);
extern void zkl_io_wait(long timeout_ms, uint32 wait_event_info);
extern void zkl_io_process(void);
extern int	zkl_io_connected_socket(void);

#endif							/* ZKLOCK_ZK_IO_H */
