// The run protocol of a node agent: one JSON document in on stdin, one JSON document out on stdout and exit 0.
// A failure is a message on stderr and a non-zero exit, and the node refunds the run. Each agent directory is a
// bundle of its own (it is uploaded and installed alone), so this file is copied into every agent of agents/;
// test/agents/manifests.test.ts keeps the copies identical.
import { readFileSync } from 'node:fs';

/** Stdout is capped at 1 MiB by the node; an agent keeps its answer well below that. */
export const MAX_OUTPUT_BYTES = 768 * 1024;

/** The caller's input is wrong: exit 2, and running again with the same input fails the same way. */
export class InputError extends Error {}

/**
 * The agent did part of its work but not all it is paid for (a review whose analyzer is missing): exit 3, so the
 * run fails and is refunded, with what was done on stderr (the end of which the run's failure message carries).
 */
export class IncompleteRunError extends Error {
  constructor(message, done) {
    super(message);
    this.done = done;
  }
}

/** Reads the run document from stdin: `{run_id, agent_id, user_id, tier, input}`, `input` defaulting to `{}`. */
export async function readRun() {
  let text = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin) text += chunk;
  let run;
  try {
    run = JSON.parse(text);
  } catch {
    throw new InputError('stdin: expected one JSON document describing the run');
  }
  if (run === null || typeof run !== 'object' || Array.isArray(run)) throw new InputError('stdin: the run must be a JSON object');
  const input = run.input ?? {};
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw new InputError('input: must be a JSON object');
  return { ...run, input };
}

/** Refuses a field the manifest's input_schema does not declare, as `additionalProperties: false` does. */
export function refuseUnknownFields(input, allowed) {
  for (const key of Object.keys(input)) {
    if (!allowed.includes(key)) throw new InputError(`input: unknown field "${key}" (this agent takes: ${allowed.join(', ')})`);
  }
}

function ownManifest() {
  try {
    return JSON.parse(readFileSync(new URL('./agent.json', import.meta.url), 'utf8'));
  } catch {
    return {};
  }
}

/**
 * How long this run may take, in ms: what the node says (SWARM_TIMEOUT_SECONDS), else the `timeout_seconds` this
 * agent declares in its agent.json, else the node's former fixed 30 s. Work that can stop early (indexing) stops
 * well before it, so the answer is written in time.
 */
export function timeLimitMs() {
  const given = Number(process.env.SWARM_TIMEOUT_SECONDS);
  if (Number.isFinite(given) && given > 0) return given * 1000;
  const declared = ownManifest().timeout_seconds;
  return (Number.isFinite(declared) && declared > 0 ? declared : 30) * 1000;
}

/** The directory whose files the node uploads as the run's artifacts (SWARM_ARTIFACTS_DIR), or null: then write none. */
export function artifactsDir() {
  return process.env.SWARM_ARTIFACTS_DIR || null;
}

/** A secret the agent declares in agent.json (`secrets`), given by the node as a variable of its name; null when not set. */
export function declaredSecret(name) {
  const value = process.env[name];
  return value === undefined || value === '' ? null : value;
}

/**
 * Runs `work(input, run)` and prints what it returns as the run's output. Errors go to stderr only, so stdout holds
 * either one whole JSON document or nothing, and the exit code says which.
 */
export async function runAgent(agentId, work) {
  try {
    const run = await readRun();
    const text = `${JSON.stringify(await work(run.input, run))}\n`;
    if (Buffer.byteLength(text) > MAX_OUTPUT_BYTES) throw new Error(`output of ${Buffer.byteLength(text)} bytes is over the agent's own cap`);
    await new Promise((resolve, reject) => process.stdout.write(text, (error) => (error ? reject(error) : resolve())));
  } catch (error) {
    if (error instanceof IncompleteRunError) {
      process.stderr.write(`${error.done}\n${agentId}: ${error.message}\n`);
      process.exitCode = 3;
      return;
    }
    const detail = error instanceof InputError || !(error instanceof Error) ? String(error.message ?? error) : error.stack;
    process.stderr.write(`${agentId}: ${detail}\n`);
    process.exitCode = error instanceof InputError ? 2 : 1;
  }
}
