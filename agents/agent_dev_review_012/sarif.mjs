// The review as SARIF 2.1.0 (OASIS), the format code-scanning tools read (GitHub code scanning, GitLab, IDEs): one
// run per tool that ran, each finding a result at its file and line. Written as the run's artifact when the node
// gives the run an artifacts directory.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const SARIF_FILE = 'review.sarif';

const LEVEL = { critical: 'error', warning: 'warning', info: 'note' };

/** The tool that made each kind of finding. */
const TOOL_OF_KIND = { secret: 'dev-review', conflict_marker: 'dev-review', large_binary: 'dev-review', sql: 'dev-review', todo: 'dev-review', eslint: 'eslint', shellcheck: 'shellcheck', bandit: 'bandit' };

function resultOf(finding) {
  const region = finding.line === undefined ? undefined : { startLine: finding.line };
  return {
    ruleId: finding.rule ?? finding.code ?? finding.kind,
    level: LEVEL[finding.severity] ?? 'note',
    message: { text: finding.fix ? `${finding.message} (${finding.fix})` : finding.message },
    locations: [{ physicalLocation: { artifactLocation: { uri: finding.file }, ...(region ? { region } : {}) } }],
  };
}

/**
 * The SARIF document for `findings` (all of them, not only those the answer lists); `tools` maps a tool's name to
 * its version. Secrets are found by secretlint and by the review's own rules: both report under `dev-review`, with
 * the rule saying which.
 */
export function sarifOf(findings, tools) {
  const byTool = new Map();
  for (const finding of findings) {
    const tool = TOOL_OF_KIND[finding.kind] ?? 'dev-review';
    if (!byTool.has(tool)) byTool.set(tool, []);
    byTool.get(tool).push(resultOf(finding));
  }
  const runs = [...byTool.entries()].map(([tool, results]) => ({
    tool: { driver: { name: tool, ...(tools[tool] ? { version: tools[tool] } : {}), rules: [...new Set(results.map((result) => result.ruleId))].map((id) => ({ id })) } },
    results,
  }));
  return { $schema: 'https://json.schemastore.org/sarif-2.1.0.json', version: '2.1.0', runs };
}

export function writeSarif(dir, findings, tools) {
  writeFileSync(join(dir, SARIF_FILE), `${JSON.stringify(sarifOf(findings, tools), null, 2)}\n`);
  return SARIF_FILE;
}
