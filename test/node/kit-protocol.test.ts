// The node's side of the kit's channel (src/node/runner/kit-channel.ts, docs/api.md "The kit's channel") over a real
// unix socket, one end the node's and the other written to as a hostile agent would: a line past the bound, text
// that is no JSON, a call without a protocol or of a newer one, a burst past the rate (on a clock that stands still),
// a second end. Each gets its refusal by name, in order, and the channel goes on; nothing refused reaches the run.
import { once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KIT_CALL_BURST, KIT_CALLS_PER_SECOND, MAX_KIT_LINE_BYTES } from '../../src/contract/kit-protocol.js';
import { serveKitChannel, type KitChannel, type KitEvent } from '../../src/node/runner/kit-channel.js';
import { StoppedClock } from '../helpers/clock.js';
import { tempDir } from '../helpers/temp.js';

const SECRET = 'sk_live_kitprotocol_0042';

describe("the kit channel's rules, on a real socket", () => {
  let server: Server;
  let path: string;
  const accepted: Socket[] = [];

  beforeAll(async () => {
    path = join(tempDir('kit-protocol-'), 'kit.sock');
    server = createServer((socket) => accepted.push(socket));
    server.listen(path);
    await once(server, 'listening');
  });
  const agents: Socket[] = [];
  afterAll(() => {
    for (const socket of agents) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** The node's side on one end, and the agent's end: it writes lines and reads the answers as they come. */
  async function channel(clock = new StoppedClock(0)) {
    const agent = connect(path);
    agents.push(agent);
    await once(agent, 'connect');
    await new Promise<void>((resolve) => {
      const wait = setInterval(() => accepted.length > 0 && (clearInterval(wait), resolve()), 5);
    });
    const events: KitEvent[] = [];
    const served: KitChannel = serveKitChannel(
      accepted.shift()!,
      { run_id: 'run-1', agent_id: 'agent_x', attempt: 3, maxOutputBytes: 1024 },
      (event) => events.push(event),
      { wall: clock, monotonic: clock },
    );
    let buffer = '';
    const answers: Array<Record<string, unknown>> = [];
    agent.setEncoding('utf8');
    agent.on('data', (text: string) => {
      buffer += text;
      for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
        answers.push(JSON.parse(buffer.slice(0, newline)) as Record<string, unknown>);
        buffer = buffer.slice(newline + 1);
      }
    });
    const answered = async (count: number) => {
      while (answers.length < count) await once(agent, 'data');
      return answers.slice(0, count);
    };
    return { agent, served, events, answers, answered, clock };
  }

  it('refuses by name, in order, and goes on: a line past the bound, no JSON, no protocol, a newer protocol, an unknown op', async () => {
    const { agent, answered, events, served } = await channel();
    agent.write(`${'x'.repeat(MAX_KIT_LINE_BYTES + 10)}\n`);
    agent.write('not json\n');
    agent.write(`${JSON.stringify({ id: 3, op: 'hello' })}\n`);
    agent.write(`${JSON.stringify({ v: 2, id: 4, op: 'event', type: 'progress', data: {} })}\n`);
    agent.write(`${JSON.stringify({ v: 1, id: 5, op: 'thread.get' })}\n`);
    // A name that is a secret: refused without being quoted.
    agent.write(`${JSON.stringify({ v: 1, id: 6, op: 'event', type: 'custom', name: `${SECRET} x`, data: {} })}\n`);
    agent.write(`${JSON.stringify({ v: 1, id: 7, op: 'hello' })}\n`);
    const answers = await answered(7);
    expect(answers.map((answer) => [answer.id, (answer.error as { code?: string } | undefined)?.code ?? 'ok'])).toEqual([
      [null, 'kit_message_too_large'],
      [null, 'kit_call_invalid'],
      [3, 'kit_call_invalid'],
      [4, 'kit_protocol_unsupported'],
      [5, 'kit_op_unknown'],
      [6, 'kit_call_invalid'],
      [7, 'ok'],
    ]);
    expect(JSON.stringify(answers)).not.toContain(SECRET);
    expect(answers[6]!.ok).toMatchObject({ protocol: 1, run: { run_id: 'run-1', agent_id: 'agent_x', attempt: 3 } });
    for (const answer of answers.slice(0, 6)) expect((answer.error as { remedy: string }).remedy).not.toBe('');
    expect(events).toEqual([]);
    agent.end();
    await served.done;
    expect(served.verdict()).toBeUndefined();
  });

  it('takes a burst, then the rate, on its own clock; the end is reported once, whatever the rate', async () => {
    const { agent, answered, events, served, clock } = await channel();
    const calls = KIT_CALL_BURST + 10;
    for (let id = 1; id <= calls; id += 1) agent.write(`${JSON.stringify({ v: 1, id, op: 'event', type: 'progress', data: { id } })}\n`);
    const burst = await answered(calls);
    expect(burst.filter((answer) => answer.error === undefined)).toHaveLength(KIT_CALL_BURST);
    expect(burst.slice(KIT_CALL_BURST).map((answer) => (answer.error as { code: string }).code)).toEqual(
      Array.from({ length: 10 }, () => 'kit_rate_limited'),
    );
    expect(events.map((event) => (event.data as { id: number }).id)).toEqual(Array.from({ length: KIT_CALL_BURST }, (_, i) => i + 1));
    // A second later: the rate's calls, and not one more.
    clock.advance(1000);
    for (let id = 1; id <= KIT_CALLS_PER_SECOND + 1; id += 1) agent.write(`${JSON.stringify({ v: 1, id, op: 'hello' })}\n`);
    agent.write(`${JSON.stringify({ v: 1, id: 'end', op: 'result', output: { a: 1 }, partial: true })}\n`);
    agent.write(`${JSON.stringify({ v: 1, id: 'again', op: 'fail', message: 'no' })}\n`);
    const all = await answered(calls + KIT_CALLS_PER_SECOND + 3);
    const after = all.slice(calls);
    expect(after.filter((answer) => answer.error === undefined)).toHaveLength(KIT_CALLS_PER_SECOND + 1);
    expect((after[KIT_CALLS_PER_SECOND]!.error as { code: string }).code).toBe('kit_rate_limited');
    expect(after.at(-2)).toMatchObject({ id: 'end', ok: {} });
    expect(after.at(-1)).toMatchObject({ id: 'again', error: { code: 'kit_result_reported' } });
    agent.end();
    await served.done;
    expect(served.verdict()).toEqual({ kind: 'result', output: { a: 1, partial: true }, partial: true });
  });

  it('refuses a result over the output limit and a partial one that is not an object, and takes a failure cut to its bound', async () => {
    const { agent, answered, served } = await channel();
    agent.write(`${JSON.stringify({ v: 1, id: 1, op: 'result', output: 'y'.repeat(2048) })}\n`);
    agent.write(`${JSON.stringify({ v: 1, id: 2, op: 'result', output: [1], partial: true })}\n`);
    agent.write(`${JSON.stringify({ v: 1, id: 3, op: 'fail', message: 'z'.repeat(5000) })}\n`);
    const answers = await answered(3);
    expect(answers.map((answer) => (answer.error as { code?: string } | undefined)?.code ?? 'ok')).toEqual([
      'kit_message_too_large',
      'kit_call_invalid',
      'ok',
    ]);
    agent.end();
    await served.done;
    const verdict = served.verdict();
    expect(verdict).toMatchObject({ kind: 'failure', error: 'declared_failure' });
    expect((verdict as { message: string }).message).toHaveLength(2000);
  });
});
