// bandit (PyCQA's security linter for Python, Debian's python3-bandit), when the host has it, over the new version
// of each changed Python file, written to the run's own directory: bandit reads files, and the commit may not be
// checked out anywhere.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const PYTHON_FILES = /\.pyw?$/;
const TIMEOUT_MS = 60_000;
/**
 * Tests left out: B101 (assert: every test suite uses it), B404/B403/B405 (importing subprocess, pickle or xml is
 * not a finding, what is done with them is), B603 (subprocess without a shell: the safe form).
 */
const SKIPPED_TESTS = 'B101,B403,B404,B405,B603';

function bandit(args) {
  return new Promise((resolve) => {
    execFile('bandit', args, { encoding: 'utf8', timeout: TIMEOUT_MS, maxBuffer: 32 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.killed ? 'timeout' : error.code) : 0, stdout, stderr });
    });
  });
}

/** The installed version ("1.6.2"), or null when bandit is not on the PATH. */
export async function banditVersion() {
  const result = await bandit(['--version']);
  if (result.code === 'ENOENT') return null;
  return /bandit\s+(\S+)/.exec(result.stdout)?.[1] ?? 'unknown';
}

/** bandit's severity: HIGH and MEDIUM are worth a look, LOW is advice. */
export function severityOfIssue(severity) {
  return severity === 'HIGH' || severity === 'MEDIUM' ? 'warning' : 'info';
}

/**
 * The issues of `files` (each `{path, text}`), by path: `{line, rule, message, fix, level}`. One bandit process for
 * them all; its exit 1 means issues were found.
 */
export async function checkPython(files) {
  const dir = mkdtempSync(join(process.env.TMPDIR || tmpdir(), 'bandit-'));
  try {
    const byLocal = new Map();
    files.forEach((file, i) => {
      const local = join(dir, String(i), file.path);
      mkdirSync(dirname(local), { recursive: true });
      writeFileSync(local, file.text);
      byLocal.set(local, file.path);
    });
    const result = await bandit(['-f', 'json', '-q', '-s', SKIPPED_TESTS, ...byLocal.keys()]);
    if (result.code === 'timeout') throw new Error(`bandit did not finish within ${TIMEOUT_MS / 1000} s`);
    if (result.code !== 0 && result.code !== 1) throw new Error(`bandit failed: ${result.stderr.trim().split('\n').at(-1) || `exit ${result.code}`}`);
    const report = JSON.parse(result.stdout);
    const issues = new Map();
    for (const issue of report.results ?? []) {
      const path = byLocal.get(issue.filename);
      if (path === undefined) continue;
      if (!issues.has(path)) issues.set(path, []);
      issues.get(path).push({
        line: issue.line_number,
        rule: `${issue.test_id} ${issue.test_name}`,
        message: issue.issue_text,
        fix: issue.more_info ? `see ${issue.more_info}` : undefined,
        level: issue.issue_severity,
      });
    }
    const unreadable = (report.errors ?? []).map((error) => ({ file: byLocal.get(error.filename) ?? error.filename, error: error.reason }));
    return { issues, unreadable };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
