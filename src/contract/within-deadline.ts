// Synchronous work with an upper bound on its time: checking an input against a schema someone uploaded is bounded
// by what its author wrote (how many patterns, how many branches, references that fan out), not only by the input.
// node:vm's `timeout` stops the script it runs wherever it is, functions it calls included (V8's
// TerminateExecution), so the work is cut at the deadline instead of holding the event loop for as long as it takes.
import { createContext, Script } from 'node:vm';

/** Thrown when the work did not finish in time, or overflowed the stack (a schema that refers to itself forever). */
export class DeadlineExceeded extends Error {
  constructor(
    readonly reason: 'timeout' | 'stack',
    deadlineMs: number,
  ) {
    super(reason === 'timeout' ? `did not finish within ${deadlineMs} ms` : 'nests without end (the stack overflowed)');
  }
}

const context = createContext({ work: undefined as (() => unknown) | undefined });
const callWork = new Script('work()');

/** `work()`, stopped after `deadlineMs` of wall-clock time (DeadlineExceeded). About 40 µs of overhead a call. */
export function withinDeadline<T>(deadlineMs: number, work: () => T): T {
  context.work = work;
  try {
    return callWork.runInContext(context, { timeout: deadlineMs, breakOnSigint: false }) as T;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw new DeadlineExceeded('timeout', deadlineMs);
    if ((error as Error | undefined)?.name === 'RangeError' && /call stack/i.test((error as Error).message))
      throw new DeadlineExceeded('stack', deadlineMs);
    throw error;
  } finally {
    context.work = undefined;
  }
}
