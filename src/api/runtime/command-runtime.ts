// The reference service's real runtime (DECISIONS.md "Execute"): one process per run, given the run as JSON on
// stdin, answering one JSON document on stdout. An argument array, never a shell, so no agent id or e-mail can
// become shell syntax.
import { execa } from 'execa';
import type { AgentRuntime } from '../context.js';
import { AgentRunError } from './agent-run-error.js';

/** An agent's answer is stored with its run and returned to the user; larger output fails the run. */
export const MAX_AGENT_OUTPUT_BYTES = 1024 * 1024;
const MAX_AGENT_STDERR_BYTES = 256 * 1024;
const STDERR_TAIL_CHARS = 2000;
/** After the deadline, SIGTERM; SIGKILL when the agent is still there this much later. */
const KILL_GRACE_MS = 2000;

export function createCommandRuntime(command: readonly string[], env: NodeJS.ProcessEnv): AgentRuntime {
  const [file, ...args] = command;
  if (file === undefined || file === '') throw new TypeError('the agent command is empty');
  const agentEnv = agentEnvironment(env);

  return {
    async run(input, signal) {
      const result = await execa(file, args, {
        input: JSON.stringify({ run_id: input.run_id, agent_id: input.agent_id, user_id: input.user_id }),
        cancelSignal: signal,
        forceKillAfterDelay: KILL_GRACE_MS,
        maxBuffer: { stdout: MAX_AGENT_OUTPUT_BYTES, stderr: MAX_AGENT_STDERR_BYTES },
        env: agentEnv,
        extendEnv: false,
        reject: false,
      });
      const stderrTail = String(result.stderr ?? '').slice(-STDERR_TAIL_CHARS) || undefined;
      if (result.isCanceled) throw new AgentRunError('aborted', 'the agent was stopped', stderrTail);
      if (result.isMaxBuffer) {
        throw new AgentRunError('bad_output', `the agent wrote more than ${MAX_AGENT_OUTPUT_BYTES} bytes`, stderrTail);
      }
      if (result.failed) {
        if (result.exitCode !== undefined) throw new AgentRunError('exit', `the agent exited with code ${result.exitCode}`, stderrTail);
        if (result.signal !== undefined) throw new AgentRunError('exit', `the agent was killed by ${result.signal}`, stderrTail);
        throw new AgentRunError('spawn', 'the agent command could not be started', result.shortMessage);
      }
      try {
        return JSON.parse(String(result.stdout)) as unknown;
      } catch {
        throw new AgentRunError('bad_output', 'the agent did not answer with a JSON document on stdout', stderrTail);
      }
    },
  };
}

/** The service's own settings (SVC_JWT_SECRET, SVC_WEBHOOK_SECRET, …) are not the agent's business. */
export function agentEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('SVC_')));
}
