// Every command's --help, found by walking the program's own command tree (a new command is covered without
// editing this file): it exits 0, lists the global options, and shows an example.
import { describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { EXIT_CODES } from '../../src/cli/exit-codes.js';
import { buildProgram } from '../../src/cli/program.js';
import { swarmNode } from '../helpers/cli.js';
import { spawnPty, stagedSwarmNodeBin } from '../helpers/pty.js';

function commandPaths(command: Command, prefix: string[] = []): string[][] {
  return command.commands.flatMap((sub) => {
    const path = [...prefix, sub.name()];
    return [path, ...commandPaths(sub, path)];
  });
}

const GLOBAL_OPTIONS = ['--json', '--base-url <url>', '--no-color'];

describe('--help of every command', () => {
  const paths = [[], ...commandPaths(buildProgram())];

  it('the walk finds the nested commands too', () => {
    expect(paths.map((path) => path.join(' '))).toEqual(expect.arrayContaining(['', 'run', 'config', 'config get', 'wallet login']));
  });

  it.each(paths.map((path) => [path.join(' ') || '(the program)', path] as const))(
    '%s: exits 0, lists the global options, has an example',
    async (_name, path) => {
      const result = await swarmNode([...path, '--help']);
      expect(result.exitCode, result.stderr).toBe(0);
      const options = path.length === 0 ? result.stdout : result.stdout.slice(result.stdout.indexOf('Global Options:'));
      expect(result.stdout.includes('Global Options:') || path.length === 0, result.stdout).toBe(true);
      for (const option of GLOBAL_OPTIONS) expect(options, `${path.join(' ')} --help`).toContain(option);
      expect(result.stdout, `${path.join(' ')} --help`).toMatch(/\nExample:\n +\$ \S/);
    },
  );
});

describe('the exit codes in swarm-node --help', () => {
  it('lists every documented exit code, from the one table the CLI maps errors with', async () => {
    const help = (await swarmNode(['--help'])).stdout;
    const listed = help.slice(help.indexOf('Exit codes:'), help.indexOf('Example:')).replace(/\s+/g, ' ');
    for (const [name, code] of Object.entries(EXIT_CODES)) expect(listed, `${name} (${code})`).toMatch(new RegExp(`(: |, )${code} `));
  });
});

describe('--help on a terminal', () => {
  // The shell prints a mark after swarm-node exits and waits for the test to end it: every byte of the help is read
  // before the mark, never lost to node-pty giving up on a terminal that closes as its program exits.
  const helpOn = async (args: string[], columns: number): Promise<string> => {
    const session = spawnPty(
      '/bin/sh',
      [
        '-c',
        'stty cols "$1" && shift && "$@"; echo "<<exit $?>>"; exec sleep 60',
        'sh',
        String(columns),
        process.execPath,
        stagedSwarmNodeBin(),
        ...args,
      ],
      {},
    );
    try {
      const shown = await session.waitFor(/<<exit \d+>>/, 30_000);
      expect(shown, shown).toContain('<<exit 0>>');
      expect(shown).toContain('Usage: swarm-node [options] [command]');
      return shown.slice(0, shown.lastIndexOf('<<exit'));
    } finally {
      session.kill();
    }
  };

  it("a wide one gets the program's help at 80 columns, which bin/swarm-node.js prints for --help alone", async () => {
    const written = await helpOn(['--help'], 160);
    expect(written).toBe(await helpOn(['--no-color', '--help'], 160));
    expect(written).toBe(await helpOn(['--no-color', '--help'], 80));
  });

  it('a narrower one gets it wrapped to its width, from the program', async () => {
    const narrow = await helpOn(['--help'], 50);
    expect(narrow).toBe(await helpOn(['--no-color', '--help'], 50));
    expect(narrow).not.toBe(await helpOn(['--help'], 80));
  });
});
