// A one-shot command's requests travel over Node's own http; only the daemon loads undici, whose WebAssembly HTTP
// parser cost every `wallet` or `run` ~190 ms at exit and 45 MB (src/node/service/http/transport.ts). What a
// process loaded is read from process.moduleLoadList at its exit: npm undici brings Node's internal copy with it.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runProgram } from '../helpers/cli.js';
import { REPO_ROOT, SWARM_NODE_BIN, useSvcApi } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { signedInNode } from './fixtures.js';

const service = useSvcApi();

/** `node <args>` with a preload that writes the built-in modules the process loaded, when it exits. */
async function modulesLoaded(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ exitCode: number | undefined; modules: string[] }> {
  const dir = tempDir('module-list-');
  const list = join(dir, 'modules.txt');
  const hook = join(dir, 'hook.mjs');
  writeFileSync(
    hook,
    `import { writeFileSync } from 'node:fs';\nprocess.on('exit', () => writeFileSync(${JSON.stringify(list)}, process.moduleLoadList.join('\\n')));\n`,
  );
  const result = await runProgram('node', ['--import', hook, ...args], { env });
  return { exitCode: result.exitCode, modules: readFileSync(list, 'utf8').split('\n') };
}

describe('a one-shot command', () => {
  it('talks to the service without loading undici', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'one-shot', enroll: false });
    const wallet = await modulesLoaded([SWARM_NODE_BIN, '--json', 'wallet'], node.env);
    expect(wallet.exitCode).toBe(0);
    expect(wallet.modules).toContain('NativeModule http');
    expect(wallet.modules.filter((name) => name.includes('undici'))).toEqual([]);

    // The probe sees undici when it is loaded, so the check above can fail.
    const probe = join(tempDir('undici-probe-'), 'probe.mjs');
    writeFileSync(probe, `await import(${JSON.stringify(join(REPO_ROOT, 'node_modules', 'undici', 'index.js'))});\n`);
    expect((await modulesLoaded([probe])).modules.filter((name) => name.includes('undici'))).not.toEqual([]);
  });
});
