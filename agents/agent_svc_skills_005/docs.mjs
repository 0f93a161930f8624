// The docs sections as the tutor reads them: passages for answers, table rows and sentences for quizzes, each
// with the line numbers (from 1) it came from.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Which private docs sections each tier unlocks (spec §2, src/contract/tiers.ts; a test keeps them equal). */
export const SECTIONS_BY_TIER = {
  dev_portal_execution_billing: ['dev-portal', 'execution-billing', 'agent-upload'],
  svc_starter_agents: ['starter-agents', 'node-install', 'agent-upload'],
  svc_pay_wallet_fund: ['wallet-funding'],
};

const FENCE = /^\s*(?:```|~~~)/;
const HEADING = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/;
const TABLE_ROW = /^\s*\|.*\|\s*$/;
const TABLE_RULE = /^\s*\|[\s:|-]+\|\s*$/;
const LIST_MARKER = /^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ x]\]\s+)?/;

/** Each line's kind: in a code block, a heading (with its text), a table row, blank, or prose; and its heading. */
function classify(lines) {
  let inFence = false;
  let heading = null;
  return lines.map((line) => {
    if (FENCE.test(line)) {
      inFence = !inFence;
      return { line, kind: 'code', heading };
    }
    if (inFence) return { line, kind: 'code', heading };
    const match = HEADING.exec(line);
    if (match) {
      heading = match[1];
      return { line, kind: 'heading', heading };
    }
    if (line.trim() === '') return { line, kind: 'blank', heading };
    return { line, kind: TABLE_ROW.test(line) ? 'table' : 'prose', heading };
  });
}

export async function readSection(docsDir, section) {
  const file = `${section}.md`;
  const text = await readFile(join(docsDir, file), 'utf8');
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  return { section, file, lines, classified: classify(lines) };
}

/** Paragraph-sized passages: a blank line outside code ends one, a heading starts one and stays with what follows. */
export function passagesOf(doc) {
  const passages = [];
  let current = null;
  const flush = () => {
    if (current?.hasBody) passages.push({ ...current, text: doc.lines.slice(current.line_start - 1, current.line_end).join('\n') });
    current = null;
  };
  doc.classified.forEach(({ kind, heading }, index) => {
    if (kind === 'heading') flush();
    if (kind === 'blank') {
      if (current?.hasBody) return flush();
      if (!current) return;
    }
    current ??= { line_start: index + 1, heading, hasBody: false };
    current.line_end = index + 1;
    current.hasBody ||= kind !== 'heading' && kind !== 'blank';
  });
  flush();
  return passages.map(({ hasBody, ...passage }) => passage);
}

/** Markdown without its markup, for questions and answers: `code`, **bold**, [text](link). */
export function plain(text) {
  return text.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/\*\*([^*]+)\*\*/g, '$1').replace(/`([^`]*)`/g, '$1').trim();
}

function cells(row) {
  return row.trim().replace(/^\|/, '').replace(/\|$/, '').split(/(?<!\\)\|/).map((cell) => cell.trim());
}

/** Every table row as {table, headers, cells, line}: a table (named by its first line) is a header row, a rule row, then its rows. */
export function tableRows(doc) {
  const rows = [];
  const { classified } = doc;
  for (let i = 0; i + 2 < classified.length; i++) {
    if (classified[i].kind !== 'table' || !TABLE_RULE.test(classified[i + 1].line) || (i > 0 && classified[i - 1].kind === 'table')) continue;
    const headers = cells(classified[i].line);
    for (let j = i + 2; j < classified.length && classified[j].kind === 'table'; j++) {
      rows.push({ table: i + 1, headers, cells: cells(classified[j].line), line: j + 1, heading: classified[j].heading });
    }
  }
  return rows;
}

/**
 * Sentences of prose with their line range: lines of one paragraph are joined, a list item starts a sentence of
 * its own, and a sentence ends at `.`, `!` or `?` followed by a space (so "1.00" and "e.g" do not end one).
 */
export function sentencesOf(doc) {
  const sentences = [];
  let unit = null;
  const flush = () => {
    if (!unit) return;
    for (const match of unit.text.matchAll(/[^\s].*?(?:[.!?](?=\s|$)|$)/g)) {
      const lineAt = (offset) => unit.starts.filter((start) => start.offset <= offset).at(-1).line;
      sentences.push({ text: match[0].trim(), line_start: lineAt(match.index), line_end: lineAt(match.index + match[0].length - 1), heading: unit.heading });
    }
    unit = null;
  };
  doc.classified.forEach(({ line, kind, heading }, index) => {
    if (kind !== 'prose') return flush();
    const item = LIST_MARKER.exec(line);
    if (item) flush();
    const content = line.slice(item ? item[0].length : 0).replace(/^\s*>\s?/, '').trim();
    unit ??= { text: '', starts: [], heading };
    unit.starts.push({ offset: unit.text.length + (unit.text ? 1 : 0), line: index + 1 });
    unit.text += (unit.text ? ' ' : '') + content;
  });
  flush();
  return sentences;
}

/** A command line of a code block and the comment after it (`sudo swarm-node upgrade --rollback   # switch back …`). */
const COMMENTED = /^(.*?\S)\s+#\s+(.+)$/;

/**
 * The facts of a section, the units the tutor answers with and asks about: each table row (as "column: value"
 * pairs), each line of a code block (a command, with its comment as what it does), each sentence of prose.
 * Every fact keeps its heading and lines.
 */
export function factsOf(doc) {
  const facts = [];
  // A code block or a table is described by the sentence that introduces it ("Every question has a flag, so it also
  // runs unattended:"), whole however its lines were wrapped: the paragraph's last sentence before it.
  const sentences = sentencesOf(doc);
  const introOf = (line) => {
    for (let i = line - 2; i >= 0; i--) {
      const { kind } = doc.classified[i];
      if (kind === 'prose') return plain(sentences.filter((sentence) => sentence.line_start <= i + 1).at(-1)?.text ?? doc.lines[i]);
      if (kind === 'heading') return null;
    }
    return null;
  };
  for (const row of tableRows(doc)) {
    const text = row.headers.map((header, i) => `${plain(header) || 'value'}: ${plain(row.cells[i] ?? '')}`).join('; ');
    facts.push({ kind: 'row', text, row, context: introOf(row.table), line_start: row.line, line_end: row.line, heading: row.heading });
  }
  let block = null;
  // A comment line of a code block ("# or, with the token in the environment:") says what the lines after it do.
  let blockComment = null;
  doc.classified.forEach(({ line, kind, heading }, index) => {
    if (kind === 'code' && FENCE.test(line)) {
      block = block === null ? index + 1 : null;
      blockComment = null;
    }
    if (kind === 'code' && block !== null && /^#\s/.test(line.trim())) blockComment = line.trim().replace(/^#\s*/, '');
    if (kind !== 'code' || FENCE.test(line) || line.trim() === '' || line.trim().startsWith('#')) return;
    const commented = COMMENTED.exec(line.trim());
    const context = [block === null ? null : introOf(block), blockComment].filter(Boolean).join(' ') || null;
    facts.push({ kind: 'code', text: line.trim(), context, command: commented ? commented[1] : line.trim(), comment: commented ? commented[2] : null, line_start: index + 1, line_end: index + 1, heading });
  });
  for (const sentence of sentences) {
    // A sentence that opens with a bold label ("**Input**: `{leads, template, …}`", "**Limits.** A bundle is at
    // most …") is where the docs define what the label names.
    const label = /^\*\*([^*]+?)[.:]?\*\*/.exec(sentence.text)?.[1] ?? null;
    facts.push({ kind: 'sentence', text: plain(sentence.text), raw: sentence.text, label, line_start: sentence.line_start, line_end: sentence.line_end, heading: sentence.heading });
  }
  // Each fact's passage (its paragraph, table or code block with the line introducing it): the context it is read in.
  const passages = passagesOf(doc);
  return facts.map((fact) => {
    const passage = passages.find((candidate) => candidate.line_start <= fact.line_start && candidate.line_end >= fact.line_end);
    return { ...fact, passage: passage ? `${fact.context ?? ''} ${passage.text}` : fact.text, section: doc.section, file: doc.file };
  });
}
