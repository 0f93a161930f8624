import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { otherHomePaths } from '../../src/node/runner/unit-hidden-homes.js';
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
});
