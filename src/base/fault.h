#pragma once

#include "config.h"

#include <stdbool.h>

/* Fault injection, for tests only: built in by ./configure
 * --enable-fault-injection, never by default. Each tern_fault_point(NAME)
 * marks a stage of a command (create, start, exec, delete, checkpoint,
 * restore, and the container's init): there tern can be made to stop dead,
 * as if the OOM killer or an impatient caller had killed it, so that a test
 * can check what such a death leaves behind.
 *
 *   TERN_FAULT_TRACE=FILE    append "PID NAME" for every point passed
 *   TERN_FAULT_KILL_AT=NAME  SIGKILL the process that reaches NAME first
 *   TERN_FAULT_FAIL=NAME     tern_fault_fails(NAME) is true: a step that
 *                            succeeded is taken as failed, for a failure
 *                            whose timing a test cannot arrange for real
 *
 * In a default build a point is nothing at all and no step ever fails. */

#ifdef TERN_FAULT_INJECTION
void tern_fault_point(const char *name);
/* The trace file, or -1: kept open (close-on-exec) while the init closes
 * the runtime's fds, so that its last points are traced too. */
int tern_fault_trace_fd(void);
bool tern_fault_fails(const char *name);
#else
#define tern_fault_point(name) ((void)0)
#define tern_fault_trace_fd()  (-1)
#define tern_fault_fails(name) ((void)(name), false)
#endif
