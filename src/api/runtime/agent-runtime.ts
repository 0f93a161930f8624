// The agent runtime (DECISIONS.md "Execute"): the reference service runs a configured command per run, or answers
// with a labelled sandbox result. Either way every run is bounded by a deadline, so a hung agent cannot hold a
// request (and the money it was charged) forever.
import type { AgentRunInput, AgentRuntime } from '../context.js';
import { AgentRunError } from './agent-run-error.js';
import { createCommandRuntime } from './command-runtime.js';
import { createSandboxRuntime } from './sandbox-runtime.js';

export { AgentRunError, type AgentRunFailure } from './agent-run-error.js';

export interface AgentRuntimeOptions {
  /** The program and its arguments, run without a shell; without one the sandbox runtime answers. */
  command?: readonly string[];
  timeoutMs: number;
  /** The service's environment; the agent gets it without the service's own SVC_* settings and secrets. */
  env?: NodeJS.ProcessEnv;
  /** What measures the timeout; a test passes one it fires itself once the agent has started. */
  deadlineTimer?: DeadlineTimer;
}

/** Calls `expire` after `ms` and returns what cancels that. */
export type DeadlineTimer = (expire: () => void, ms: number) => () => void;

const realTimer: DeadlineTimer = (expire, ms) => {
  const timer = setTimeout(expire, ms);
  return () => clearTimeout(timer);
};

export function createAgentRuntime(options: AgentRuntimeOptions): AgentRuntime {
  const runtime =
    options.command === undefined || options.command.length === 0
      ? createSandboxRuntime()
      : createCommandRuntime(options.command, options.env ?? process.env);
  return withDeadline(runtime, options.timeoutMs, options.deadlineTimer);
}

/**
 * Aborts the run's signal after `timeoutMs` or when the caller's signal aborts, and settles at that moment even
 * if the runtime ignores its signal: the caller can always finish (and refund) the run on time.
 */
export function withDeadline(runtime: AgentRuntime, timeoutMs: number, deadlineTimer: DeadlineTimer = realTimer): AgentRuntime {
  return {
    run(input: AgentRunInput, signal: AbortSignal): Promise<unknown> {
      return new Promise((resolve, reject) => {
        const controller = new AbortController();
        const onCallerAbort = (): void => controller.abort(new AgentRunError('aborted', 'the run was cancelled: the service is shutting down'));
        const cancelDeadline = deadlineTimer(
          () => controller.abort(new AgentRunError('timeout', `the agent did not answer within ${formatSeconds(timeoutMs)}`)),
          timeoutMs,
        );
        const cleanUp = (): void => {
          cancelDeadline();
          signal.removeEventListener('abort', onCallerAbort);
        };
        controller.signal.addEventListener(
          'abort',
          () => {
            cleanUp();
            reject(controller.signal.reason);
          },
          { once: true },
        );
        if (signal.aborted) onCallerAbort();
        else signal.addEventListener('abort', onCallerAbort, { once: true });
        if (controller.signal.aborted) return;

        let work: Promise<unknown>;
        try {
          work = runtime.run(input, controller.signal);
        } catch (error) {
          work = Promise.reject(error);
        }
        work.then(
          (output) => {
            cleanUp();
            resolve(output);
          },
          (error: unknown) => {
            cleanUp();
            reject(controller.signal.aborted ? controller.signal.reason : error);
          },
        );
      });
    },
  };
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
