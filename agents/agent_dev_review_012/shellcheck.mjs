// shellcheck, when the host has it, over the full new version of each changed shell script.
import { execFile } from 'node:child_process';

const TIMEOUT_MS = 10_000;

function shellcheck(args, input) {
  return new Promise((resolve) => {
    const child = execFile('shellcheck', args, { encoding: 'utf8', timeout: TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.killed ? 'timeout' : error.code) : 0, stdout, stderr });
    });
    child.stdin.on('error', () => {}); // a shellcheck that exits early closes its stdin; the exit code tells the rest
    child.stdin.end(input ?? '');
  });
}

/** The installed version ("0.9.0"), or null when shellcheck is not on the PATH. */
export async function shellcheckVersion() {
  const result = await shellcheck(['--version']);
  if (result.code === 'ENOENT') return null;
  return /^version:\s*(\S+)/m.exec(result.stdout)?.[1] ?? 'unknown';
}

/**
 * The comments on one script read from stdin (shellcheck exits 1 when it has some). Without a shebang it assumes
 * bash and says so (SC2148), which is itself worth a comment on a changed script.
 */
export async function checkScript(content) {
  const result = await shellcheck(['--format=json1', '-'], content);
  if (result.code === 'timeout') throw new Error(`shellcheck did not finish within ${TIMEOUT_MS / 1000} s`);
  if (result.code !== 0 && result.code !== 1) throw new Error(`shellcheck failed: ${result.stderr.trim() || `exit ${result.code}`}`);
  return JSON.parse(result.stdout).comments;
}

/** shellcheck's error and warning levels are worth a look; info and style are advice. */
export function severityOfLevel(level) {
  return level === 'error' || level === 'warning' ? 'warning' : 'info';
}
