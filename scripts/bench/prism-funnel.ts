// `npm run check:prism`: the funnel's traffic through Stoplight's validating proxy (docs/operations.md "The OpenAPI
// document"). svc-api runs as its own process; `prism proxy --errors` stands in front of it with the document the
// service serves at /openapi.json, and checks each request and each answer against it; the built CLI then walks the
// funnel through the proxy as a customer does (pay, sign in by a mailed code, enroll, fund, a billed run, its logs and
// history, usage, a budget), plus requests for what is not there, whose refusals must match the document too. It prints the operations seen and every violation prism reports, and exits 1 on any.
// Prism comes from the npm registry at the version below (npx), not from the project's dependencies: 90 MB that
// only this check needs. Run with: npm run check:prism -- [--keep-log FILE]
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fundWallet, signIn, startServer } from './support.js';

declare const REPO_ROOT: string;

const PRISM = '@stoplight/prism-cli@5.14.2';
const { values } = parseArgs({ options: { 'keep-log': { type: 'string' }, help: { type: 'boolean', default: false } } });
if (values.help) {
  process.stdout.write('Usage: npm run check:prism -- [--keep-log FILE]\n');
  process.exit(0);
}

const scratch = mkdtempSync(join(tmpdir(), 'check-prism-'));
const children: ChildProcess[] = [];
let log = '';
try {
  const api = await startServer(
    [join(REPO_ROOT, 'bin', 'svc-api.js'), '--sandbox', '--port', '0', '--data-dir', join(scratch, 'api')],
    { NO_COLOR: '1', SVC_LOG_LEVEL: 'warn' },
    /svc-api listening on (\S+)/,
    children,
  );
  const document = join(scratch, 'openapi.json');
  writeFileSync(document, await (await fetch(`${api}/openapi.json`)).text());
  const prism = spawn('npx', ['-y', PRISM, 'proxy', '--errors', '-h', '127.0.0.1', '-p', '0', document, api], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
  });
  children.push(prism);
  const proxy = await new Promise<string>((resolve, reject) => {
    const seen = (chunk: Buffer): void => {
      log += chunk.toString();
      const match = /Prism is listening on (http:\/\/\S+)/.exec(log.replace(/\x1b\[[0-9;]*m/g, ''));
      if (match) resolve(match[1]!);
    };
    prism.stdout!.on('data', seen);
    prism.stderr!.on('data', seen);
    prism.once('exit', (code) => reject(new Error(`prism exited ${code} before it listened:\n${log}`)));
  });

  const email = 'check-prism@example.com';
  const home = join(scratch, 'home');
  const env = { ...process.env, NO_COLOR: '1', SWARM_NODE_HOME: home, SVC_BASE_URL: proxy, SWARM_AGENT_ISOLATION: 'none' };
  const cli = (args: string[], input?: string): { status: number | null; stdout: string } => {
    const result = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'swarm-node.js'), ...args], { env, input, encoding: 'utf8' });
    return { status: result.status, stdout: result.stdout };
  };
  // The sign-in and the funding go through the proxy too: signIn and fundWallet speak HTTP to the URL they are given.
  const token = await signIn(proxy, email);
  await fundWallet(proxy, email, token.trim(), 500);
  const steps: Array<[string[], number]> = [
    [['login', '--token-stdin'], 0],
    [['whoami'], 0],
    [['enroll'], 0],
    [['agents'], 0],
    [['agents', 'show', 'agent_svc_skills_005'], 0],
    [['wallet'], 0],
    [['run', 'agent_svc_skills_005', '--input', 'question=How do I register an agent?'], 0],
    [['run', 'agent_svc_skills_005', '--input', 'colour=red'], 2],
    [['runs'], 0],
    [['runs', '--since', 'yesterday'], 2],
    [['usage'], 0],
    [['nodes'], 0],
    [['docs', 'starter-agents'], 0],
    [['budget', 'set', '--daily', '1.00', '--agent', 'agent_svc_skills_005'], 0],
    [['budget', 'list'], 0],
    [['status'], 0],
    [['agents', 'show', 'agent_nope'], 5],
  ];
  const failures: string[] = [];
  for (const [args, expected] of steps) {
    const { status } = cli(args, args[0] === 'login' ? token : undefined);
    if (status !== expected) failures.push(`swarm-node ${args.join(' ')} exited ${status}, not ${expected}`);
  }
  const runs = JSON.parse(cli(['--json', 'runs']).stdout) as { runs: Array<{ run_id: string }> };
  for (const args of [
    ['logs', runs.runs[0]!.run_id],
    ['runs', 'show', runs.runs[0]!.run_id],
  ]) {
    const { status } = cli(args);
    if (status !== 0) failures.push(`swarm-node ${args.join(' ')} exited ${status}`);
  }
  // The service's answers to well-formed requests for what is not there: each refusal must be one the document
  // declares. (A request the document refuses, prism answers itself, without asking the service.)
  for (const [method, path, body] of [
    ['GET', '/v1/swarm/agents/agent_nope', undefined],
    ['GET', '/v1/swarm/runs/01a236c5-0000-7000-8000-000000000000', undefined],
    ['GET', '/v1/swarm/runs/01a236c5-0000-7000-8000-000000000000/logs', undefined],
  ] as const) {
    await fetch(`${proxy}${path}`, {
      method,
      headers: { authorization: `Bearer ${token.trim()}`, 'content-type': 'application/json', 'idempotency-key': 'check-prism-1' },
      ...(body === undefined ? {} : { body }),
    });
  }

  const plain = log.replace(/\x1b\[[0-9;]*m/g, '');
  const operations = new Set([...plain.matchAll(/\[HTTP SERVER\] (\w+ \S+) /g)].map((match) => match[1]!.replace(/\?.*$/, '')));
  const violations = plain.split('\n').filter((line) => /violation|✖/i.test(line) && !/Invalid security scheme used/.test(line));
  process.stdout.write(`prism proxy --errors (${PRISM}) in front of svc-api: ${operations.size} operations seen\n`);
  for (const operation of [...operations].sort()) process.stdout.write(`  ${operation}\n`);
  process.stdout.write(`\nviolations: ${violations.length}\n${violations.map((line) => `  ${line}`).join('\n')}\n`);
  if (failures.length > 0)
    process.stdout.write(`\nthe funnel did not go as expected:\n${failures.map((line) => `  ${line}`).join('\n')}\n`);
  if (values['keep-log'] !== undefined) writeFileSync(values['keep-log'], plain);
  process.exitCode = violations.length > 0 || failures.length > 0 ? 1 : 0;
} finally {
  for (const child of children) child.kill('SIGTERM');
  rmSync(scratch, { recursive: true, force: true });
}
