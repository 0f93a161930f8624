// A node's database appears whole or not at all (src/lib/sqlite.ts createWhole): several commands started at once
// on a fresh node must never find an empty file that they all switch to WAL together, the race that answered one
// of five concurrent registers "database is locked" (test/cli/robustness.test.ts).
import { existsSync, openSync, readSync, closeSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeEnv, swarmNode } from '../helpers/cli.js';

/** Bytes 18 and 19 of a SQLite file's header are its write and read versions: 2 for WAL, 1 for a rollback journal. */
function headerVersions(file: string): { size: number; write: number; read: number } {
  const header = Buffer.alloc(100);
  const fd = openSync(file, 'r');
  try {
    const size = readSync(fd, header, 0, 100, 0);
    return { size, write: header[18]!, read: header[19]! };
  } finally {
    closeSync(fd);
  }
}

describe('a new node database', () => {
  it('is already in WAL mode and migrated the moment its name exists, and no draft is left beside it', async () => {
    const node = nodeEnv('http://127.0.0.1:9');
    const file = join(node.home, 'var', 'swarm-node.db');
    const command = swarmNode(['--json', 'list'], { env: node.env });
    // Look as often as the machine allows from the moment the command starts: the first sight of the name is what a
    // second command starting then would open. The bound only ends a test whose command never makes the file.
    const deadline = Date.now() + 60_000;
    while (!existsSync(file) && Date.now() < deadline) {
      /* spin */
    }
    const seen = headerVersions(file);
    const result = await command;
    expect(result.exitCode, result.stderr).toBe(0);
    expect(seen).toEqual({ size: 100, write: 2, read: 2 });
    expect(readdirSync(join(node.home, 'var')).filter((name) => name.includes('.new-'))).toEqual([]);
  });
});
