// DECISIONS.md "Execute": without a configured command the reference service answers every run itself, and
// says so in the output, so nobody mistakes a sandbox result for an agent's work.
import { findAgentSku } from '../../contract/agents.js';
import type { AgentRuntime } from '../context.js';

export function createSandboxRuntime(): AgentRuntime {
  return {
    async run(input) {
      const name = findAgentSku(input.agent_id)?.name ?? input.agent_id;
      return {
        sandbox: true,
        agent_id: input.agent_id,
        run_id: input.run_id,
        summary: `sandbox run of ${name}: no real agent was invoked`,
      };
    },
  };
}
