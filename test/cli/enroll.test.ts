// swarm-node enroll and swarm-node credential rotate (docs/api.md "Credential rotation"): a home becomes a node of
// its user with a credential of its own, kept 0600, never printed; the credential is replaced at the service and on
// disk. The built binary against the real svc-api.
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readCredentials } from '../../src/node/identity/credentials.js';
import { nodeEnv, swarmNode } from '../helpers/cli.js';
import { MovableClock } from '../helpers/clock.js';
import { activatedSession } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { signedInNode, walletBalance } from './fixtures.js';

const AGENT = 'agent_ops_monitor_004';
const clock = new MovableClock();
const service = useSvcApi({ clock });

function tokenFile(token: string): string {
  const file = join(tempDir('deploy-token-'), 'token');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return file;
}

const credentialsOf = (home: string) => readCredentials(join(home, 'etc', 'credentials.json'));
const modeOf = (home: string): number => statSync(join(home, 'etc', 'credentials.json')).mode & 0o777;

/** Every file under the home that holds `secret` (logs, database, config included), relative to the home. */
function filesHolding(home: string, secret: string): string[] {
  return readdirSync(home, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && readFileSync(join(entry.parentPath, entry.name)).includes(secret))
    .map((entry) => join(entry.parentPath, entry.name).slice(home.length + 1))
    .sort();
}

/** A node call with `credential` as the bearer: the service's word on whether it is this node's credential. */
async function nodeCall(credential: string): Promise<number> {
  return (await httpRequest(`${service.baseUrl}/v1/swarm/nodes/self/agents`, { token: credential })).status;
}

describe('swarm-node enroll', () => {
  it('with --deploy-token-file: enrolls this home (credential 0600, never printed); a second enroll is refused naming the node', async () => {
    const email = uniqueEmail('enroll-file');
    const { deploy_token } = await activatedSession(service.baseUrl, email);
    const node = nodeEnv(service.baseUrl);
    const enrolled = await swarmNode(['--json', 'enroll', '--deploy-token-file', tokenFile(deploy_token)], { env: node.env });
    expect(enrolled.exitCode, enrolled.stderr).toBe(0);
    const credentialsFile = join(node.home, 'etc', 'credentials.json');
    expect(enrolled.json).toEqual({
      node_id: expect.any(String),
      user_id: email,
      tier_id: 'svc_starter_agents',
      credentials_file: credentialsFile,
      deploy_token_from: 'given',
    });
    const stored = credentialsOf(node.home).node!;
    expect(stored).toMatchObject({
      node_id: enrolled.json.node_id,
      user_id: email,
      tier_id: 'svc_starter_agents',
      credential: expect.stringMatching(/^svcn_[A-Za-z0-9_-]{43}$/),
    });
    expect(modeOf(node.home)).toBe(0o600);
    expect(enrolled.stdout + enrolled.stderr).not.toContain(deploy_token);
    expect(enrolled.stdout + enrolled.stderr).not.toContain(stored.credential);
    expect(filesHolding(node.home, stored.credential!)).toEqual(['etc/credentials.json']);
    expect(filesHolding(node.home, deploy_token)).toEqual([]);
    expect(service.db.prepare('SELECT user_id FROM nodes WHERE node_id = ?').get(stored.node_id)).toEqual({ user_id: email });
    expect(await nodeCall(stored.credential!)).toBe(200);
    const human = await swarmNode(['enroll', '--deploy-token-file', tokenFile(deploy_token)], { env: nodeEnv(service.baseUrl).env });
    expect(human.exitCode).toBe(4);

    // Enrolled already: exit 2 with the node's id, before any token is spent; the credential stays as it was.
    const { deploy_token: unspent } = await activatedSession(service.baseUrl, email);
    const again = await swarmNode(['--json', 'enroll', '--deploy-token-file', tokenFile(unspent)], { env: node.env });
    expect(again.exitCode).toBe(2);
    expect(again.json.error).toMatchObject({
      code: 'usage',
      node_id: stored.node_id,
      message: expect.stringContaining(stored.node_id),
      remedy: expect.stringContaining('swarm-node credential rotate'),
    });
    expect(credentialsOf(node.home).node).toEqual(stored);
    // Neither a token nor a sign-in on an enrolled home: it is told it is a node already, not to sign in.
    const bare = await swarmNode(['--json', 'enroll'], { env: node.env });
    expect(bare.exitCode).toBe(2);
    expect(bare.json.error).toMatchObject({ code: 'usage', node_id: stored.node_id });
    // The token was not spent: another home enrolls with it (from SVC_DEPLOY_TOKEN this time).
    const other = nodeEnv(service.baseUrl, { SVC_DEPLOY_TOKEN: unspent });
    const second = await swarmNode(['--json', 'enroll'], { env: other.env });
    expect(second.exitCode, second.stdout).toBe(0);
    expect(second.json).toMatchObject({ user_id: email, deploy_token_from: 'given' });
    expect(second.json.node_id).not.toBe(stored.node_id);
  });

  it('with the JWT only: asks the service for a deploy token for one more node; the JWT stays beside the credential, 0600', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'enroll-jwt', enroll: false });
    const before = credentialsOf(node.home);
    const enrolled = await swarmNode(['--json', 'enroll'], { env: node.env });
    expect(enrolled.exitCode, enrolled.stderr).toBe(0);
    expect(enrolled.json).toMatchObject({ user_id: node.email, tier_id: 'svc_starter_agents', deploy_token_from: 'sign_in' });
    const after = credentialsOf(node.home);
    expect(after.jwt).toEqual(before.jwt);
    expect(after.node?.node_id).toBe(enrolled.json.node_id);
    expect(modeOf(node.home)).toBe(0o600);
    expect(enrolled.stdout + enrolled.stderr).not.toContain(node.token);
    expect(enrolled.stdout + enrolled.stderr).not.toContain(after.node!.credential!);
    const fleet = await apiClient(service.baseUrl).get('/v1/swarm/nodes', node.token);
    expect(fleet.body.nodes.map((n: { node_id: string }) => n.node_id)).toEqual([enrolled.json.node_id]);

    // Neither a deploy token nor a JWT: exit 4, saying how to give either; nothing is written.
    const bare = nodeEnv(service.baseUrl);
    const neither = await swarmNode(['--json', 'enroll'], { env: bare.env });
    expect(neither.exitCode).toBe(4);
    expect(neither.json.error).toMatchObject({
      code: 'not_signed_in',
      message: 'no deploy token was given, and this home is not signed in',
      remedy: expect.stringMatching(/swarm-node login.*--deploy-token-file/),
    });
    expect(credentialsOf(bare.home)).toEqual({});
  });

  it('refuses a deploy token as an argument (exit 2, not echoed, not spent), a used one (4) and one of another shape (2)', async () => {
    const { deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('enroll-arg'));
    const node = nodeEnv(service.baseUrl);
    const argument = await swarmNode(['--json', 'enroll', '--deploy-token', deploy_token], { env: node.env });
    expect(argument.exitCode).toBe(2);
    expect(argument.json.error).toMatchObject({
      code: 'usage',
      message: expect.stringContaining('never taken as an argument'),
      remedy: expect.stringContaining('--deploy-token-file'),
    });
    expect(argument.stdout + argument.stderr).not.toContain(deploy_token);
    expect(credentialsOf(node.home).node).toBeUndefined();

    const enrolled = await swarmNode(['enroll', '--deploy-token-file', tokenFile(deploy_token)], { env: node.env });
    expect(enrolled.exitCode, enrolled.stderr).toBe(0);
    expect(enrolled.stdout).toMatch(
      /^Enrolled this home as node \S+ of .+ \(svc_starter_agents\); its credential is in .+credentials\.json \(mode 0600\)\.$/,
    );

    const used = nodeEnv(service.baseUrl);
    const refused = await swarmNode(['--json', 'enroll', '--deploy-token-file', tokenFile(deploy_token)], { env: used.env });
    expect(refused.exitCode).toBe(4);
    expect(refused.json.error.code).toBe('deploy_token_invalid');
    expect(refused.stdout + refused.stderr).not.toContain(deploy_token);
    expect(credentialsOf(used.home)).toEqual({});

    const garbage = await swarmNode(['--json', 'enroll', '--deploy-token-file', tokenFile('not a token, but a secret: hunter2')], {
      env: used.env,
    });
    expect(garbage.exitCode).toBe(2);
    expect(garbage.stdout + garbage.stderr).not.toContain('hunter2');
  });

  it('refuses an expired and a forged deploy token: exit 4 deploy_token_invalid, nothing written, no node at the service', async () => {
    const email = uniqueEmail('enroll-expired');
    const { deploy_token } = await activatedSession(service.baseUrl, email);
    // Forged: the shape of a deploy token, never issued.
    const forged = randomBytes(32).toString('base64url');
    clock.advance(15 * 60 * 1000 + 1_000);
    try {
      for (const token of [deploy_token, forged]) {
        const node = nodeEnv(service.baseUrl);
        const refused = await swarmNode(['--json', 'enroll', '--deploy-token-file', tokenFile(token)], { env: node.env });
        expect(refused.exitCode).toBe(4);
        expect(refused.json.error).toMatchObject({
          code: 'deploy_token_invalid',
          message: expect.stringContaining('unknown, expired, revoked or already used'),
        });
        expect(refused.stdout + refused.stderr).not.toContain(token);
        expect(existsSync(join(node.home, 'etc', 'credentials.json'))).toBe(false);
        expect(filesHolding(node.home, token)).toEqual([]);
      }
    } finally {
      clock.advance(-(15 * 60 * 1000 + 1_000));
    }
    expect(service.db.prepare('SELECT COUNT(*) AS n FROM nodes WHERE user_id = ?').get(email)).toEqual({ n: 0 });
  });
});

describe('swarm-node credential rotate', () => {
  it('replaces the credential: the old one is refused by the service, the new one works, 0600, never printed', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'rotate' });
    const old = credentialsOf(node.home).node!;
    const rotated = await swarmNode(['--json', 'credential', 'rotate'], { env: node.env });
    expect(rotated.exitCode, rotated.stderr).toBe(0);
    expect(rotated.json).toEqual({ node_id: old.node_id, credentials_file: join(node.home, 'etc', 'credentials.json'), confirmed: true });
    const now = credentialsOf(node.home);
    expect(now.node).toEqual({ ...old, credential: expect.stringMatching(/^svcn_/) });
    expect(now.node!.credential).not.toBe(old.credential);
    expect(now.jwt).toBeDefined();
    expect(modeOf(node.home)).toBe(0o600);
    expect(rotated.stdout + rotated.stderr).not.toContain(now.node!.credential);
    expect(rotated.stdout + rotated.stderr).not.toContain(old.credential);
    expect(filesHolding(node.home, now.node!.credential!)).toEqual(['etc/credentials.json']);
    expect(filesHolding(node.home, old.credential!)).toEqual([]);

    expect(await nodeCall(old.credential!)).toBe(401);
    expect(await nodeCall(now.node!.credential!)).toBe(200);
    // The node works on with it: its own run goes through with the new credential.
    const run = await swarmNode(['--json', 'run', AGENT], { env: node.env });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json).toMatchObject({ node_id: old.node_id, charged_cents: 4 });
    expect(await walletBalance(service.baseUrl, node.token)).toBe(96);

    const human = await swarmNode(['credential', 'rotate'], { env: node.env });
    expect(human.exitCode, human.stderr).toBe(0);
    expect(human.stdout).toBe(`Rotated the credential of node ${old.node_id}; every earlier one no longer works.`);
    expect(await nodeCall(now.node!.credential!)).toBe(401);
  });

  it('needs a sign-in within 15 minutes: off a terminal an older one is exit 4 with the login that renews it, and nothing changes', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'rotate-late' });
    const before = credentialsOf(node.home);
    clock.advance(16 * 60 * 1000);
    try {
      const late = await swarmNode(['--json', 'credential', 'rotate'], { env: node.env });
      expect(late.exitCode).toBe(4);
      expect(late.json.error).toMatchObject({
        code: 'step_up_required',
        remedy: expect.stringContaining(`swarm-node login --email ${node.email}`),
      });
      expect(credentialsOf(node.home)).toEqual(before);
      expect(await nodeCall(before.node!.credential!)).toBe(200);
    } finally {
      clock.advance(-16 * 60 * 1000);
    }
  });

  it('on a home that is not an enrolled node: exit 4 not_enrolled with how to enroll', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'rotate-bare', enroll: false });
    const result = await swarmNode(['--json', 'credential', 'rotate'], { env: node.env });
    expect(result.exitCode).toBe(4);
    expect(result.json.error).toMatchObject({ code: 'not_enrolled', remedy: expect.stringContaining('swarm-node enroll') });
    expect(credentialsOf(node.home).node).toBeUndefined();
  });
});
