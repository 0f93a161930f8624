// Why an agent run failed, as the runtimes report it; the execute flow turns it into a failed, refunded run.

export type AgentRunFailure = 'timeout' | 'aborted' | 'exit' | 'bad_output' | 'spawn';

/** Why a run failed. `message` may reach the user; `detail` (the agent's stderr tail) is for the operator's log. */
export class AgentRunError extends Error {
  constructor(
    readonly reason: AgentRunFailure,
    message: string,
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'AgentRunError';
  }
}
