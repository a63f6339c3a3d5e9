/*-------------------------------------------------------------------------
 *
 * waits_graph.h
 *		One reading of the waits-for graph of every cluster, in a backend
 *		(waits_graph.c): what deadlock_check.c decides on and what
 *		zk_waits_for() shows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_BACKEND_WAITS_GRAPH_H
#define ZKLOCK_BACKEND_WAITS_GRAPH_H

#include "rules/waits_for.h"

/* A wait as published in <root>/.waits (or this backend's own). */
typedef struct zkl_published
{
	zkl_backend_ref who;
	char	   *dir;			/* the request's lock directory */
	char	   *node;			/* the request's node in it */
	int64		czxid;			/* and that node's czxid */
	char	   *cluster;		/* what the waiter's cluster is called */
	char	   *mode;
	int64		timeout_ms;		/* the waiter's deadlock_timeout; 0 unknown */
} zkl_published;

/* What edge i of a graph is, for the error's detail and zk_waits_for. */
typedef struct zkl_edge_info
{
	char	   *waiter_cluster;
	char	   *lock;			/* NULL: a PostgreSQL lock */
	char	   *mode;
	int64		since_ms;		/* creation of the waiting node; 0 unknown */
	char	   *blocker_cluster;	/* NULL: another client */
	const char *blocker_client;
	char	   *blocker_node;	/* path; NULL for a PostgreSQL lock */
	int64		blocker_czxid;	/* 0 for a PostgreSQL lock */
	int64		timeout_ms;		/* the waiter's deadlock_timeout; 0 unknown */
} zkl_edge_info;

/* One lock directory read during a pass. */
typedef struct zkl_dir_read
{
	char	   *dir;
	struct zkl_contender *all;
	int			n;
	bool		fresh;			/* read afresh, not shared */
} zkl_dir_read;

/* The waits-for graph of one reading. */
typedef struct zkl_graph
{
	int64		session;		/* this cluster's: its backends' edges are
								 * ours to follow */
	zkl_wait_edge edges[ZKL_MAX_WAIT_EDGES];
	zkl_edge_info info[ZKL_MAX_WAIT_EDGES];
	int			nedges;
	zkl_published *waits;
	int			nwaits;
	zkl_dir_read *dirs;
	int			ndirs;
	int			max_dirs;
	int64		max_age_us;		/* how old a shared reading may be */
	zkl_backend_ref queue[ZKL_MAX_WAIT_EDGES + 1];	/* backends to follow */
	int			nqueue;

	/*
	 * What a later check needs to know of this reading: whether every read
	 * was answered (complete), whether the bound on directories or backends
	 * cut it short (truncated), or the bound on edges (edges_full), whether
	 * it followed anything at all (reach_unknown), and the children, child
	 * counters and watch count of <root>/.waits as read.
	 */
	bool		complete;
	bool		truncated;
	bool		edges_full;
	bool		reach_unknown;	/* nothing was followed (no cycle could be) */
	int32		waits_cversion;
	int32		waits_count;
	uint64		waits_watch_gen;	/* the worker's watch on .waits as it was
									 * listed (inspect_reply.h); 0: none */
	char	  **waits_names;
	int			nwaits_names;
} zkl_graph;

extern zkl_graph *zkl_read_graph(const zkl_published *own, int max_dirs, int64 max_age_us);
extern char *zkl_own_cluster_label(void);
extern zkl_published *zkl_find_published(zkl_graph *g, zkl_backend_ref who);
extern zkl_graph *zkl_read_published(int64 max_age_us);
extern bool zkl_waits_one_dir(const zkl_graph *g, const zkl_published *own);

#endif							/* ZKLOCK_BACKEND_WAITS_GRAPH_H */
