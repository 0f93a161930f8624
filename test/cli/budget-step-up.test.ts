// swarm-node budget and register --daily-cap with a sign-in older than 15 minutes (docs/api.md "Budgets", "Step-up"):
// the built binary against the real svc-api. Lowering a cap goes through; raising or removing one is exit 4 off a
// terminal with the login that renews it, and nothing changes; in a terminal the sign-in is renewed by mail and the
// raise retried.
import { describe, expect, it } from 'vitest';
import { asPrinted, swarmNode } from '../helpers/cli.js';
import { MovableClock } from '../helpers/clock.js';
import { nextMailTo, signInCodeOf } from '../helpers/mailbox.js';
import { spawnSwarmNodePty } from '../helpers/pty.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { signedInNode } from './fixtures.js';

const OPS = 'agent_ops_monitor_004';
const SIXTEEN_MINUTES = 16 * 60 * 1000;

/** The sign-in renewed in the terminal a step-up command asked in: the code mailed for its reference, typed. */
async function renewSignIn(session: ReturnType<typeof spawnSwarmNodePty>, email: string): Promise<void> {
  await session.waitFor('raises a spending limit');
  const sent = await session.waitFor(/Sent a sign-in code to \S+ \(reference ([0-9a-f]{8})\)/);
  const reference = /reference ([0-9a-f]{8})/.exec(sent)![1]!;
  const code = signInCodeOf(await nextMailTo(email, { match: (mail) => mail.text.includes(`reference ${reference}`) }));
  await session.waitFor(`Code from the mail to ${email}:`);
  await session.typeLine(code);
}

describe('swarm-node budget with a sign-in older than 15 minutes', () => {
  const clock = new MovableClock();
  const service = useSvcApi({ clock });

  it('lowers a cap; off a terminal a raise or a removal is exit 4 with the login that renews it; in a terminal it renews', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'budget-late' });
    expect((await swarmNode(['budget', 'set', '--daily', '5'], { env: node.env })).exitCode).toBe(0);
    expect((await swarmNode(['register', OPS, '--daily-cap', '1'], { env: node.env })).exitCode).toBe(0);
    clock.advance(SIXTEEN_MINUTES);
    try {
      const lowered = await swarmNode(['budget', 'set', '--daily', '3'], { env: node.env });
      expect(lowered.exitCode, lowered.stderr).toBe(0);
      const refusals = [
        await swarmNode(['--json', 'budget', 'set', '--daily', '50'], { env: node.env }),
        await swarmNode(['--json', 'budget', 'rm', '--daily'], { env: node.env }),
        await swarmNode(['--json', 'register', OPS, '--daily-cap', '2'], { env: node.env }),
        await swarmNode(['--json', 'register', OPS, '--daily-cap', 'none'], { env: node.env }),
      ];
      for (const refused of refusals) {
        expect(refused.exitCode, refused.stderr).toBe(4);
        expect(refused.json.error).toMatchObject({
          code: 'step_up_required',
          message: expect.stringContaining('raises a spending limit'),
          remedy: `Sign in again with the code mailed to you: ${asPrinted(node, `swarm-node login --email ${node.email}`)}; then retry.`,
        });
      }
      const listed = await swarmNode(['--json', 'budget', 'list'], { env: node.env });
      const caps = listed.json.budgets.map((budget: { agent_id: string | null; cap_cents: number }) => [budget.agent_id, budget.cap_cents]);
      expect(caps).toEqual([
        [null, 300],
        [OPS, 100],
      ]);

      const session = spawnSwarmNodePty(['budget', 'set', '--daily', '50'], node.env);
      try {
        await renewSignIn(session, node.email);
        await session.waitFor(/Daily cap on all agents: \$50\.00/);
        expect((await session.waitForExit()).exitCode).toBe(0);
      } finally {
        session.kill();
      }
    } finally {
      clock.advance(-SIXTEEN_MINUTES);
    }
  });

  it('register --every makes or changes a schedule only with a recent sign-in; removing it needs none', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'every-late' });
    const made = await swarmNode(['--json', 'register', OPS, '--every', '1h'], { env: node.env });
    expect(made.exitCode, made.stderr).toBe(0);
    const scheduleId = made.json.schedule_id as string;
    const intervalAtService = () =>
      (
        service.db.prepare('SELECT interval_seconds FROM schedules WHERE schedule_id = ?').get(scheduleId) as
          { interval_seconds: number } | undefined
      )?.interval_seconds;
    clock.advance(SIXTEEN_MINUTES);
    try {
      for (const args of [
        ['register', OPS, '--every', '5m'],
        ['register', 'agent_svc_skills_005', '--every', '1h', '--input', 'question=What is a node?'],
      ]) {
        const refused = await swarmNode(['--json', ...args], { env: node.env });
        expect(refused.exitCode, refused.stderr).toBe(4);
        expect(refused.json.error).toMatchObject({
          code: 'step_up_required',
          remedy: `Sign in again with the code mailed to you: ${asPrinted(node, `swarm-node login --email ${node.email}`)}; then retry.`,
        });
      }
      // Nothing changed, here or at the service.
      expect(intervalAtService()).toBe(3600);
      const listed = await swarmNode(['--json', 'list'], { env: node.env });
      expect(
        listed.json.registrations.map((r: { agent_id: string; every_seconds: number | null }) => [r.agent_id, r.every_seconds]),
      ).toEqual([[OPS, 3600]]);
      const removed = await swarmNode(['--json', 'register', OPS, '--every', 'none'], { env: node.env });
      expect(removed.exitCode, removed.stderr).toBe(0);
      expect(intervalAtService()).toBeUndefined();
    } finally {
      clock.advance(-SIXTEEN_MINUTES);
    }
  });

  it('register --every with an old sign-in renews it in its terminal, then makes the schedule', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'every-terminal' });
    clock.advance(SIXTEEN_MINUTES);
    const session = spawnSwarmNodePty(['register', OPS, '--every', '1h'], node.env);
    try {
      await session.waitFor('needs a sign-in within the last 15 minutes');
      const sent = await session.waitFor(/Sent a sign-in code to \S+ \(reference ([0-9a-f]{8})\)/);
      const reference = /reference ([0-9a-f]{8})/.exec(sent)![1]!;
      const code = signInCodeOf(await nextMailTo(node.email, { match: (mail) => mail.text.includes(`reference ${reference}`) }));
      await session.waitFor(`Code from the mail to ${node.email}:`);
      await session.typeLine(code);
      await session.waitFor(/Registered agent_ops_monitor_004 .*: every 1h, no daily cap\./);
      expect((await session.waitForExit()).exitCode).toBe(0);
    } finally {
      session.kill();
      clock.advance(-SIXTEEN_MINUTES);
    }
    expect(service.db.prepare('SELECT interval_seconds FROM schedules WHERE user_id = ?').all(node.email)).toEqual([
      { interval_seconds: 3600 },
    ]);
  });

  it('the wizard raising a daily cap renews the sign-in in its terminal, then registers', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'wizard-late' });
    expect((await swarmNode(['register', OPS, '--daily-cap', '1'], { env: node.env })).exitCode).toBe(0);
    clock.advance(SIXTEEN_MINUTES);
    const session = spawnSwarmNodePty(['wizard', '--agent', OPS, '--every', '1h', '--daily-cap', '2', '--yes'], node.env);
    try {
      await renewSignIn(session, node.email);
      await session.waitFor(/Updated agent_ops_monitor_004: every 1h, daily cap \$2\.00/);
      expect((await session.waitForExit()).exitCode).toBe(0);
    } finally {
      session.kill();
      clock.advance(-SIXTEEN_MINUTES);
    }
  });
});
