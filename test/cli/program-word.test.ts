// How a printed `sudo` command names the program (src/lib/program-word.ts): sudo's secure_path, not the user's PATH,
// decides what `sudo swarm-node` runs, so before install a remedy names the package's own bin/swarm-node.
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { programWord, programWordForSudo, searchPath } from '../../src/lib/program-word.js';
import { tempDir } from '../helpers/temp.js';

/** An unpacked package: bin/swarm-node.js and, in a release, the wrapper bin/swarm-node beside it. */
function unpackedPackage(parent: string, name: string, wrapper = true): string {
  const bin = join(parent, name, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'swarm-node.js'), '#!/usr/bin/env node\n');
  if (wrapper) writeFileSync(join(bin, 'swarm-node'), '#!/bin/sh\n');
  for (const file of wrapper ? ['swarm-node.js', 'swarm-node'] : ['swarm-node.js']) chmodSync(join(bin, file), 0o755);
  return join(bin, 'swarm-node.js');
}

describe('the program a sudo command names', () => {
  it('is the package wrapper as typed from where the person stands when sudo would not find swarm-node', () => {
    const dir = tempDir();
    const entry = unpackedPackage(dir, 'swarm-node-0.2.0-linux-x64');
    const emptySudoPath = [join(dir, 'sbin-empty')];
    expect(programWordForSudo(entry, join(dir, 'swarm-node-0.2.0-linux-x64'), emptySudoPath)).toBe('./bin/swarm-node');
    expect(programWordForSudo(entry, dir, emptySudoPath)).toBe('./swarm-node-0.2.0-linux-x64/bin/swarm-node');
    expect(programWordForSudo(entry, '/', emptySudoPath)).toBe('./' + join(dir, 'swarm-node-0.2.0-linux-x64/bin/swarm-node').slice(1));
    const elsewhere = tempDir();
    expect(programWordForSudo(entry, elsewhere, emptySudoPath)).toBe(join(dir, 'swarm-node-0.2.0-linux-x64/bin/swarm-node'));
  });

  it('is bin/swarm-node.js in a checkout, which has no wrapper', () => {
    const dir = tempDir();
    const entry = unpackedPackage(dir, 'checkout', false);
    expect(programWordForSudo(entry, tempDir(), [join(dir, 'none')])).toBe(entry);
  });

  it('is swarm-node once sudo finds this package there, and the path while it finds another release', () => {
    const dir = tempDir();
    const entry = unpackedPackage(join(dir, 'opt'), 'releases/0.2.0');
    const other = unpackedPackage(join(dir, 'opt'), 'releases/0.1.0');
    const sudoPath = join(dir, 'usr-local-bin');
    mkdirSync(sudoPath);
    symlinkSync(join(other, '..', 'swarm-node'), join(sudoPath, 'swarm-node'));
    expect(programWordForSudo(entry, tempDir(), [sudoPath])).toBe(join(entry, '..', 'swarm-node'));
    const current = join(dir, 'opt', 'current');
    symlinkSync(join(dir, 'opt', 'releases/0.2.0'), current);
    const installed = join(dir, 'installed-bin');
    mkdirSync(installed);
    symlinkSync(join(current, 'bin', 'swarm-node'), join(installed, 'swarm-node'));
    expect(programWordForSudo(entry, tempDir(), [installed, sudoPath])).toBe('swarm-node');
    // The first the search finds is what runs: ours behind the other release's does not count.
    expect(programWordForSudo(entry, tempDir(), [sudoPath, installed])).toBe(join(entry, '..', 'swarm-node'));
  });

  it('is swarm-node when the running script is not ours (a test runner building the program in its process)', () => {
    expect(programWordForSudo(process.argv[1], process.cwd(), [])).toBe('swarm-node');
    expect(programWordForSudo(undefined, process.cwd(), [])).toBe('swarm-node');
  });
});

describe('the program a command the person types names', () => {
  it('is the path as typed in a checkout, whose programs are on no PATH, and the bare name once one links them', () => {
    const dir = tempDir();
    const checkout = join(dir, 'checkout');
    const entry = unpackedPackage(dir, 'checkout', false);
    writeFileSync(join(checkout, 'bin', 'svc-api.js'), '#!/usr/bin/env node\n');
    const path = searchPath(`${join(dir, 'empty')}:/usr/bin`);
    expect(programWord('swarm-node', entry, checkout, path)).toBe('./bin/swarm-node.js');
    // svc-api names its sibling as well: `svc-api sandbox confirm` prints the swarm-node login that follows.
    expect(programWord('svc-api', entry, checkout, path)).toBe('./bin/svc-api.js');
    const linked = join(dir, 'linked');
    mkdirSync(linked);
    symlinkSync(entry, join(linked, 'swarm-node'));
    expect(programWord('swarm-node', entry, checkout, searchPath(`${linked}:/usr/bin`))).toBe('swarm-node');
    expect(programWord('svc-api', entry, checkout, searchPath(`${linked}:/usr/bin`))).toBe('./bin/svc-api.js');
  });

  it('reads an unset or empty PATH as no directory', () => {
    expect(searchPath(undefined)).toEqual([]);
    expect(searchPath('::/bin:')).toEqual(['/bin']);
  });
});
