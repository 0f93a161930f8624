// What scripts and operators rely on: NO_COLOR, a corrupt database, concurrent invocations, an unreachable
// service in bounded time, an example in every --help, and a start that loads no heavy module.
import { describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { nodeEnv, swarmNode } from '../helpers/cli.js';
import { REPO_ROOT, SWARM_NODE_BIN } from '../helpers/svc-api.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { createPayment, payAndConfirm } from '../helpers/funnel.js';
import { loginByMail } from './fixtures.js';
import { uniqueEmail } from '../helpers/temp.js';
import { ESC, signedInNode, walletBalance } from './fixtures.js';

const AGENT = 'agent_ops_monitor_004';

const service = useSvcApi();

describe('colour', () => {
  it('NO_COLOR removes every escape sequence, even when colour is forced; without it the same output is coloured', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 3, label: 'colour' });
    expect((await swarmNode(['register', AGENT, '--every', '1m'], { env: node.env })).exitCode).toBe(0);
    for (const args of [['list'], ['runs'], ['runs', '--local'], ['status'], ['run', AGENT], ['whoami'], ['bogus']]) {
      const plain = await swarmNode(args, { env: { ...node.env, NO_COLOR: '1', FORCE_COLOR: '1' } });
      expect(plain.stdout + plain.stderr, args.join(' ')).not.toContain(ESC);
      const flag = await swarmNode(['--no-color', ...args], { env: { ...node.env, NO_COLOR: '', FORCE_COLOR: '1' } });
      expect(flag.stdout + flag.stderr, args.join(' ')).not.toContain(ESC);
    }
    // The control: with colour forced and NO_COLOR unset, the failure and the table are coloured.
    const coloured = await swarmNode(['run', AGENT], { env: { ...node.env, NO_COLOR: '', FORCE_COLOR: '1' } });
    expect(coloured.exitCode).toBe(3);
    expect(coloured.stderr).toContain(ESC);
  });
});

describe('local database', () => {
  it('a corrupt database file: every store command exits 1 naming the file, without a stack trace', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'corrupt' });
    const file = join(node.home, 'var', 'swarm-node.db');
    mkdirSync(join(node.home, 'var'), { recursive: true });
    writeFileSync(file, 'this is not a database, just some garbage bytes '.repeat(200));
    for (const args of [['list'], ['runs', '--local'], ['run', AGENT], ['register', AGENT], ['unregister', AGENT]]) {
      const human = await swarmNode(args, { env: node.env });
      expect(human.exitCode, `${args.join(' ')}: ${human.stderr}`).toBe(1);
      expect(human.stderr).toContain(file);
      expect(human.stderr).toMatch(/not a SQLite database or is corrupt/);
      expect(human.stderr).not.toMatch(/\n\s+at /);
      const json = await swarmNode(['--json', ...args], { env: node.env });
      expect(json.exitCode).toBe(1);
      expect(json.json.error).toMatchObject({ code: 'local_state', message: expect.stringContaining(file), remedy: expect.any(String) });
    }
    // Nothing was charged: the run stopped at the journal, before the service.
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100);
    // status reports the broken part instead of failing.
    const status = await swarmNode(['--json', 'status'], { env: node.env });
    expect(status.exitCode).toBe(0);
    expect(status.json.database.error).toContain(file);
  });

  it('five concurrent registers and five concurrent runs all succeed, each run charged once', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'concurrent' });
    // Each with the input its scheduled runs start from, which the service checks as it checks a run's.
    const inputs: Record<string, string[]> = {
      agent_dev_review_012: ['repo=/srv/app'],
      agent_sales_outreach_008: ['leads=/srv/leads.csv', 'template=/srv/template.txt'],
      agent_svc_skills_005: ['question=What is a node?'],
      agent_research_rag_015: ['corpus=/srv/docs', 'question=What is a node?'],
      [AGENT]: [],
    };
    const agents = Object.keys(inputs);
    const registers = await Promise.all(
      agents.map((agent, i) =>
        swarmNode(['--json', 'register', agent, '--every', `${i + 1}m`, ...inputs[agent]!.flatMap((pair) => ['--input', pair])], {
          env: node.env,
        }),
      ),
    );
    for (const result of registers) expect(result.exitCode, result.stdout + result.stderr).toBe(0);
    const listed = (await swarmNode(['--json', 'list'], { env: node.env })).json.registrations as Array<{ schedule_id: string }>;
    expect(listed).toHaveLength(5);
    // One schedule at the service each, none made twice.
    expect(new Set(listed.map((row) => row.schedule_id)).size).toBe(5);
    expect(service.db.prepare('SELECT COUNT(*) AS n FROM schedules WHERE user_id = ?').get(node.email)).toEqual({ n: 5 });

    const runs = await Promise.all(agents.map(() => swarmNode(['--json', 'run', AGENT], { env: node.env })));
    for (const result of runs) expect(result.exitCode, result.stdout + result.stderr).toBe(0);
    expect(new Set(runs.map((r) => r.json.run_id)).size).toBe(5);
    const history = await swarmNode(['--json', 'runs', '--local'], { env: node.env });
    expect(history.json.totals).toMatchObject({ runs: 5, charged_cents: 20, by_status: { succeeded: 5, pending: 0 } });
    expect(await walletBalance(service.baseUrl, node.token)).toBe(80);
  });
});

describe('progress on a terminal', () => {
  it('activate shows a spinner with the retry on a TTY, and none when piped', async () => {
    const email = uniqueEmail('spinner');
    const { env } = nodeEnv(service.baseUrl);
    // Signed in (a top-up of theirs is confirmed), the user activates a node purchase the provider has not confirmed.
    await payAndConfirm(service.baseUrl, 'svc_pay_wallet_fund', email);
    expect((await loginByMail(env, email)).exitCode).toBe(0);
    const payment = await createPayment(service.baseUrl, 'svc_starter_agents', email);
    const args = [SWARM_NODE_BIN, 'activate', '--tier', 'svc_starter_agents', '--email', email, '--payment', payment, '--wait', '2'];
    const pty = await import('@lydell/node-pty');
    // The spinner draws only when no CI variable is set at all.
    const ttyEnv: Record<string, string | undefined> = { ...process.env, ...env, TERM: 'xterm-256color' };
    delete ttyEnv.CI;
    const terminal = pty.spawn(process.execPath, args, { env: ttyEnv as Record<string, string>, cols: 120, rows: 30 });
    let screen = '';
    terminal.onData((data) => (screen += data));
    const exitCode = await new Promise<number>((resolve) => terminal.onExit(({ exitCode: code }) => resolve(code)));
    expect(exitCode).toBe(7);
    expect(screen).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/);
    expect(screen).toContain(`Payment ${payment} not confirmed yet; retry 1 in 2s`);
    // NO_COLOR (set by nodeEnv) holds on a TTY too: cursor control for the spinner, but no colour sequence.
    expect(screen).not.toMatch(/\u001b\[[0-9;]*m/);
    expect(screen).toContain('✖');
    const piped = await swarmNode(args.slice(1), { env });
    expect(piped.exitCode).toBe(7);
    expect(piped.stderr).not.toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/);
    // The deadline of the wait, said once where no spinner updates it.
    expect(piped.stderr).toMatch(
      new RegExp(`Activating with payment ${payment}, waiting until \\d\\d:\\d\\d:\\d\\d UTC for its confirmation…`),
    );
  });
});

describe('help and start-up', () => {
  it('--help and --version alone load nothing of the program, and with other words no prompt, spinner, SQLite, HTTP client or server module', async () => {
    // A resolve hook records every module the program loads; each loaded bundle file's source map names what is in it.
    const dir = tempDir('trace-');
    const trace = join(dir, 'loaded.txt');
    writeFileSync(
      join(dir, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(${JSON.stringify(trace)}, result.url + '\\n');
  return result;
}`,
    );
    writeFileSync(
      join(dir, 'register.mjs'),
      `import { register } from 'node:module';\nregister(new URL('./hooks.mjs', import.meta.url));\n`,
    );
    const forbidden =
      /node_modules\/(ora|undici|@inquirer|better-sqlite3|execa|fastify|cli-spinners)\/|src\/api\/|src\/lib\/sqlite\.ts|src\/node\/(store|service-client)\.ts|src\/cli\/spinner\.ts/;
    // --version alone is answered by bin/swarm-node.js from package.json, loading nothing of the program; with any
    // other word the program answers it. Both say the same.
    writeFileSync(trace, '');
    const quick = await execa('node', ['--import', join(dir, 'register.mjs'), SWARM_NODE_BIN, '--version'], { reject: false });
    const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    expect([quick.exitCode, quick.stdout]).toEqual([0, version]);
    expect(
      readFileSync(trace, 'utf8')
        .split('\n')
        .filter((url) => url.includes('/dist/')),
    ).toEqual([]);
    const program = await execa('node', [SWARM_NODE_BIN, '--no-color', '--version'], { reject: false });
    expect([program.exitCode, program.stdout]).toEqual([0, version]);
    // --help alone too, from the text the build wrote by running the program: the program's own answer, byte for byte.
    for (const flag of ['--help', '-h']) {
      writeFileSync(trace, '');
      const written = await execa('node', ['--import', join(dir, 'register.mjs'), SWARM_NODE_BIN, flag], {
        reject: false,
        stripFinalNewline: false,
      });
      expect(written.exitCode).toBe(0);
      expect(
        readFileSync(trace, 'utf8')
          .split('\n')
          .filter((url) => url.includes('/dist/')),
      ).toEqual([]);
      const answered = await execa('node', [SWARM_NODE_BIN, '--no-color', flag], { reject: false, stripFinalNewline: false });
      expect(answered.exitCode).toBe(0);
      expect(written.stdout).toBe(answered.stdout);
      expect(written.stdout).toContain('Usage: swarm-node [options] [command]');
    }

    for (const flag of ['--no-color --help', '--no-color --version']) {
      writeFileSync(trace, '');
      const result = await execa('node', ['--import', join(dir, 'register.mjs'), SWARM_NODE_BIN, ...flag.split(' ')], { reject: false });
      expect(result.exitCode).toBe(0);
      const loaded = readFileSync(trace, 'utf8').split('\n').filter(Boolean);
      expect(loaded.some((url) => url.endsWith('/dist/swarm-node.js'))).toBe(true);
      const sources: string[] = [];
      for (const url of loaded) {
        expect(url, flag).not.toMatch(/better-sqlite3|undici|ora|inquirer|fastify/);
        if (!url.startsWith('file:') || !url.includes('/dist/')) continue;
        const map = JSON.parse(readFileSync(`${new URL(url).pathname}.map`, 'utf8')) as { sources: string[] };
        sources.push(...map.sources);
      }
      expect(sources.some((source) => source.includes('node_modules/commander/'))).toBe(true);
      expect(
        sources.filter((source) => forbidden.test(source)),
        flag,
      ).toEqual([]);
    }
  });
});
