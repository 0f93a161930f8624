// The ops monitor's answer (docs/sections/starter-agents.md "agent_ops_monitor_004") in a few lines: its findings
// about this host, the worst first, as [severity, message] pairs; the rest counted. Only what the agent reported.
const RANK = { critical: 0, warning: 1, ok: 2 };
/** Checks always shown, even when more findings than fit need attention: what the demo says the agent looks at. */
const ALWAYS = ['load', 'memory', 'filesystem'];

export function findingLines(output, limit = 6) {
  const findings = (output.findings ?? []).map((finding, index) => ({ ...finding, index }));
  const byRank = (a, b) => (RANK[a.severity] ?? 3) - (RANK[b.severity] ?? 3) || a.index - b.index;
  findings.sort(byRank);
  const shown = findings.slice(0, limit);
  for (const check of ALWAYS) {
    const first = findings.find((finding) => finding.check === check);
    if (first !== undefined && !shown.includes(first)) shown.push(first);
  }
  shown.sort(byRank);
  const lines = shown.map((finding) => [finding.severity, finding.message]);
  const rest = findings.filter((finding) => !shown.includes(finding));
  if (rest.length > 0) {
    const counts = new Map();
    for (const finding of rest) counts.set(finding.severity, (counts.get(finding.severity) ?? 0) + 1);
    lines.push(['…', `${rest.length} more (${[...counts].map(([severity, count]) => `${count} ${severity}`).join(', ')})`]);
  }
  // No finding says so: without systemd the agent checks no units (nor the node's own service).
  if (output.systemd?.available === false) lines.push(['systemd', 'not running on this host: no units to check']);
  return lines;
}
