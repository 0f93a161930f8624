// README.md: `npm run demo` walks the whole funnel with the real binaries,
// narrates every step in order, shows a run started with curl executing on the node and the ops monitor's findings
// about this host, the node list, an agent of the user's own uploaded and run on the node, and a node killed mid-run
// having its run retried, charged once; it exits 0, leaves no process (agents included) and no scratch directory behind, and never prints a
// secret in full. Ctrl+C takes everything down too. The demo runs exactly as `npm run demo` runs it (node
// scripts/demo.mjs, on the built dist/).
import { execa } from 'execa';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { hostname, release } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pathWithout } from '../helpers/path-without.js';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { WITHOUT_BUBBLEWRAP } from '../node/sandbox-support.js';

const DEMO = join(REPO_ROOT, 'scripts', 'demo.mjs');

const STEPS = [
  'Start the reference service',
  'Checkout at the payment provider',
  'The provider confirms: a signed webhook',
  'Sign in: a code mailed to the address',
  'Activate: the deploy token',
  'Install the node into a scratch root',
  'Sign the node in',
  'Verify the JWT and read the unlocked docs',
  'The wallet login URL',
  'Register an agent',
  'Run it: insufficient balance',
  'Fund the wallet',
  'Run it again: charged',
  'The daemon starts',
  'The node list',
  'A schedule at the service',
  'A run started with curl executes on the node',
  'Upload an agent of your own',
  'Run it on the node: your code, charged',
  "An agent bundle of the operator's own",
  'The node is killed mid-run: the run waits',
  'The node comes back: the run is retried, charged once',
  'Cancel a run',
];

const JWT_SHAPE = /eyJ[\w-]+\.[\w-]+\.[\w-]+/;
/** A deploy token is 43 base64url characters; nothing the demo should print is that long a run of them. */
const TOKEN_SHAPE = /[A-Za-z0-9_-]{43,}/g;
/** A SHA-256 digest (an artifact's, shown so that a download can be checked) is public, not a token. */
const DIGEST = /^[0-9a-f]{64}$/;

/**
 * The demo as `npm run demo` runs it; `wrapper`: what it runs in (an argv ending where `node scripts/demo.mjs` starts);
 * `path`: its PATH (test/helpers/path-without.ts: a host without some programs).
 */
function startDemo(wrapper: readonly string[] = [], path?: string) {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), NO_COLOR: '1' };
  if (path !== undefined) env.PATH = path;
  // A developer's shell may point the CLI at a real node or service; the demo must not care.
  env.SWARM_NODE_HOME = '/nonexistent/should-be-ignored';
  env.SVC_BASE_URL = 'http://127.0.0.1:9';
  const argv = [...wrapper, 'node', DEMO];
  return execa(argv[0]!, argv.slice(1), {
    cwd: REPO_ROOT,
    env,
    extendEnv: false,
    all: true,
    reject: false,
    stdin: 'ignore',
    timeout: 90_000,
  });
}

const asRoot = process.getuid?.() === 0;

function scratchOf(output: string): string {
  const match = /^scratch directory: (\S+)/m.exec(output);
  expect(match, output).not.toBeNull();
  return match![1]!;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A zombie (dead, its exit status not yet collected by its reaper) runs nothing.
  try {
    return !/^State:\s+Z/m.test(readFileSync(join('/proc', String(pid), 'status'), 'utf8'));
  } catch {
    return existsSync('/proc') ? false : true;
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

/**
 * Runs the demo (in `wrapper`, with `path`), checks every step of it and what it leaves, and returns what it printed;
 * `withoutCurl`: the PATH has no curl, and the demo pipes install.sh with Node's fetch in its place.
 */
async function walkThrough(
  wrapper: readonly string[] = [],
  { path, withoutCurl = false }: { path?: string; withoutCurl?: boolean } = {},
): Promise<string> {
  const started = Date.now();
  const result = await startDemo(wrapper, path);
  const output = String(result.all);
  expect(result.exitCode, output).toBe(0);
  const seconds = (Date.now() - started) / 1000;
  process.stdout.write(`the demo took ${seconds.toFixed(1)} s\n`);
  expect(seconds).toBeLessThan(60);

  const markers = [...output.matchAll(/^── (\d+)\/(\d+) · (.+)$/gm)].map((match) => ({
    number: Number(match[1]),
    of: Number(match[2]),
    title: match[3],
  }));
  expect(markers.map((marker) => marker.title)).toEqual(STEPS);
  expect(markers.map((marker) => marker.number)).toEqual(STEPS.map((_, index) => index + 1));
  expect(new Set(markers.map((marker) => marker.of))).toEqual(new Set([STEPS.length]));

  // The values each step is about, as the demo shows them.
  expect(output).toMatch(/svc-api listening on http:\/\/127\.0\.0\.1:\d+/);
  expect(output).toMatch(/\$ npm run release -- --key <scratch>\/release-key\/demo\.pem --out <scratch>\/releases --no-runtime --no-deb\n/);
  expect(output).toMatch(/artifact\s+swarm-node-\S+-linux-\w+\.tar\.gz {2}\d+\.\d MB, \d+ files, signed by key [0-9a-f]{16}/);
  expect(output).toMatch(
    /\$ svc-api --sandbox --port 0 --data-dir <scratch>\/service --lease-seconds 5 --releases-dir <scratch>\/releases\n/,
  );
  expect(output).toMatch(/status\s+PENDING/);
  expect(output).toMatch(/webhook_delivered\s+true/);
  // The sign-in by mail: the code is read from the sandbox's outbox, shown masked, and never on a command line.
  expect(output).toMatch(/code sent\s+to demo@example\.com, reference [0-9a-f]{8}/);
  expect(output).toMatch(/\$ svc-api sandbox mail --to demo@example\.com --limit 1\n.*Your svc sign-in code: ####-####/);
  expect(output).toMatch(/\$ swarm-node login --email demo@example\.com --code-file <scratch>\/operator-code\n/);
  expect(output).not.toMatch(/(?<![\w-])\d{4}-\d{4}(?![\w-])/);
  expect(output).toMatch(/deploy_token\s+[\w-]{6}… \(in <scratch>\/deploy-token, mode 0600\)/);
  expect(output).toMatch(/install_path\s+\/opt\/svc\/swarm-node/);
  expect(output).toMatch(/deploy_mode\s+bare_metal/);
  const fetcher = withoutCurl ? "node -e '[^'\\n]+'" : 'curl -fsSL';
  expect(output).toMatch(
    new RegExp(
      `\\$ SVC_DEPLOY_TOKEN=[\\w-]{6}… ${fetcher} http://127\\.0\\.0\\.1:\\d+/install\\.sh \\| sh -s -- --root <root> --no-start --trust-key <scratch>/release-key/demo\\.pub\\.pem\\n`,
    ),
  );
  expect(output).toMatch(/verified swarm-node \S+ \(swarm-node-\S+\.tar\.gz, signed by trusted\)/);
  const nodeId = /installed swarm-node \S+ under <root>, node ([0-9a-f-]{36})/.exec(output)?.[1];
  expect(nodeId, output).toBeDefined();
  expect(output).toMatch(/etc\/credentials\.json\s+0600/);
  expect(output).toMatch(/jwtToken\s+eyJ\w{3}…/);
  expect(output).toMatch(/nodeAccess\s+isolated_svc_server/);
  expect(output).toMatch(/^ {3}│ node-install$/m);
  expect(output).toMatch(/wallet_login_url\s+http:\/\/127\.0\.0\.1:\d+\/wallet\/login\?token=eyJ\w{3}…&intent=swarm_private_access/);
  expect(output).toMatch(/Registered agent_ops_monitor_004 \(Ops monitor agent, \$0\.04 per run\): manual runs only/);
  expect(output).toMatch(/exit code\s+3\n.*insufficient balance.*\n.*wallet_login_url\s+http:\/\/127\.0\.0\.1:\d+\/wallet\/login\n/);
  expect(output).toMatch(/balance\s+\$1\.00 USD on chain 1202/);
  // The CLI's own run, before any daemon: on this node.
  expect(output).toContain(`ran on node ${nodeId} (run `);
  expect(output).toMatch(/charged \$0\.04, balance \$0\.96/);
  // The daemon in the background: ready, serving the agent.
  expect(output).toMatch(/daemon pid \d+, ready/);
  expect(output).toMatch(/daemon\s+running pid \d+/);
  expect(output).toMatch(/ts=\S+ level=info event=daemon_started /);
  expect(output).toMatch(/ts=\S+ level=info event=agents_served agents=agent_ops_monitor_004/);
  // The node list: this node, online on this host, serving the agent, its runs today.
  const here = new RegExp(`^ {3}│ ${nodeId} \\(here\\)\\s+(\\S+)\\s+\\S+\\s+(online|offline)\\s+.*\\s(\\d+)$`, 'gm');
  const rows = [...output.matchAll(here)];
  // Online in the list, online while its agent works, offline once killed.
  expect(
    rows.map((row) => row[2]),
    output,
  ).toEqual(['online', 'online', 'offline']);
  expect(rows[0]![1]).toBe(hostname());
  expect(Number(rows[0]![3])).toBeGreaterThanOrEqual(1);
  // A schedule at the service, priced from its own fire times, pinned here, then removed.
  expect(output).toMatch(/Schedule [0-9a-f-]{36}: agent_ops_monitor_004, cron 0 \d+ \* \* 1-5 in Europe\/Berlin/);
  expect(output).toMatch(/Costs up to \$0\.04 a day \(1 run of \$0\.04\) and \$0\.(8|9)\d a month \(2\d runs\)/);
  // register --every: the same kind of schedule, pinned here, priced; then removed.
  expect(output).toMatch(/Updated agent_ops_monitor_004 .*: every 1d, no daily cap\.\n.*Costs up to \$0\.04 a day \(1 run\)/);
  expect(output).toMatch(/The service starts it every 1d, next at \S+T00:00:00\.000Z, .*schedule show [0-9a-f-]{36}/);
  expect(output).toMatch(/Updated agent_ops_monitor_004 .*manual runs only/);
  // curl with the JWT, masked: the run executed on this node, and its output holds what only this host knows.
  expect(output).toMatch(
    /\$ curl -sS -X POST http:\/\/127\.0\.0\.1:\d+\/v1\/swarm\/execute \\\n\s+-H 'Authorization: Bearer eyJ\w{3}…' \\\n\s+-H 'Idempotency-Key: [0-9a-f-]{36}' \\\n\s+-H 'Content-Type: application\/json' -d '\{"user_id":"demo@example\.com","agent_id":"agent_ops_monitor_004"\}'\n/,
  );
  expect(output).toMatch(/HTTP\s+200\n/);
  expect(output).toContain(`node_id          ${nodeId} (this node)`);
  expect(output).toContain(`output.host      ${hostname()}, kernel ${release()}: this machine's`);
  // The agent runs in a sandbox (root: bubblewrap) that hides the node's own files: it names the database, unseen.
  expect(output).toMatch(
    /output\.database\s+<root>\/opt\/svc\/swarm-node\/var\/swarm-node\.db: out of the agent's sight \(its sandbox hides the node's files\)/,
  );
  const curlRun = /run_id\s+([0-9a-f-]{36})\n.*status\s+succeeded, charged \$0\.04/.exec(output)?.[1];
  expect(output).toMatch(new RegExp(`ts=\\S+ level=info event=run_pulled agent=agent_ops_monitor_004 run_id=${curlRun}\\n`));
  expect(output).toMatch(
    new RegExp(`ts=\\S+ level=info event=run_succeeded agent=agent_ops_monitor_004 run_id=${curlRun} .*source=service\\n`),
  );
  // The ops monitor's findings about this host, each with its severity: the load, the memory, a filesystem.
  const findings =
    /What the ops monitor found on this host \(output\.findings, (\d+) in all, the worst first\)[^\n]*\n[^\n]*\n((?: {3}│ [^\n]*\n)+)/.exec(
      output,
    );
  expect(findings, output).not.toBeNull();
  expect(Number(findings![1])).toBeGreaterThanOrEqual(3);
  const severity = '(?:ok|warning|critical)\\s+';
  expect(findings![2]).toMatch(new RegExp(`│ ${severity}load \\d+(\\.\\d+)? per CPU over 5 minutes \\(\\d+(\\.\\d+)? on \\d+ CPUs\\)\\n`));
  expect(findings![2]).toMatch(new RegExp(`│ ${severity}memory \\d+(\\.\\d+)?% used \\(\\d+\\.\\d (GiB|MiB) available\\)\\n`));
  expect(findings![2]).toMatch(new RegExp(`│ ${severity}/\\S* (is \\d+(\\.\\d+)?% full|has used)`));
  // An agent of the user's own: scaffolded, one line edited, uploaded (current), run on this node and charged.
  expect(output).toMatch(
    /\$ swarm-node agent init <scratch>\/my-agent --agent agent_svc_skills_005\n.*Created <scratch>\/my-agent \(your version of agent_svc_skills_005, version 0\.1\.0\): README\.md, agent\.json, main\.mjs, swarm_kit\/\./,
  );
  expect(output).toMatch(
    /│ \+ return \{ summary: `Hello, \$\{name\}: agent_svc_skills_005, a version made by the demo, ran on \$\{hostname\(\)\}`/,
  );
  const digest = /Uploaded agent_svc_skills_005 version 0\.1\.0 \(([0-9a-f]{12}), 6 files, \d+ bytes\); it is current/.exec(output)?.[1];
  expect(digest, output).toBeDefined();
  expect(output).toMatch(new RegExp(`│ 0\\.1\\.0\\s+${digest}\\s.*\\syes\\n`));
  expect(output).toMatch(
    new RegExp(
      // The run's id and what it holds as soon as it exists (what Ctrl+C would leave behind), then its answer.
      `\\$ swarm-node run agent_svc_skills_005 --input name=Ada\\n.*\\n {3}│ Run [0-9a-f-]{36} started \\(running, on node ${nodeId}\\): \\$0\\.05 charged, refunded if it fails\\.\\n {3}│ ✓ agent_svc_skills_005 ran on node ${nodeId} \\(run [0-9a-f-]{36}\\): charged \\$0\\.05, balance \\$0\\.\\d\\d\\n {3}│ Hello, Ada: agent_svc_skills_005, a version made by the demo, ran on ${hostname()}\\n`,
    ),
  );
  expect(output).toContain(
    `installed  <root>/opt/svc/swarm-node/var/agents/agent_svc_skills_005/${digest}…/: README.md, agent.json, main.mjs, swarm_kit`,
  );
  // The operator's own bundle, killed mid-run: charged at start, its attempt lost after the lease, queued again
  // under the same id and charge (the review is retry-safe), then run again by the restarted daemon: charged once.
  expect(output).toMatch(/Registered agent_dev_review_012 \(Dev review the service, \$0\.12 per run\)/);
  const before =
    /\$ swarm-node --json wallet\n {3}│ balance {2}\$(\d\.\d\d)\n {3}\$ curl -sS -X POST .*\n.*\n.*\n\s+-H 'Prefer: respond-async' \\\n/.exec(
      output,
    )?.[1];
  expect(before, output).toBeDefined();
  const slowRun = /HTTP\s+202, Location: \/v1\/swarm\/runs\/([0-9a-f-]{36})\n.*\n.*status\s+(?:queued|running), charged \$0\.12/.exec(
    output,
  )?.[1];
  expect(slowRun, output).toBeDefined();
  expect(output).toMatch(/the agent runs on this host: pid \d+, uid \d+/);
  expect(output).toMatch(/status\s+running on node [0-9a-f-]{36}\n/);
  expect(output).toMatch(/\$ kill -KILL \d+ \d+ {4}# the daemon and its agent/);
  expect(output).toContain(`│ Run ${slowRun} of agent_dev_review_012: queued waiting for a node (attempt 2)\n   │ Charged $0.12 · `);
  expect(output).toMatch(new RegExp(`│ {3}1\\. node_lost on node ${nodeId}: `));
  const held = (Number(before) * 100 - 12) / 100;
  expect(output).toContain(`balance  $${held.toFixed(2)}: the run's price is held, not taken twice`);
  // While it is off, a run started with curl waits queued, charged; it runs once the node is back.
  const queuedRun =
    /-d '\{"user_id":"demo@example\.com","agent_id":"agent_ops_monitor_004"\}'\n {3}│ run_id {2}([0-9a-f-]{36})\n {3}│ status {2}queued, charged \$0\.04, waits until /.exec(
      output,
    )?.[1];
  expect(queuedRun, output).toBeDefined();
  // Back again: the late report refused, the run taken again, its log followed live, succeeded at attempt 2,
  // charged once; the queued run ran; the review's artifact downloaded and checked.
  expect(output).toMatch(/ts=\S+ level=info event=pending_runs_settled reported=0 lost=1 /);
  expect(output).toMatch(new RegExp(`\\$ swarm-node logs ${slowRun} --follow\\n {3}│ \\[stderr\\] reviewed 1 of \\d+ s\\n`));
  expect(output).toContain(`│ Run ${slowRun} succeeded.`);
  expect(output).toMatch(
    new RegExp(`ts=\\S+ level=info event=run_succeeded agent=agent_dev_review_012 run_id=${slowRun} .*charged_cents=12 `),
  );
  expect(output).toContain(
    `retried run  ${slowRun} succeeded at attempt 2 (node_lost, succeeded), charged $0.12 once; nothing of the killed attempt left on the host`,
  );
  expect(output).toContain(`queued run   ${queuedRun} succeeded once the node polled, charged $0.04`);
  expect(output).toMatch(/│ review\.txt +\d+ +[0-9a-f]{64}\n/);
  expect(output).toContain(`✓ <scratch>/downloads/review.txt: run ${slowRun}: nothing flagged in /srv/app`);
  // A cancel: the running run stopped on its node, cancelled, charged nothing; then a clean stop.
  expect(output).toMatch(/cancelled run {2}[0-9a-f-]{36} cancelled \(the run was cancelled by its user\), charged \$0\.00/);
  expect(output).toMatch(/ts=\S+ level=info event=daemon_stopped/);
  expect(output).toMatch(/daemon\s+exit code 0 on SIGTERM/);
  const spent =
    /balance\s+\$0\.(\d\d) = \$1\.00 − (\d+) × \$0\.04 − \$0\.05 \(your agent\) − \$0\.12 \(the review, once\): only the runs that succeeded are charged/.exec(
      output,
    );
  expect(spent, output).not.toBeNull();
  expect(100 - Number(spent![1])).toBe(4 * Number(spent![2]) + 5 + 12);
  expect(output).toMatch(/^demo finished in \d+\.\d s$/m);

  // Secrets only masked: no JWT, no deploy token, no node credential in full.
  expect(output).not.toMatch(JWT_SHAPE);
  expect([...output.matchAll(TOKEN_SHAPE)].map((match) => match[0]).filter((word) => !DIGEST.test(word))).toEqual([]);
  expect(output).not.toMatch(/svcn_[A-Za-z0-9_-]{20,}/);
  // NO_COLOR and not a terminal: no escape sequences.
  expect(output).not.toContain('\u001b[');

  expectNothingLeft(output, scratchOf(output));
  return output;
}

describe('npm run demo', () => {
  it('walks every step of the funnel in order, exits 0 within a minute, and leaves nothing behind', async () => {
    const output = await walkThrough();
    // Where bubblewrap makes the sandbox, the node's own `auto` picks it: its config is left as install wrote it.
    if (/^agent isolation: bubblewrap: /m.test(output)) expect(output).not.toContain('swarm-node config set agent_isolation');
  }, 90_000);

  // docs/decisions/0027-unshare-mode.md: the demo's node, told so in its own config.json, runs its agents under unshare.
  // docs/decisions/0036-install-without-curl-or-openssl.md: a host of Node and npm only, as a fresh minimal Debian is,
  // has no curl and no openssl either: Node's fetch pipes install.sh, which downloads and verifies with Node.
  it.skipIf(!asRoot)(
    'as root without bubblewrap, curl or openssl: install.sh piped and verified with Node, the agents under unshare, each said in one line',
    async () => {
      const output = await walkThrough(WITHOUT_BUBBLEWRAP, { path: pathWithout(['curl', 'openssl']), withoutCurl: true });
      const lines = output.split('\n').filter((line) => line.startsWith('agent isolation: '));
      expect(lines, output).toEqual([
        expect.stringMatching(
          /^agent isolation: unshare: bubblewrap (is not installed|cannot make a sandbox here \(exit 1\)); .*; apt-get install bubblewrap /,
        ),
      ]);
      expect(output).toMatch(/\$ swarm-node config set agent_isolation unshare\n/);
      // Each agent a uid of its own, the node's files out of its sight (checked in walkThrough): the demo says which.
      expect(output).toMatch(/the agent runs on this host: pid \d+, uid 6\d{4} \(a user of its own, sandboxed by unshare\)/);
      // Why the pipe is not curl's, then install.sh's own two lines: what it downloads and checks with instead.
      expect(output).toMatch(/^ {3}curl is not installed here: Node's fetch downloads install\.sh in its place/m);
      expect(output).toMatch(/│ curl is not on PATH: downloading with Node\.js v\d+\.\d+\.\d+ \(\/\S+\/node\)\n/);
      expect(output).toMatch(/│ openssl is not on PATH: checking the signature with Node\.js v\d+\.\d+\.\d+ \(\/\S+\/node\)\n/);
    },
    90_000,
  );

  /** Starts the demo, sends SIGINT once `moment` shows in its output, and returns what it printed and left. */
  async function interruptAt(moment: RegExp, what: string): Promise<{ output: string; exitCode: number | undefined; scratch: string }> {
    const demo = startDemo();
    let seen = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the demo did not reach ${what}: ${seen}`)), 60_000);
      demo.all!.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (moment.test(seen)) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const scratch = scratchOf(seen);
    demo.kill('SIGINT');
    const result = await demo;
    return { output: String(result.all), exitCode: result.exitCode, scratch };
  }

  function expectInterrupted({ output, exitCode }: { output: string; exitCode: number | undefined }): void {
    expect(exitCode, output).toBe(130);
    expect(output).toMatch(/SIGINT: stopping the demo's processes and removing its scratch directory/);
    expect(output).not.toMatch(/demo failed/);
    expect(output).toMatch(/svc-api pid \d+/);
    expect(output).toMatch(/daemon pid \d+/);
  }

  it('on Ctrl+C while the daemon runs a slow agent, stops what it started, the agent too, removes its scratch directory and exits 130', async () => {
    // The service, the daemon and an agent all run (the demo shows the node list before it kills anything): the
    // daemon's SIGTERM alone would let the agent work on through the daemon's drain, and a SIGKILL of the daemon would
    // leave it running. An interrupt earlier, with only the service and the daemon, stops less of the same.
    const interrupted = await interruptAt(/the agent runs on this host: pid \d+/, 'the slow agent');
    expect(interrupted.output).not.toContain('$ kill -KILL');
    expectInterrupted(interrupted);
    expectNothingLeft(interrupted.output, interrupted.scratch);
  }, 90_000);
});
