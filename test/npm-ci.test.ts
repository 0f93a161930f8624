// `npm ci` of a checkout is clean on npm 11 (docs/operations.md "The runtime"): every dependency whose install
// script runs is declared in package.json's allowScripts, so npm lists none as unreviewed. A new dependency with an
// install script fails here until it is reviewed and declared (npm install-scripts approve <pkg>).
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/svc-api.js';

describe('npm ci', () => {
  it('runs no install script that allowScripts does not declare', async (context) => {
    const result = await execa('npm', ['install-scripts', 'ls', '--json'], { cwd: REPO_ROOT, reject: false, timeout: 60_000 });
    // npm before 11 has no allow list to check, nor any warning to print.
    if (result.exitCode !== 0 && /Unknown command/i.test(`${result.stdout}${result.stderr}`)) context.skip();
    expect(result.exitCode, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ allowScripts: [] });
  });
});
