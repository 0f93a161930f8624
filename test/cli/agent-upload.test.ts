// swarm-node agent init | upload | versions | rollback, and an uploaded agent run on the node: the built binary
// against the real svc-api. The node fetches the bundle by digest, verifies it, installs it under
// var/agents/<agent_id>/<digest>/ and runs it; tampered bytes are refused with nothing installed and nothing charged.
import { execa } from 'execa';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeEnv, swarmNode } from '../helpers/cli.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { signedInNode, walletBalance } from './fixtures.js';

const AGENT = 'agent_ops_monitor_004';
const PRICE = 4;
const service = useSvcApi();

const modeOf = (path: string): number => statSync(path).mode & 0o777;

function bumpVersion(dir: string, version: string): void {
  const file = join(dir, 'agent.json');
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), version }, null, 2));
}

describe('swarm-node agent', () => {
  it('inits a bundle that runs as it is, uploads it (again: nothing changes), lists versions and rolls back', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'agent-cli', fundCents: 100 });
    const dir = join(tempDir('agent-init-'), 'my-monitor');
    const init = await swarmNode(['--json', 'agent', 'init', dir, '--agent', AGENT], { env: node.env });
    expect(init.exitCode, init.stderr).toBe(0);
    expect(init.json).toMatchObject({
      agent_id: AGENT,
      own: false,
      version: '0.1.0',
      files: ['README.md', 'agent.json', 'main.mjs', 'swarm_kit/'],
    });
    const direct = await execa(process.execPath, [join(dir, 'main.mjs')], { input: '{"run_id": "r-1", "input": {"name": "Ada"}}' });
    expect(JSON.parse(direct.stdout)).toMatchObject({
      summary: expect.stringMatching(/^Hello, Ada, from agent_ops_monitor_004 on /),
      run_id: 'r-1',
    });
    expect((await swarmNode(['agent', 'init', dir, '--agent', AGENT], { env: node.env })).exitCode).toBe(2);
    expect((await swarmNode(['agent', 'init', join(dir, 'x'), '--agent', 'agent_nope_001'], { env: node.env })).exitCode).toBe(2);

    const first = await swarmNode(['--json', 'agent', 'upload', dir], { env: node.env });
    expect(first.exitCode, first.stderr).toBe(0);
    expect(first.json).toMatchObject({ agent_id: AGENT, version: '0.1.0', created: true, current: true });
    const v1 = first.json.digest as string;
    const again = await swarmNode(['agent', 'upload', dir], { env: node.env });
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/was uploaded already with these contents; nothing changed/);

    // The uploaded code runs on this node: fetched, verified and installed under var/agents, readable by agent users.
    const ran = await swarmNode(['--json', 'run', AGENT, '--input', 'name=Ada'], { env: node.env });
    expect(ran.exitCode, ran.stderr).toBe(0);
    expect(ran.json.output.summary).toMatch(/^Hello, Ada, from agent_ops_monitor_004 on /);
    expect(ran.json).toMatchObject({ charged_cents: PRICE, bundle_digest: v1 });
    const installed = join(node.home, 'var', 'agents', AGENT, v1);
    expect(readdirSync(join(node.home, 'var', 'agents', AGENT))).toEqual([v1]);
    // var/agents and var/agents/<agent_id> are passed, not listed: a bundle is found by its digest only.
    expect([modeOf(join(node.home, 'var', 'agents')), modeOf(join(node.home, 'var', 'agents', AGENT))]).toEqual([0o711, 0o711]);
    expect([modeOf(installed), modeOf(join(installed, 'main.mjs')), modeOf(join(installed, 'agent.json'))]).toEqual([0o755, 0o644, 0o644]);

    writeFileSync(
      join(dir, 'main.mjs'),
      "process.stdin.resume();\nprocess.stdin.on('end', () => console.log(JSON.stringify({ summary: 'version two' })));\n",
    );
    bumpVersion(dir, '0.2.0');
    const second = await swarmNode(['--json', 'agent', 'upload', dir], { env: node.env });
    expect(second.json).toMatchObject({ version: '0.2.0', created: true });
    const listed = await swarmNode(['--json', 'agent', 'versions', AGENT], { env: node.env });
    expect(listed.json.versions.map((v: { version: string }) => v.version)).toEqual(['0.2.0', '0.1.0']);
    expect(listed.json.current.version).toBe('0.2.0');
    const table = await swarmNode(['agent', 'versions', AGENT], { env: node.env });
    expect(table.stdout.split('\n')[0]).toMatch(/^VERSION\s+DIGEST\s+UPLOADED\s+SIZE\s+FILES\s+CURRENT$/);
    expect((await swarmNode(['--json', 'run', AGENT], { env: node.env })).json.output).toEqual({ summary: 'version two' });

    const back = await swarmNode(['agent', 'rollback', AGENT], { env: node.env });
    expect(back.exitCode, back.stderr).toBe(0);
    expect(back.stdout).toMatch(/^agent_ops_monitor_004 version 0\.1\.0 \(\w{12}\) is current, instead of 0\.2\.0\.$/);
    expect((await swarmNode(['--json', 'run', AGENT, '--input', 'name=Bo'], { env: node.env })).json.output.summary).toMatch(/^Hello, Bo,/);
    expect((await swarmNode(['agent', 'rollback', AGENT], { env: node.env })).exitCode).toBe(5);
    const forward = await swarmNode(['--json', 'agent', 'rollback', AGENT, '--to', (second.json.digest as string).slice(0, 8)], {
      env: node.env,
    });
    expect(forward.json.current.version).toBe('0.2.0');

    // Back to the built-in agent: the real ops monitor answers again; the uploads stay and can be made current.
    expect((await swarmNode(['agent', 'rollback', AGENT, '--builtin', '--to', '0.1.0'], { env: node.env })).exitCode).toBe(2);
    const builtin = await swarmNode(['agent', 'rollback', AGENT, '--builtin'], { env: node.env });
    expect(builtin.exitCode, builtin.stderr).toBe(0);
    expect(builtin.stdout).toMatch(
      /^No upload of agent_ops_monitor_004 is current: runs accepted from now on use the built-in agent \(your 2 version\(s\) stay;/,
    );
    const native = await swarmNode(['--json', 'run', AGENT], { env: node.env });
    expect(native.exitCode, native.stderr).toBe(0);
    expect(native.json.output).toMatchObject({ findings: expect.any(Array) });
    expect(native.json.bundle_digest).toBeUndefined();
    const repeated = await swarmNode(['--json', 'agent', 'rollback', AGENT, '--builtin'], { env: node.env });
    expect(repeated.json).toMatchObject({ current: null, versions: [{ version: '0.2.0' }, { version: '0.1.0' }] });
    expect((await swarmNode(['--json', 'agent', 'rollback', AGENT, '--to', '0.2.0'], { env: node.env })).json.current.version).toBe(
      '0.2.0',
    );
  });

  it('takes the JWT from --token-file, --token-stdin or SVC_TOKEN, and needs one', async () => {
    const owner = await signedInNode(service.baseUrl, { label: 'agent-token', enroll: false });
    const bare = nodeEnv(service.baseUrl);
    const tokenFile = join(tempDir('jwt-'), 'jwt');
    writeFileSync(tokenFile, `${owner.token}\n`, { mode: 0o600 });
    const dir = join(tempDir('agent-init-'), 'b');
    expect((await swarmNode(['agent', 'init', dir, '--agent', AGENT], { env: bare.env })).exitCode).toBe(0);
    expect((await swarmNode(['--json', 'agent', 'upload', dir, '--token-file', tokenFile], { env: bare.env })).json.created).toBe(true);
    const stdin = await swarmNode(['--json', 'agent', 'versions', AGENT, '--token-stdin'], { env: bare.env, input: owner.token });
    expect(stdin.json.versions).toHaveLength(1);
    const env = await swarmNode(['--json', 'agent', 'versions', AGENT], { env: { ...bare.env, SVC_TOKEN: owner.token } });
    expect(env.json.current.version).toBe('0.1.0');
    const none = await swarmNode(['--json', 'agent', 'versions', AGENT], { env: bare.env });
    expect([none.exitCode, none.json.error.code]).toEqual([4, 'not_signed_in']);
  });
});

describe('an uploaded agent on the node refuses what it should, before anything is charged or installed', () => {
  it('refuses an input failing the schema before the charge, and a bundle whose bytes do not match their digest', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'agent-tamper', fundCents: 100 });
    const dir = join(tempDir('agent-init-'), 'tampered');
    expect((await swarmNode(['agent', 'init', dir, '--agent', AGENT], { env: node.env })).exitCode).toBe(0);
    const uploaded = await swarmNode(['--json', 'agent', 'upload', dir], { env: node.env });
    const digest = uploaded.json.digest as string;

    const refused = await swarmNode(['--json', 'run', AGENT, '--input', 'name=Robert"); DROP TABLE'], { env: node.env });
    expect(refused.exitCode).toBe(2);
    expect(refused.json.error).toMatchObject({
      code: 'input_invalid',
      errors: [{ path: '/input/name', message: expect.stringMatching(/must match/) }],
    });
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100);

    // The service's stored blob is altered (a corrupted disk, a compromised store): the node must not run it.
    const stored = service.db.prepare('SELECT content FROM agent_bundles WHERE digest = ?').get(digest) as { content: Buffer };
    const tampered = Buffer.from(stored.content);
    tampered[tampered.length - 10]! ^= 0xff;
    service.db.prepare('UPDATE agent_bundles SET content = ? WHERE digest = ?').run(tampered, digest);
    const ran = await swarmNode(['--json', 'run', AGENT, '--input', 'name=Ada'], { env: node.env });
    expect(ran.exitCode).toBe(1);
    expect(ran.json.error).toMatchObject({ code: 'failed', charged_cents: 0 });
    expect(JSON.stringify(ran.json.error)).toMatch(
      new RegExp(`bundle ${digest} of ${AGENT} was refused: the downloaded bytes have SHA-256 [0-9a-f]{64}; nothing was installed`),
    );
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100);
    const agentDir = join(node.home, 'var', 'agents', AGENT);
    expect(existsSync(agentDir) ? readdirSync(agentDir) : []).toEqual([]);
  });
});

describe('the upload quota, from the CLI', () => {
  const limited = useSvcApi({ uploadQuota: { maxVersions: 1 } });

  it('refuses an upload over the quota with a remedy that works as printed: agent remove, then upload again', async () => {
    const node = await signedInNode(limited.baseUrl, { label: 'agent-quota', enroll: false });
    const dir = join(tempDir('agent-init-'), 'quota');
    expect((await swarmNode(['agent', 'init', dir, '--agent', AGENT], { env: node.env })).exitCode).toBe(0);
    expect((await swarmNode(['agent', 'upload', dir], { env: node.env })).exitCode).toBe(0);
    bumpVersion(dir, '0.2.0');
    const over = await swarmNode(['agent', 'upload', dir], { env: node.env });
    expect(over.exitCode).toBe(1);
    expect(over.stderr).toMatch(/you have 1 versions stored, the most your quota holds; nothing was stored/);
    // Its one version is current: the remedy says how to make room, naming the version.
    expect(over.stderr).toMatch(
      /make none current \(\S+ swarm-node agent rollback agent_ops_monitor_004 --builtin --base-url \S+\), remove it \(\S+ swarm-node agent remove agent_ops_monitor_004 0\.1\.0 --yes --base-url \S+\), then upload again/,
    );

    // The current version is not removed, off a terminal not without --yes, and then the old one goes.
    const current = await swarmNode(['agent', 'remove', AGENT, '0.1.0', '--yes'], { env: node.env });
    expect([current.exitCode, current.stderr]).toEqual([1, expect.stringMatching(/it is current[\s\S]*swarm-node agent rollback/)]);
    expect((await swarmNode(['agent', 'rollback', AGENT, '--builtin'], { env: node.env })).exitCode).toBe(0);
    const unconfirmed = await swarmNode(['agent', 'remove', AGENT, '0.1.0'], { env: node.env });
    expect([unconfirmed.exitCode, unconfirmed.stderr]).toEqual([
      2,
      expect.stringMatching(/Add --yes to confirm: \S+ swarm-node agent remove agent_ops_monitor_004 0\.1\.0 --yes/),
    ]);
    const removed = await swarmNode(['--json', 'agent', 'remove', AGENT, '0.1.0', '--yes'], { env: node.env });
    expect(removed.exitCode, removed.stderr).toBe(0);
    expect(removed.json).toMatchObject({ agent_id: AGENT, removed: { version: '0.1.0' }, versions: [] });
    const again = await swarmNode(['--json', 'agent', 'upload', dir], { env: node.env });
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.json).toMatchObject({ version: '0.2.0', created: true });
  });

  it("refuses, before sending anything, a schema whose pattern RE2 cannot run, naming the pattern's place", async () => {
    const node = await signedInNode(limited.baseUrl, { label: 'agent-re2', enroll: false });
    const dir = join(tempDir('agent-init-'), 're2');
    expect((await swarmNode(['agent', 'init', dir, '--agent', AGENT], { env: node.env })).exitCode).toBe(0);
    const file = join(dir, 'agent.json');
    const manifest = JSON.parse(readFileSync(file, 'utf8'));
    writeFileSync(
      file,
      JSON.stringify({ ...manifest, input_schema: { type: 'object', properties: { name: { type: 'string', pattern: '^(?!admin)' } } } }),
    );
    const refused = await swarmNode(['--json', 'agent', 'upload', dir], { env: node.env });
    expect(refused.exitCode).toBe(2);
    expect(refused.json.error).toMatchObject({
      code: 'bundle_invalid',
      errors: [{ path: 'agent.json#/input_schema/properties/name/pattern', message: expect.stringMatching(/RE2 runs in linear time/) }],
    });
    expect(limited.db.prepare('SELECT count(*) AS n FROM agent_versions WHERE user_id = ?').get(node.email)).toEqual({ n: 0 });
  });
});
