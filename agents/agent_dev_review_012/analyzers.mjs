// The code checks: each maintained analyzer over the changed files it knows (ESLint for JavaScript and
// TypeScript, shellcheck for shell, bandit for Python), reported on the lines the change added. A tool that is
// missing or fails on a file leaves those files unchecked, which the review reports and is refunded for
// (docs/sections/starter-agents.md).
import { PYTHON_FILES, banditVersion, checkPython, severityOfIssue } from './bandit.mjs';
import { ESLINT_FILES, eslintVersion, lintFile } from './eslint.mjs';
import { checkScript, severityOfLevel, shellcheckVersion } from './shellcheck.mjs';

/** Files one tool checks in one review; beyond, the rest are counted as not checked and the answer is truncated. */
export const MAX_FILES_PER_TOOL = 500;

const INSTALL_HINT = {
  shellcheck: 'apt-get install shellcheck (Debian, Ubuntu), dnf install ShellCheck (Fedora)',
  bandit: 'apt-get install python3-bandit (Debian, Ubuntu), pip install bandit',
};

function toolReport(name, version, files) {
  return { ran: version !== null, version, files: files.length, checked: 0, comments_outside_diff: 0, failures: [], over_cap: Math.max(0, files.length - MAX_FILES_PER_TOOL) };
}

/**
 * Runs each tool on its files (`{path, text, added}`: the new content and the added line numbers) and calls
 * `onFinding` for each comment on an added line. Answers each tool's report; `missing` names the tools a changed
 * file needed that are not installed.
 */
export async function runAnalyzers({ eslintFiles, scripts, pythonFiles }, onFinding) {
  const reports = {};
  const missing = [];

  const eslint = toolReport('eslint', eslintVersion(), eslintFiles);
  for (const file of eslintFiles.slice(0, MAX_FILES_PER_TOOL)) {
    for (const comment of lintFile(file.path, file.text)) {
      if (!file.added.has(comment.line)) eslint.comments_outside_diff++;
      else onFinding({ kind: 'eslint', severity: comment.rule === 'parse-error' ? 'info' : 'warning', file: file.path, line: comment.line, rule: comment.rule, message: comment.message, ...(comment.fix ? { fix: comment.fix } : {}) });
    }
    eslint.checked++;
  }
  reports.eslint = eslint;

  const shellcheck = toolReport('shellcheck', scripts.length > 0 ? await shellcheckVersion() : null, scripts);
  if (scripts.length > 0 && shellcheck.version === null) missing.push('shellcheck');
  if (shellcheck.ran) {
    for (const file of scripts.slice(0, MAX_FILES_PER_TOOL)) {
      const comments = await checkScript(file.text).catch((error) => {
        shellcheck.failures.push({ file: file.path, error: error.message });
        return null;
      });
      if (comments === null) continue;
      shellcheck.checked++;
      for (const comment of comments) {
        if (!file.added.has(comment.line)) shellcheck.comments_outside_diff++;
        else onFinding({ kind: 'shellcheck', severity: severityOfLevel(comment.level), file: file.path, line: comment.line, rule: `SC${comment.code}`, level: comment.level, message: comment.message, fix: `https://www.shellcheck.net/wiki/SC${comment.code}` });
      }
    }
  }
  reports.shellcheck = shellcheck;

  const bandit = toolReport('bandit', pythonFiles.length > 0 ? await banditVersion() : null, pythonFiles);
  if (pythonFiles.length > 0 && bandit.version === null) missing.push('bandit');
  if (bandit.ran) {
    const batch = pythonFiles.slice(0, MAX_FILES_PER_TOOL);
    try {
      const { issues, unreadable } = await checkPython(batch);
      bandit.failures.push(...unreadable);
      bandit.checked = batch.length - unreadable.length;
      for (const file of batch) {
        for (const issue of issues.get(file.path) ?? []) {
          if (!file.added.has(issue.line)) bandit.comments_outside_diff++;
          else onFinding({ kind: 'bandit', severity: severityOfIssue(issue.level), file: file.path, line: issue.line, rule: issue.rule, level: issue.level.toLowerCase(), message: issue.message, ...(issue.fix ? { fix: issue.fix } : {}) });
        }
      }
    } catch (error) {
      bandit.failures.push({ file: null, error: error.message });
    }
  }
  reports.bandit = bandit;

  for (const [name, report] of Object.entries(reports)) {
    if (missing.includes(name)) report.note = `${name} is not installed on this host: ${report.files} changed file(s) not checked (${INSTALL_HINT[name]})`;
    if (report.failures.length === 0) delete report.failures;
  }
  return { reports, missing };
}

/** Which analyzer reads a changed file, by its name (shell scripts are found apart: by name or by their #! line). */
export function analyzerOf(path) {
  if (ESLINT_FILES.test(path)) return 'eslint';
  if (PYTHON_FILES.test(path)) return 'bandit';
  return null;
}
