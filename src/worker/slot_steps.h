/*-------------------------------------------------------------------------
 *
 * slot_steps.h
 *		Each slot's work in the worker and the steps every recipe takes
 *		with it (slot_steps.c); the types by which the recipes above hand
 *		their handlers down (zkl_event_route) and the pass's multi plugs
 *		its sends in (zkl_step_hooks).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ZKLOCK_SLOT_STEPS_H
#define ZKLOCK_SLOT_STEPS_H

#include "utils/hsearch.h"

#include "shared/shmem.h"
#include "worker/zk_events.h"

/* Where the worker is with one slot; private to the worker. */
typedef enum zkl_phase
{
	ZKL_PH_IDLE = 0,			/* nothing in flight */
	ZKL_PH_CREATING,			/* create + listing sent */
	ZKL_PH_RECOVERING,			/* create outcome unknown; searching by uuid */
	ZKL_PH_LISTING,				/* node known, listing sent */
	ZKL_PH_WATCHING,			/* waiting for the predecessor to go */
	ZKL_PH_HELD,
	ZKL_PH_INSPECTING,			/* not a lock (zkl_slot_op): requests in
								 * flight */
	ZKL_PH_DELETING,
	ZKL_PH_LEASING,				/* semaphore: a lease request in flight */
	ZKL_PH_LEASE_WAITING,		/* semaphore: leases/ full and watched */
	ZKL_PH_UNLOCKING,			/* semaphore: its mutex being given up */
	ZKL_PH_PUBLISHED,			/* a backend's wait node exists */
	ZKL_PH_CHECKING,			/* the directory's ACL being read, before the
								 * create (undeletable.c) */
	ZKL_PH_STRANDED				/* given up, our node's delete refused: tried
								 * again with the heartbeat ticks */
} zkl_phase;

typedef struct zkl_work
{
	uint32		opgen;			/* bumped when the slot's work restarts */
	zkl_phase	phase;
	bool		retry;			/* last request hit a connection loss */
	bool		pending;		/* in the worker's to-do list */
	bool		pred_was_last;	/* the predecessor was the only node we wait
								 * for */
	bool		numbers_repeat; /* the last decision saw equal numbers, or
								 * ours at the counter's top */
	bool		equal_logged;	/* the equal numbers were logged */
	bool		revoke_seen;	/* our waiting node carries the revocation
								 * message: acted on at the grant */
	bool		waited;			/* watched a predecessor since the create */
	bool		handoff;		/* the predecessor went; not yet granted */
	bool		watched_here;	/* a waiter of this cluster watches our node:
								 * its release looks for waiters to hand the
								 * lock to (a hint, lock_recipe.c) */
	uint32		own_watch_gen;	/* opgen for which our node's watch is set */
	int			parent_attempts;
	bool		lease_unsure;	/* semaphore: our lease may exist unseen */
	bool		lease_watched;	/* semaphore: the last listing set a watch */
	int64		lease_czxid;	/* semaphore: our lease's, 0 if unknown */
	int64		granted_mono;	/* the grant, on zkl_now()'s clock (clock.h):
								 * what zklock.max_hold_time counts from */
	int			fail_rc;		/* failure to report once our node is deleted */
	char	   *pred;			/* the node watched ahead, in full, whatever
								 * its length (in cxt; replaced by the next
								 * one) */
	int64		pred_owner;		/* the predecessor's session, once watched, if
								 * it is a peer's node */
	/* A peer's write ahead of us went: did it leave a read behind us? */
	int64		downgrade_owner;	/* that write's session, 0 if none */
	int64		downgrade_pzxid;	/* the first listing after it: pzxid */
	bool		downgrade_read; /* the read nodes behind us were read */
	int			nlisting;		/* that listing, while they are read */
	char	  **listing;
	int			ncandidates;	/* of it, the read nodes behind us */
	int			next_candidate;
	char	  **candidates;
	int			nheld_behind;	/* of them, the downgrades: they hold */
	char	  **held_behind;	/* listing, candidates and these in cxt */
	char		mapped_node[ZKL_MAX_NODE_LEN];	/* our node in slot_steps.c's
												 * map */
	struct zkl_inspection *inspection;	/* ZKL_PH_INSPECTING only, in cxt */
	char	   *published;		/* ZKL_OP_PUBLISH: the data being written, in
								 * cxt */

	/*
	 * What the work keeps beyond a pass ("zklock slot work", a child of
	 * TopMemoryContext, made by zkl_work_context when first asked for):
	 * deleted, all of it at once, when the work ends (zkl_end_work).  NULL
	 * while there is none.
	 */
	MemoryContext cxt;
} zkl_work;

extern zkl_work *zkl_works;

/*
 * The nodes of this cluster's slots, by name: a waiter whose predecessor
 * goes learns at once whether it was one of ours, without a scan of the
 * slots.  An entry lives from the moment the worker learns the node's name
 * until the slot's work ends (zkl_end_work).
 */
typedef struct zkl_node_entry
{
	char		node[ZKL_MAX_NODE_LEN];
	int			slotno;
} zkl_node_entry;

extern HTAB *zkl_node_map;

/* Slots with something to do once the session is usable (zkl_run_pending). */
extern int *zkl_pending;
extern int	zkl_npending;

/*
 * How a contender's create, a node's delete and a listing's news of its
 * directory reach the pass's multi (write_batch.c, which fills these in
 * zkl_batch_init).  Two ways send a write, each honest: alone and at once,
 * which is what a step does when a hook is NULL or declines (false), and
 * in one multi with the others ready in the same pass, which the batch
 * gathers and sends after the pass.  The batch sends alone again, through
 * the recipe, whatever a multi cannot carry, so it stands above the
 * recipe; these pointers are where it plugs in below.
 */
typedef struct zkl_step_hooks
{
	bool		(*take_create) (int slotno, zkl_slot *slot, const char *prefix);
	bool		(*take_delete) (int slotno, zkl_slot *slot, const char *path);
	/* a listing's Stat of a lock directory: its data */
	void		(*note_dir) (const char *dir, int32 version, int32 data_len);
} zkl_step_hooks;

extern zkl_step_hooks zkl_hooks;

/* Any phase in which our node exists and is watched (LISTING, WATCHING, HELD). */
#define ZKL_PH_OWN_NODE		(-1)

typedef void (*zkl_event_handler) (int slotno, zkl_slot *slot, zkl_event *ev, bool wanted);

/*
 * Which event a recipe handles in which phase, and how (dispatch.c routes
 * by these tables; each ends with a NULL handler).  A route for a watch
 * drops the watch's session events (connection state, not a change of the
 * node).
 */
typedef struct zkl_event_route
{
	zkl_event_kind kind;
	int			phase;
	bool		watch;
	zkl_event_handler handler;
} zkl_event_route;

extern void zkl_steps_init(void);
extern MemoryContext zkl_work_context(zkl_work *work);
extern const void *zkl_ctx(zkl_event_kind kind, int slotno);
extern void zkl_mark_pending(int slotno);
extern bool zkl_work_pending(void);
extern void zkl_remember_node(int slotno, const char *node);
extern char *zkl_child_path(zkl_slot *slot, const char *child);
extern struct ACL_vector *zkl_acl(void);
extern void zkl_check_sent(int slotno, int rc);
extern bool zkl_sent_alone(int slotno, int rc);
extern void zkl_send_sync(int slotno, const char *path);
extern void zkl_end_work(zkl_work *work);
extern void zkl_free_slot(int slotno);
extern bool zkl_owns_node(const zkl_slot *slot);
extern void zkl_fail_slot(int slotno, int rc);
extern bool zkl_mark_lost(int slotno, const char *cause);
extern bool zkl_mark_lost_as(int slotno, const char *cause, bool stranded);
extern bool zkl_lease_pending(const zkl_slot *slot);
extern char *zkl_leases_dir(const zkl_slot *slot);
extern char *zkl_lease_path(const zkl_slot *slot);
extern void zkl_list_leases(int slotno, zkl_slot *slot, bool watch);
extern void zkl_take_away(int slotno, zkl_slot *slot, zkl_take_reason reason);
extern void zkl_revocation_asked(int slotno, zkl_slot *slot);
extern void zkl_watch_own_node(int slotno, zkl_slot *slot);
extern void zkl_grant(int slotno, zkl_slot *slot);
extern void zkl_requeue(int slotno, zkl_slot *slot);
extern void zkl_send_delete(int slotno, zkl_slot *slot);
extern bool zkl_session_trouble(int rc);
extern bool zkl_connection_trouble(int slotno, int rc);
extern void zkl_request_failed(int slotno, int rc);
extern bool zkl_own_node_watched(const zkl_work *work);
extern void zkl_own_node_gone(int slotno, zkl_slot *slot, bool wanted);
extern bool zkl_sibling_node(zkl_slot *slot, char *out);
extern void zkl_give_up_busy(int slotno, zkl_slot *slot);
extern void zkl_set_behind(zkl_slot *slot);
extern void zkl_downgrade_forget_listing(zkl_work *work);

#endif							/* ZKLOCK_SLOT_STEPS_H */
