// An agent's uid claim and its state directory as agent-exec makes them under systemd (docs/operations.md "Agent
// isolation"), on this host's file system as root: agent-exec never takes a uid over from a home it cannot see, and
// gives the agent a state directory of its own, taking over a tree the node's former dynamic user left (handed to
// root by systemd) without following a link or giving away a file linked from elsewhere. The whole path runs under
// systemd in test/install/systemd-nspawn.test.ts.
import { chmodSync, linkSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, lchownSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AGENT_UID_BASE, agentIdentity } from '../../src/node/runner/agent-ids.js';
import { prepareAgentStateDir } from '../../src/node/runner/agent-state-dir.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';

afterAll(() => removeTempDirs());

describe('agent uid claims', () => {
  it("are given to another home once the claiming home's var/ is gone, but never by one that does not reclaim (agent-exec)", () => {
    const claims = tempDir('claims-');
    const gone = tempDir('home-');
    mkdirSync(join(gone, 'var'));
    expect(agentIdentity(gone, 'agent_a', claims)).toEqual({ uid: AGENT_UID_BASE, gid: AGENT_UID_BASE });
    rmSync(join(gone, 'var'), { recursive: true });
    const other = tempDir('home-');
    mkdirSync(join(other, 'var'));
    // Inside the agent unit a home it cannot see looks gone: it claims the next free uid instead.
    expect(agentIdentity(other, 'agent_b', claims, { reclaim: false }).uid).toBe(AGENT_UID_BASE + 1);
    expect(JSON.parse(readFileSync(join(claims, String(AGENT_UID_BASE)), 'utf8'))).toMatchObject({ agent_id: 'agent_a' });
    expect(agentIdentity(other, 'agent_c', claims).uid).toBe(AGENT_UID_BASE);
  });

  it("of a systemd node hold while its agent's state outside the home is there (uninstall --purge leaves it)", () => {
    const claims = tempDir('claims-');
    const purged = tempDir('home-');
    mkdirSync(join(purged, 'var'));
    const state = join(tempDir('agents-'), 'agent_a');
    mkdirSync(state);
    expect(agentIdentity(purged, 'agent_a', claims, { reclaim: false, keeps: state }).uid).toBe(AGENT_UID_BASE);
    rmSync(join(purged, 'var'), { recursive: true });
    const other = tempDir('home-');
    mkdirSync(join(other, 'var'));
    expect(agentIdentity(other, 'agent_b', claims).uid).toBe(AGENT_UID_BASE + 1);
    rmSync(state, { recursive: true });
    expect(agentIdentity(other, 'agent_c', claims).uid).toBe(AGENT_UID_BASE);
  });
});

describe.skipIf(process.getuid?.() !== 0)("an agent's state directory under systemd", () => {
  const agent = { uid: AGENT_UID_BASE + 900, gid: AGENT_UID_BASE + 900 };

  it('is made 0700 for the agent, a link planted where it goes removed', () => {
    const parent = tempDir('agents-');
    symlinkSync('/etc', join(parent, 'agent_a'));
    const dir = prepareAgentStateDir(parent, 'agent_a', agent);
    const made = lstatSync(dir);
    expect([made.isDirectory(), made.uid, made.gid, made.mode & 0o7777]).toEqual([true, agent.uid, agent.gid, 0o700]);
    expect(statSync('/etc').uid).toBe(0);
  });

  it("takes over root's tree without following links; a file with other links stays root's", () => {
    const parent = tempDir('agents-');
    const outside = join(tempDir('outside-'), 'file');
    writeFileSync(outside, "not the agent's");
    const dir = join(parent, 'agent_a');
    mkdirSync(join(dir, 'deep'), { recursive: true });
    writeFileSync(join(dir, 'deep', 'index'), 'kept');
    chmodSync(join(dir, 'deep'), 0o000);
    symlinkSync(outside, join(dir, 'link'));
    linkSync(outside, join(dir, 'hard'));
    prepareAgentStateDir(parent, 'agent_a', agent);
    for (const path of [dir, join(dir, 'deep'), join(dir, 'deep', 'index'), join(dir, 'link')])
      expect(lstatSync(path).uid, path).toBe(agent.uid);
    expect(statSync(outside).uid).toBe(0);
    expect(readFileSync(join(dir, 'deep', 'index'), 'utf8')).toBe('kept');
  });

  it('refuses a directory of another uid, saying how to hand it over', () => {
    const parent = tempDir('agents-');
    mkdirSync(join(parent, 'agent_a'));
    lchownSync(join(parent, 'agent_a'), AGENT_UID_BASE + 901, AGENT_UID_BASE + 901);
    expect(() => prepareAgentStateDir(parent, 'agent_a', agent)).toThrow(
      `belongs to uid 61001, not to this agent's uid 61000: as root, chown -R 61000:61000 ${join(parent, 'agent_a')}`,
    );
  });
});
