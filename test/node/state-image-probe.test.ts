// A root node finds out before it takes a run whether its runs' state images can be made here
// (src/node/runner/state-image-probe.ts): where they cannot, every run of bubblewrap's root mode and of the unshare
// mode would fail at its start, so `auto` and `unshare` refuse at once, naming what is missing. The probe is tried
// once per process: this file gives its process a PATH without mkfs.ext4 before the first try.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SvcError } from '../../src/contract/errors.js';
import { resolveIsolation, sandboxSupport, unshareSupport } from '../../src/node/runner/isolation.js';
import { stateImageSupport } from '../../src/node/runner/state-image-probe.js';

const root = process.getuid?.() === 0;
const TOOLS = ['bwrap', 'setpriv', 'unshare', 'truncate', 'debugfs', 'mount', 'flock', 'mkfs.ext4'];
const found = (tool: string) => {
  try {
    return execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
};
const allThere = TOOLS.every((tool) => found(tool) !== '');
const path = process.env.PATH;

/** A PATH of links to each tool but mkfs.ext4. */
function pathWithout(tool: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'probe-path-'));
  for (const each of TOOLS.filter((name) => name !== tool)) symlinkSync(found(each), join(dir, each));
  return dir;
}

afterAll(() => {
  process.env.PATH = path;
});

describe.skipIf(!root || !allThere)("a root node's state images", () => {
  it('are made and mounted here, where the tools and loop devices are', () => {
    expect(stateImageSupport({ PATH: path })).toEqual({ available: true });
  });

  it('without mkfs.ext4: auto and unshare refuse at once, naming the tool and its package', () => {
    process.env.PATH = pathWithout('mkfs.ext4');
    expect(sandboxSupport().available && unshareSupport().available).toBe(true);
    for (const wanted of ['auto', 'bubblewrap', 'unshare'] as const) {
      let refused: unknown;
      try {
        resolveIsolation(wanted, '/nonexistent/agent.sock', 'optional');
      } catch (error) {
        refused = error;
      }
      expect(refused, wanted).toBeInstanceOf(SvcError);
      expect((refused as SvcError).message).toContain('mkfs.ext4 is not installed (apt-get install e2fsprogs)');
      expect((refused as SvcError).remedy).toContain('apt-get install e2fsprogs');
    }
    // none never needs an image.
    expect(resolveIsolation('none', '/nonexistent/agent.sock')).toBe('none');
  });
});
