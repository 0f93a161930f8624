// issue 8 §1, §4: `npm run demo` walks the whole funnel with the real binaries, narrates every step in order,
// exits 0, leaves no process and no scratch directory behind, and never prints a secret in full. Ctrl+C takes
// everything down too. The demo runs exactly as `npm run demo` runs it (node scripts/demo.mjs, on the built dist/).
import { execa } from 'execa';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/svc-api.js';

const DEMO = join(REPO_ROOT, 'scripts', 'demo.mjs');

const STEPS = [
  'Start the reference service',
  'Checkout at the payment provider',
  'Activate before the payment is confirmed',
  'The provider confirms: a signed webhook',
  'Activate again: the deploy token',
  'Install the node into a scratch root',
  'Issue the JWT',
  'Verify the JWT and read the unlocked docs',
  'The wallet login URL',
  'Register an agent',
  'Run it: insufficient balance',
  'Fund the wallet',
  'Run it again: charged',
  'The daemon runs the schedule',
];

const JWT_SHAPE = /eyJ[\w-]+\.[\w-]+\.[\w-]+/;
/** A deploy token is 43 base64url characters; nothing the demo should print is that long a run of them. */
const TOKEN_SHAPE = /[A-Za-z0-9_-]{43,}/;

function startDemo() {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), NO_COLOR: '1' };
  // A developer's shell may point the CLI at a real node or service; the demo must not care.
  env.SWARM_NODE_HOME = '/nonexistent/should-be-ignored';
  env.SVC_BASE_URL = 'http://127.0.0.1:9';
  return execa('node', [DEMO], { cwd: REPO_ROOT, env, extendEnv: false, all: true, reject: false, stdin: 'ignore', timeout: 90_000 });
}

function scratchOf(output: string): string {
  const match = /^scratch directory: (\S+)/m.exec(output);
  expect(match, output).not.toBeNull();
  return match![1]!;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Processes whose command line names the scratch directory: the service (its --data-dir) and the installed CLI. */
function processesUnder(scratch: string): string[] {
  if (!existsSync('/proc')) return [];
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const commandLine = readFileSync(join('/proc', entry, 'cmdline'), 'utf8').replaceAll('\0', ' ');
      if (commandLine.includes(scratch)) found.push(`${entry}: ${commandLine}`);
    } catch {
      // Gone between readdir and read.
    }
  }
  return found;
}

function expectNothingLeft(output: string, scratch: string): void {
  expect(existsSync(scratch), `${scratch} is still there`).toBe(false);
  const pids = [...output.matchAll(/\bpid (\d+)/g)].map((match) => Number(match[1]));
  expect(pids.length, output).toBeGreaterThan(0);
  for (const pid of pids) expect(isAlive(pid), `pid ${pid} is still running`).toBe(false);
  expect(processesUnder(scratch)).toEqual([]);
}

describe('npm run demo', () => {
  it('walks every step of the funnel in order, exits 0 within a minute, and leaves nothing behind', async () => {
    const started = Date.now();
    const result = await startDemo();
    const output = String(result.all);
    expect(result.exitCode, output).toBe(0);
    expect(Date.now() - started).toBeLessThan(60_000);

    const markers = [...output.matchAll(/^── (\d+)\/(\d+) · (.+)$/gm)].map((match) => ({ number: Number(match[1]), of: Number(match[2]), title: match[3] }));
    expect(markers.map((marker) => marker.title)).toEqual(STEPS);
    expect(markers.map((marker) => marker.number)).toEqual(STEPS.map((_, index) => index + 1));
    expect(new Set(markers.map((marker) => marker.of))).toEqual(new Set([STEPS.length]));

    // The values each step is about, as the demo shows them.
    expect(output).toMatch(/svc-api listening on http:\/\/127\.0\.0\.1:\d+/);
    expect(output).toMatch(/status\s+PENDING/);
    expect(output).toMatch(/exit code\s+7\n.*error\s+payment pay_\w+ is not confirmed yet/);
    expect(output).toMatch(/webhook_delivered\s+true/);
    expect(output).toMatch(/deploy_token\s+[\w-]{6}… \(in <scratch>\/deploy-token, mode 0600\)/);
    expect(output).toMatch(/install_path\s+\/opt\/svc\/swarm-node/);
    expect(output).toMatch(/deploy_mode\s+bare_metal/);
    expect(output).toMatch(/\$ SVC_DEPLOY_TOKEN=[\w-]{6}… swarm-node install --root <root> --no-start/);
    expect(output).toMatch(/installed swarm-node \S+ under <root>, node [0-9a-f-]{36}/);
    expect(output).toMatch(/etc\/credentials\.json\s+0600/);
    expect(output).toMatch(/jwtToken\s+eyJ\w{3}…/);
    expect(output).toMatch(/nodeAccess\s+isolated_svc_server/);
    expect(output).toMatch(/^ {3}│ node-install$/m);
    expect(output).toMatch(/wallet_login_url\s+http:\/\/127\.0\.0\.1:\d+\/wallet\/login\?token=eyJ\w{3}…&intent=swarm_private_access/);
    expect(output).toMatch(/Registered agent_ops_monitor_004 \(Ops monitor agent, \$0\.04 per run\): every 2s/);
    expect(output).toMatch(/exit code\s+3\n.*insufficient balance.*\n.*wallet_login_url\s+http:\/\/127\.0\.0\.1:\d+\/wallet\/login\n/);
    expect(output).toMatch(/balance\s+\$1\.00 USD on chain 1202/);
    expect(output).toMatch(/charged \$0\.04, balance \$0\.96/);
    expect(output).toMatch(/daemon pid \d+/);
    expect(output).toMatch(/daemon\s+running pid \d+/);
    expect(output).toMatch(/ts=\S+ level=info event=daemon_started /);
    expect(output).toMatch(/ts=\S+ level=info event=run_succeeded agent=agent_ops_monitor_004 .*charged_cents=4/);
    expect(output).toMatch(/ts=\S+ level=info event=daemon_stopped/);
    expect(output).toMatch(/daemon runs\s+\d+, exit code 0 on SIGTERM/);
    expect(output).toMatch(/^demo finished in \d+\.\d s$/m);

    // Secrets only masked: no JWT, no deploy token, no node credential in full.
    expect(output).not.toMatch(JWT_SHAPE);
    expect(output).not.toMatch(TOKEN_SHAPE);
    expect(output).not.toMatch(/svcn_[A-Za-z0-9_-]{20,}/);
    // NO_COLOR and not a terminal: no escape sequences.
    expect(output).not.toContain('\u001b[');

    expectNothingLeft(output, scratchOf(output));
  }, 90_000);

  it('on Ctrl+C stops what it started, removes its scratch directory and exits 130', async () => {
    const demo = startDemo();
    let seen = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the demo did not start the daemon: ${seen}`)), 60_000);
      demo.all!.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        // The busiest moment: the service and the daemon both run.
        if (/daemon pid \d+/.test(seen)) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const scratch = scratchOf(seen);
    demo.kill('SIGINT');
    const result = await demo;
    const output = String(result.all);
    expect(result.exitCode, output).toBe(130);
    expect(output).toMatch(/SIGINT: stopping the demo's processes and removing its scratch directory/);
    expect(output).not.toMatch(/demo failed/);
    expect(output).toMatch(/svc-api pid \d+/);
    expect(output).toMatch(/daemon pid \d+/);
    expectNothingLeft(output, scratch);
  }, 90_000);
});
