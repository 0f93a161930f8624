// agent_dev_review_012 on a real repository made here, with commits holding each thing it must flag.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { inputSchemaValidator, runAgentProcess } from './agent-process.js';

const AGENT = 'agent_dev_review_012';

// Credentials in the shapes the agent looks for, assembled so this file itself holds none.
const PEM_HEADER = ['-----BEGIN', 'RSA PRIVATE KEY-----'].join(' ');
const AWS_KEY_ID = ['AKIA', 'IOSFODNN7EXAMPLE'].join('');
const GITHUB_TOKEN = ['ghp', 'aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5'].join('_');

interface Finding {
  kind: string;
  severity: string;
  file: string;
  line?: number;
  rule?: string;
  code?: string;
  message: string;
  excerpt?: string;
}

let repo: string;
let badCommit: string;

async function gitIn(cwd: string, ...args: string[]): Promise<string> {
  const result = await execa('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', '-c', 'init.defaultBranch=main', ...args], { cwd, env: { HOME: cwd } });
  return result.stdout;
}

function write(path: string, text: string | Buffer): void {
  mkdirSync(dirname(join(repo, path)), { recursive: true });
  writeFileSync(join(repo, path), text);
}

beforeAll(async () => {
  repo = tempDir('review-repo-');
  await gitIn(repo, 'init', '-q');
  write('README.md', '# Demo\n\nHello.\n');
  write('scripts/ok.sh', '#!/bin/sh\necho $greeting\n');
  await gitIn(repo, 'add', '.');
  await gitIn(repo, 'commit', '-q', '-m', 'first');

  write('config/id_rsa', `${PEM_HEADER}\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn\n-----END RSA PRIVATE KEY-----\n`);
  write('src/app.js', [
    'export const region = "eu-west-1";',
    '// TODO: drop the debug flag before release',
    `const awsKeyId = "${AWS_KEY_ID}";`,
    `const token = '${GITHUB_TOKEN}';`,
    'const password = "hunter2hunter2";',
    'const apiKey = process.env.API_KEY; // FIXME read from the vault',
    'const secret = "changeme";',
    '',
  ].join('\n'));
  write('notes.md', ['# Notes', '', '<<<<<<< HEAD', 'ours', '=======', 'theirs', '>>>>>>> feature', ''].join('\n'));
  write('heading.md', ['Title', '=======', '', 'A setext heading is no conflict.', ''].join('\n'));
  write('assets/blob.bin', randomBytes(2 * 1024 * 1024));
  write('assets/small.bin', randomBytes(1024));
  write('scripts/deploy.sh', '#!/bin/sh\nrm -rf $1/*\n');
  write('scripts/ok.sh', '#!/bin/sh\necho $greeting\ncd $target\n');
  await gitIn(repo, 'add', '.');
  await gitIn(repo, 'commit', '-q', '-m', 'the bad commit');
  badCommit = (await gitIn(repo, 'rev-parse', 'HEAD')).trim();

  write('README.md', '# Demo\n\nHello, world.\n');
  await gitIn(repo, 'commit', '-q', '-am', 'polish the readme');
});

afterAll(() => removeTempDirs());

describe('agent_dev_review_012', () => {
  it('flags each secret, conflict marker, large binary, shellcheck issue and TODO of a commit at its file and line', async () => {
    const run = await runAgentProcess(AGENT, { repo, rev: badCommit });
    expect(run.exitCode, run.stderr).toBe(0);
    const out = run.json;
    const findings = out.findings as Finding[];
    const at = (kind: string, file: string) => findings.filter((finding) => finding.kind === kind && finding.file === file).map((finding) => finding.line ?? null);

    expect(out.head).toBe(badCommit);
    expect(out.commits).toBe(1);
    expect(out.summary).toBe(`${badCommit} (${badCommit.slice(0, 7)} "the bad commit"): 4 secrets, 3 conflict markers, 1 large binary, ${out.counts.shellcheck} shellcheck issues, 2 TODO/FIXMEs in 8 changed files`);

    expect(findings.filter((finding) => finding.kind === 'secret').map((finding) => [finding.file, finding.line, finding.rule])).toEqual([
      ['config/id_rsa', 1, 'private-key'],
      ['src/app.js', 3, 'aws-access-key-id'],
      ['src/app.js', 4, 'github-token'],
      ['src/app.js', 5, 'password-assignment'],
    ]);
    // The output is kept with the run: it must not repeat the credentials it found.
    const text = JSON.stringify(out);
    for (const secret of [AWS_KEY_ID, GITHUB_TOKEN, 'hunter2hunter2']) expect(text).not.toContain(secret);

    expect(at('conflict_marker', 'notes.md')).toEqual([3, 7, 5]);
    expect(at('conflict_marker', 'heading.md')).toEqual([]);
    expect(findings.filter((finding) => finding.kind === 'large_binary')).toEqual([
      expect.objectContaining({ file: 'assets/blob.bin', size_bytes: 2 * 1024 * 1024, severity: 'warning' }),
    ]);
    expect(at('todo', 'src/app.js')).toEqual([2, 6]);

    expect(out.shellcheck).toMatchObject({ available: true, scripts: 2, checked: 2 });
    expect(findings.filter((finding) => finding.kind === 'shellcheck' && finding.file === 'scripts/deploy.sh').map((finding) => [finding.line, finding.code])).toEqual(
      expect.arrayContaining([[2, 'SC2115'], [2, 'SC2086']]),
    );
    // Only the line the commit added to ok.sh is its business; the older line 2 is counted apart.
    expect(new Set(at('shellcheck', 'scripts/ok.sh'))).toEqual(new Set([3]));
    expect(out.shellcheck.comments_outside_diff).toBeGreaterThanOrEqual(1);
    expect(out.truncated).toBe(false);
  });

  it('reviews HEAD by default, and a range with all its commits', async () => {
    const head = await runAgentProcess(AGENT, { repo });
    expect(head.exitCode, head.stderr).toBe(0);
    expect(head.json.summary).toMatch(/^HEAD \([0-9a-f]{7} "polish the readme"\): nothing flagged in 1 changed file$/);
    expect(head.json.findings).toEqual([]);

    const range = await runAgentProcess(AGENT, { repo, rev: 'HEAD~2..HEAD' });
    expect(range.exitCode, range.stderr).toBe(0);
    expect(range.json.commits).toBe(2);
    expect(range.json.counts).toMatchObject({ secret: 4, conflict_marker: 3, large_binary: 1, todo: 2 });
    expect(range.json.summary).toMatch(/^HEAD~2\.\.HEAD \(2 commits\): 4 secrets, /);

    const root = await runAgentProcess(AGENT, { repo, rev: 'HEAD~2' });
    expect(root.exitCode, root.stderr).toBe(0);
    expect(root.json.base).toBeNull();
    expect(root.json.files_changed).toBe(2);
  });

  it("runs none of the programs a repository's own config names (external diff, textconv, fsmonitor, pager)", async () => {
    const hostile = tempDir('review-hostile-');
    const marker = join(tempDir('review-marker-'), 'ran');
    const payload = join(hostile, 'payload.sh');
    writeFileSync(payload, `#!/bin/sh\necho "$0 $*" >> '${marker}'\ncat "$2" 2>/dev/null\n`, { mode: 0o755 });
    await gitIn(hostile, 'init', '-q');
    writeFileSync(join(hostile, '.gitattributes'), '* diff=evil\n');
    writeFileSync(join(hostile, 'a.txt'), 'one\n');
    await gitIn(hostile, 'add', '.');
    await gitIn(hostile, 'commit', '-q', '-m', 'one');
    writeFileSync(join(hostile, 'a.txt'), 'one\ntwo\n');
    await gitIn(hostile, 'commit', '-q', '-am', 'two');
    for (const key of ['diff.external', 'diff.evil.textconv', 'core.fsmonitor', 'core.pager']) await gitIn(hostile, 'config', key, payload);
    const run = await runAgentProcess(AGENT, { repo: hostile });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.files_changed).toBe(1);
    expect(existsSync(marker)).toBe(false);
  });

  it('lists at most 300 findings, counts them all, and says it cut the list', async () => {
    const busy = tempDir('review-busy-');
    await gitIn(busy, 'init', '-q');
    writeFileSync(join(busy, 'notes.txt'), Array.from({ length: 400 }, (_, i) => `FIXME item ${i}`).join('\n'));
    await gitIn(busy, 'add', '.');
    await gitIn(busy, 'commit', '-q', '-m', 'many');
    const run = await runAgentProcess(AGENT, { repo: busy });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.counts.todo).toBe(400);
    expect(run.json.findings).toHaveLength(300);
    expect(run.json.findings.at(-1)).toMatchObject({ file: 'notes.txt', line: 300 });
    expect(run.json.truncated).toBe(true);
  });

  it('says so when shellcheck is not installed, and still reviews the rest', async () => {
    const bin = tempDir('review-bin-');
    symlinkSync('/usr/bin/git', join(bin, 'git'));
    const run = await runAgentProcess(AGENT, { repo, rev: badCommit }, { path: bin });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.shellcheck).toMatchObject({ available: false, scripts: 2, checked: 0 });
    expect(run.json.shellcheck.note).toContain('shellcheck is not installed');
    expect(run.json.counts).toMatchObject({ secret: 4, shellcheck: 0 });
  });

  it('refuses a missing repository, a directory that is no repository, and revisions that are no commit or look like options', async () => {
    const notRepo = tempDir('review-plain-');
    const marker = join(tempDir('review-out-'), 'written');
    for (const [input, message] of [
      [{ repo: join(notRepo, 'missing') }, `repo: no directory at ${join(notRepo, 'missing')}`],
      [{ repo: 'relative/path' }, 'repo: must be an absolute path'],
      [{ repo: notRepo }, `repo: ${notRepo} is not a git repository`],
      [{ repo, rev: 'no-such-branch' }, 'rev: "no-such-branch" is not a commit of'],
      [{ repo, rev: `--output=${marker}` }, 'starts with "-"'],
      [{ repo, rev: `HEAD..--output=${marker}` }, 'starts with "-"'],
      [{ repo, rev: 'HEAD; rm -rf /' }, 'must not contain whitespace'],
      [{ repo, branch: 'main' }, 'unknown field "branch"'],
    ] as const) {
      const run = await runAgentProcess(AGENT, input);
      expect(run.exitCode, JSON.stringify(input)).toBe(2);
      expect(run.stderr).toContain(message);
      expect(run.stdout).toBe('');
    }
    expect(existsSync(marker)).toBe(false);
  });

  it('has an input_schema that takes the documented inputs and refuses others', () => {
    const valid = inputSchemaValidator(AGENT);
    expect(valid({ repo: '/srv/app' })).toBe(true);
    expect(valid({ repo: '/srv/app', rev: 'main~3..main' })).toBe(true);
    expect(valid({})).toBe(false);
    expect(valid({ repo: 'srv/app' })).toBe(false);
    expect(valid({ repo: '/srv/app', rev: '--output=/tmp/x' })).toBe(false);
    expect(valid({ repo: '/srv/app', rev: '' })).toBe(false);
    expect(valid({ repo: '/srv/app', branch: 'main' })).toBe(false);
  });
});
