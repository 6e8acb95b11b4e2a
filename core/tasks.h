// tasks.h - asyncio tasks as read from a snapshot's target: every task of every event loop,
// its name, state and loop's thread, the coroutine stack of a suspended task (its chain of
// awaited coroutines, generators and async generators, innermost first) or the thread's
// frames for the running one, and who awaits whom (a task, a future, the tasks of a gather or a TaskGroup). Model
// layer: reads the target through values.c, locals.c and the frame walker; the formatters
// (format_tasks.c) print what pyu_tasks_collect() returns.
#ifndef PYU_TASKS_H
#define PYU_TASKS_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "stacks.h"
#include "target.h"

// Bounds on what one collection reads.
#define PYU_TASKS_MAX 100000        // tasks per snapshot (a longer list is cut, with an error)
// Links of one await chain followed (coroutines, generators, async generators and their
// awaitables): far beyond what a real program reaches (each link is a Python frame, whose
// number the recursion limit bounds when the chain is made).
#define PYU_AWAIT_CHAIN_MAX 1000000
// Frames of one task's coroutine stack kept: the innermost; the outer ones are counted in
// pyu_task.frames_omitted.
#define PYU_TASK_FRAMES_MAX 100000
#define PYU_TASK_AWAITS_MAX 10000   // tasks of one gather or TaskGroup

enum pyu_task_state {
	PYU_TASK_PENDING,   // suspended, waiting
	PYU_TASK_RUNNING,   // the current task of its loop
	PYU_TASK_DONE,
	PYU_TASK_CANCELLED,
};

// "pending", "running", "done" or "cancelled". Cannot fail.
const char *pyu_task_state_name(enum pyu_task_state state);

enum pyu_await_via {
	PYU_VIA_DIRECT,     // the task's own _fut_waiter
	PYU_VIA_GATHER,     // a child of the asyncio.gather() future it waits on
	PYU_VIA_TASKGROUP,  // a task of the TaskGroup whose __aexit__ it waits in
};

// "await", "gather" or "taskgroup". Cannot fail.
const char *pyu_await_via_name(enum pyu_await_via via);

// One thing a task waits on.
struct pyu_await {
	uint64_t address;        // the task or future
	int32_t task;            // index in pyu_tasks.items when it is a known task, else -1
	enum pyu_await_via via;
	char *type;              // a future's type name (owned); NULL for tasks
};

struct pyu_task {
	uint64_t address;
	char *name;              // owned; NULL when unknown (3.7 tasks have none)
	enum pyu_task_state state;
	uint64_t loop;           // its event loop; 0 when unreadable
	int32_t thread;          // index in the snapshot's threads of the loop's thread; -1 none
	struct pyu_frame_info *frames; // innermost first; code indexes into the snapshot's codes
	uint32_t frame_count;
	uint32_t frames_omitted; // outermost frames of a longer chain left out
	struct pyu_await *awaiting;
	uint32_t awaiting_count;
	uint32_t *awaited_by;    // indexes of the tasks that wait on this one
	uint32_t awaited_by_count;
	char *error;             // owned: why the task could not be read (then only @address
	                         // is meaningful), NULL when it could
};

struct pyu_tasks {
	struct pyu_task *items;
	uint32_t count;
	char **errors;           // problems not tied to one task (owned strings)
	uint32_t error_count;
	char **notes;            // where the task lists were found (owned strings)
	uint32_t note_count;
};

// Reads every asyncio task of the target of @s (all interpreters, all threads). Frames of task
// stacks are added to the snapshot's code objects. Fails only for a version without asyncio
// layouts (PYU_ERR_UNSUPPORTED: before 3.7), no value reader, or out of memory; unreadable
// tasks become entries with an error, unreadable lists errors of the result. On error, *ret
// is unchanged.
struct pyu_error *pyu_tasks_collect(struct pyu_stacks *s, struct pyu_tasks **ret);
void pyu_tasks_destroy(struct pyu_tasks *ts);

// Walks a CPython 3.14+ list of struct llist_node {next, prev} whose head is at @head,
// calling @visit with each node's address (the head left out) until it returns false. At most
// @max nodes. Fails with PYU_ERR_CORRUPT for a NULL link, more than @max nodes or a loop that
// does not come back to the head (Brent's algorithm: no memory per node), with the read error
// for an unreadable link; the nodes before were visited.
struct pyu_error *pyu_llist_foreach(struct pyu_target *t, uint64_t head, uint32_t max,
				    bool (*visit)(void *arg, uint64_t node), void *arg);

#endif
