import { chmodSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { onlyRootsWay, otherHomePaths } from '../../src/node/runner/unit-hidden-homes.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';

afterAll(() => removeTempDirs());

// What agent-exec covers under systemd (the nspawn test runs it for real): the mount plan's choice of paths.
describe("the other homes an agent unit's run must not see", () => {
  const install = tempDir('install-');
  for (const name of ['gpu', 'spare']) mkdirSync(join(install, 'nodes', name), { recursive: true });

  it('for the installed node: its named nodes whole and the homes elsewhere, never its own home', () => {
    expect(otherHomePaths(install, install, ['/srv/elsewhere', install, '/']).sort()).toEqual(
      [join(install, 'nodes', 'gpu'), join(install, 'nodes', 'spare'), '/srv/elsewhere'].sort(),
    );
  });

  it("for a named node: the installed node's etc/ and var/ only (it holds this home and the release), and its siblings whole", () => {
    const gpu = join(install, 'nodes', 'gpu');
    expect(otherHomePaths(`${gpu}/`, install, [gpu, '/srv/elsewhere']).sort()).toEqual(
      [join(install, 'etc'), join(install, 'var'), join(install, 'nodes', 'spare'), '/srv/elsewhere'].sort(),
    );
  });

  it('never what the run needs nor what holds it, and nothing at the top of the tree: a claim naming /var/lib or /usr is skipped', () => {
    const needed = ['/var/lib/svc-swarm-node-agents', '/tmp/run'];
    expect(
      otherHomePaths(install, install, ['/var/lib', '/var/lib/svc-swarm-node-agents', '/usr', '/tmp', '/srv/elsewhere'], needed).sort(),
    ).toEqual([join(install, 'nodes', 'gpu'), join(install, 'nodes', 'spare'), '/srv/elsewhere'].sort());
  });

  it.skipIf(process.getuid?.() !== 0)('covers a path only where no one but root could put a link on its way (mount follows links)', () => {
    const base = tempDir('hidden-way-');
    const home = join(base, 'home');
    mkdirSync(home);
    expect(onlyRootsWay(home)).toBe(true);
    symlinkSync(home, join(base, 'link'));
    expect(onlyRootsWay(join(base, 'link'))).toBe(false);
    const open = join(base, 'open');
    mkdirSync(join(open, 'home'), { recursive: true });
    chmodSync(open, 0o777);
    expect(onlyRootsWay(join(open, 'home'))).toBe(false);
    chmodSync(open, 0o1777);
    expect(onlyRootsWay(join(open, 'home'))).toBe(true);
    expect(onlyRootsWay(join(base, 'absent'))).toBe(false);
  });
});
