// The agent runtime (DECISIONS.md "Execute"). STUB: the execute work fills this in.
import type { AgentRuntime } from '../context.js';

export function createAgentRuntime(_options: { command?: string[]; timeoutMs: number }): AgentRuntime {
  return { run: async (input) => ({ sandbox: true, agent_id: input.agent_id }) };
}
