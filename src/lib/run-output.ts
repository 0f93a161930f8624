// What a run produced, for a person (`run` and `runs show`): the agent's summary, then what the user paid for in the
// shapes the reference agents answer with (docs/sections/starter-agents.md): findings with file and line, drafts,
// a quiz with its answers, an answer with its citation, passages. Anything else stays in --json. Bounded: a run's
// output is up to 1 MiB, so long lists show their first entries and say where the rest is.
import type { ChalkInstance } from 'chalk';

type Record_ = Record<string, unknown>;

/** How many entries of each list are shown. */
const SHOWN = { findings: 20, drafts: 3, quiz: 10, passages: 3 } as const;
/** A draft's body lines shown. */
const BODY_LINES = 4;

export function renderRunOutput(output: unknown, style: ChalkInstance, runId: string): string {
  return renderKnownOutput(output, style, runId) ?? JSON.stringify(output, null, 2);
}

/** The parts of `output` in the shapes above, for a person; undefined when it has none of them. */
export function renderKnownOutput(output: unknown, style: ChalkInstance, runId: string): string | undefined {
  if (typeof output !== 'object' || output === null || Array.isArray(output)) return undefined;
  const out = output as Record_;
  const parts: string[] = [];
  if (typeof out.summary === 'string') parts.push(out.summary);
  const findings = listOf(out.findings);
  if (findings.length > 0) parts.push(renderFindings(findings, style, runId));
  const drafts = listOf(out.drafts);
  if (drafts.length > 0 || isObject(out.counts)) parts.push(renderDrafts(out, drafts, style, runId));
  const quiz = listOf(out.quiz);
  if (quiz.length > 0) parts.push(renderQuiz(quiz, style));
  if (isObject(out.answer) && typeof out.answer.text === 'string')
    parts.push(`${style.bold('Answer:')} ${out.answer.text}${citationOf(out.answer.citation, style)}`);
  const passages = listOf(out.passages);
  if (passages.length > 0 && !isObject(out.answer)) parts.push(renderPassages(passages, style));
  return parts.length === 0 ? undefined : parts.join('\n\n');
}

function renderFindings(findings: Record_[], style: ChalkInstance, runId: string): string {
  const colour = (severity: string): string =>
    severity === 'critical' || severity === 'error'
      ? style.red(severity)
      : severity === 'warning'
        ? style.yellow(severity)
        : style.dim(severity);
  const lines = findings.slice(0, SHOWN.findings).map((finding) => {
    const severity = colour(text(finding.severity) || 'info');
    const where =
      text(finding.file) === ''
        ? text(finding.check ?? finding.kind)
        : `${text(finding.file)}${finding.line === undefined ? '' : `:${text(finding.line)}`}`;
    return `  ${severity} ${style.bold(where)}  ${text(finding.message)}`;
  });
  const more =
    findings.length > SHOWN.findings ? `\n  … ${findings.length - SHOWN.findings} more: swarm-node runs show ${runId} --json` : '';
  return `${style.bold(`Findings (${findings.length}):`)}\n${lines.join('\n')}${more}`;
}

function renderDrafts(out: Record_, drafts: Record_[], style: ChalkInstance, runId: string): string {
  const counts = isObject(out.counts) ? out.counts : {};
  const drafted = typeof counts.drafted === 'number' ? counts.drafted : drafts.length;
  const shown = drafts.slice(0, SHOWN.drafts).map((draft) => {
    const body = text(draft.body)
      .split('\n')
      .slice(0, BODY_LINES)
      .map((line) => `    ${line}`);
    return [`  ${style.bold('To:')} ${text(draft.to)}`, `  ${style.bold('Subject:')} ${text(draft.subject)}`, ...body].join('\n');
  });
  const rejected = listOf(out.rejected);
  const lines = [
    `${style.bold(`Drafts: ${drafted}`)}${rejected.length > 0 ? `, ${rejected.length} rows rejected` : ''}${typeof out.note === 'string' ? ` (${out.note})` : ''}`,
    ...shown,
  ];
  if (drafted > shown.length)
    lines.push(`  … ${drafted - shown.length} more: every draft is in the run's artifacts (swarm-node artifacts ${runId} --download DIR)`);
  return lines.join('\n\n');
}

function renderQuiz(quiz: Record_[], style: ChalkInstance): string {
  const items = quiz.slice(0, SHOWN.quiz).map((item, index) => {
    const number = typeof item.number === 'number' ? item.number : index + 1;
    return `  ${number}. ${text(item.question)}\n     ${style.dim('Answer:')} ${text(item.answer)}${citationOf(item.citation, style)}`;
  });
  return `${style.bold(`Quiz (${quiz.length}):`)}\n${items.join('\n')}`;
}

function renderPassages(passages: Record_[], style: ChalkInstance): string {
  const items = passages.slice(0, SHOWN.passages).map((passage) => {
    const where =
      typeof passage.citation === 'string'
        ? passage.citation
        : citationText(passage.citation) || `${text(passage.file)}:${text(passage.line_start)}`;
    const heading = typeof passage.heading === 'string' && passage.heading !== '' ? ` (${passage.heading})` : '';
    const body = text(passage.text).replace(/\s+/g, ' ').slice(0, 200);
    return `  ${style.bold(where)}${heading}\n    ${body}`;
  });
  return `${style.bold(`Passages (${passages.length}):`)}\n${items.join('\n')}`;
}

/** " — section § heading, file:12-14" for a citation object or string; empty when there is none. */
function citationOf(citation: unknown, style: ChalkInstance): string {
  const where = typeof citation === 'string' ? citation : citationText(citation);
  return where === '' ? '' : style.dim(` — ${where}`);
}

function citationText(citation: unknown): string {
  if (!isObject(citation)) return '';
  const file = text(citation.file);
  const lines =
    citation.line_start === undefined
      ? ''
      : `:${text(citation.line_start)}${citation.line_end !== undefined && citation.line_end !== citation.line_start ? `-${text(citation.line_end)}` : ''}`;
  const section =
    typeof citation.section === 'string'
      ? `${citation.section}${typeof citation.heading === 'string' ? ` § ${citation.heading}` : ''}, `
      : '';
  return file === '' ? '' : `${section}${file}${lines}`;
}

function listOf(value: unknown): Record_[] {
  return Array.isArray(value) ? value.filter(isObject) : [];
}

function isObject(value: unknown): value is Record_ {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string {
  return value === undefined || value === null ? '' : String(value);
}
