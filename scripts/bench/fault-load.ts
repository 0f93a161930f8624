// The load generator of scripts/bench/faults.ts, in a process of its own (forked with IPC): the executes go out on
// their own event loop, whatever the faults do to svc-api and the nodes. Each execute carries its own
// Idempotency-Key and is sent again with it while the service cannot be reached or answers 5xx (an outage), so no
// run is started twice and none is lost between two instances; what each ended in is counted by status.
import { randomUUID } from 'node:crypto';

export interface LoadCommand {
  op: 'load';
  /** Said again in the answer: commands overlap. */
  id: number;
  /** Executes go to these in turn. */
  origins: string[];
  token: string;
  email: string;
  /** The agents the runs ask for, in turn. */
  agents: string[];
  inputs: Record<string, Record<string, string>>;
  perSecond: number;
}

/** Sends these executes at once, answered when each is accepted (or given up). */
export interface ExecuteCommand {
  op: 'execute';
  id: number;
  origin: string;
  token: string;
  email: string;
  agents: string[];
  inputs: Record<string, Record<string, string>>;
}

export interface StopCommand {
  op: 'stop';
}

export interface LoadAnswer {
  /** The command's. */
  id: number;
  /** Run ids of the executes accepted (200 or 202). */
  runIds: string[];
  /** Final status of each execute → how many (0: never answered within the retry bound). */
  statuses: Record<string, number>;
  /** Run id → when its key was first offered (epoch ms): a run's latency counts the outage it waited out. */
  offeredAt: Record<string, number>;
}

/** How long an execute is sent again while the service is away: past any outage a scenario makes. */
const RETRY_FOR_MS = 60_000;
const RETRY_EVERY_MS = 250;

async function executeOnce(
  origin: string,
  command: { token: string; email: string; inputs: Record<string, Record<string, string>> },
  agent: string,
  answer: LoadAnswer,
): Promise<string | undefined> {
  const key = randomUUID();
  const body = JSON.stringify({ user_id: command.email, agent_id: agent, input: command.inputs[agent] ?? {} });
  const offeredAt = Date.now();
  const giveUpAt = offeredAt + RETRY_FOR_MS;
  for (;;) {
    let status = 0;
    let runId: string | undefined;
    try {
      const response = await fetch(`${origin}/v1/swarm/execute`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${command.token}`,
          'idempotency-key': key,
          prefer: 'respond-async',
        },
        body,
        signal: AbortSignal.timeout(15_000),
      });
      status = response.status;
      const parsed = (await response.json().catch(() => ({}))) as { run_id?: string };
      runId = parsed.run_id;
    } catch {
      status = 0;
    }
    const retry = status === 0 || status >= 500;
    if (!retry || Date.now() > giveUpAt) {
      answer.statuses[String(status)] = (answer.statuses[String(status)] ?? 0) + 1;
      if ((status === 200 || status === 202) && runId !== undefined) {
        answer.runIds.push(runId);
        answer.offeredAt[runId] = offeredAt;
        return runId;
      }
      return undefined;
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_EVERY_MS));
  }
}

let stopLoad: (() => void) | undefined;

async function load(command: LoadCommand): Promise<LoadAnswer> {
  const answer: LoadAnswer = { id: command.id, runIds: [], statuses: {}, offeredAt: {} };
  const inFlight = new Set<Promise<unknown>>();
  let stopped = false;
  stopLoad = () => {
    stopped = true;
  };
  for (let sent = 0; !stopped; sent += 1) {
    const origin = command.origins[sent % command.origins.length]!;
    const agent = command.agents[sent % command.agents.length]!;
    const one = executeOnce(origin, command, agent, answer);
    inFlight.add(one);
    void one.finally(() => inFlight.delete(one));
    await new Promise((resolve) => setTimeout(resolve, 1000 / command.perSecond));
  }
  await Promise.all(inFlight);
  return answer;
}

process.on('message', (message: LoadCommand | ExecuteCommand | StopCommand) => {
  if (message.op === 'stop') {
    stopLoad?.();
    return;
  }
  if (message.op === 'load') {
    void load(message).then((answer) => process.send!(answer));
    return;
  }
  const answer: LoadAnswer = { id: message.id, runIds: [], statuses: {}, offeredAt: {} };
  void Promise.all(message.agents.map((agent) => executeOnce(message.origin, message, agent, answer))).then((ids) =>
    process.send!({ ...answer, runIds: ids.map((id) => id ?? '') }),
  );
});
