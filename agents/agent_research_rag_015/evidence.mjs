// Whether the corpus answers the question, and the answer drawn from it. Each word of the question weighs by how
// rare it is in the corpus (IDF). The evidence is the share of the question's weight that the best passage's file
// holds; a question whose weighty words are nowhere in the corpus ("the capital of France") is about something
// else, however well its common words match. Short of either bar the answer is "not in this corpus"
// (docs/sections/starter-agents.md). The bars were set on the eval's training questions (scripts/eval/sets).
import { termFrequencies, termsInFile } from './search-index.mjs';

/** The share of the question's weight the best passage's file must hold for an answer. */
export const EVIDENCE_BAR = 0.45;
/** The share of the question's weight that words the corpus never has may make up, at most, for an answer. */
export const UNKNOWN_BAR = 0.25;
const MAX_ANSWER_CHARS = 500;

/**
 * IDF of a term in `total` passages, `df` of them holding it; a term the corpus never has weighs most. The corpus
 * counts as if it had PRIOR_PASSAGES more that hold none of the words: in a folder of three notes every word is in
 * a third of the corpus, and a word missing from it would otherwise outweigh all those present.
 */
const PRIOR_PASSAGES = 100;
const idf = (total, df) => Math.log(1 + (total + PRIOR_PASSAGES - df + 0.5) / (df + 0.5));

const share = (part, whole) => (whole === 0 ? 0 : Math.round((part / whole) * 1000) / 1000);

/**
 * `{score, unknown, missing, found}`: the share (0 to 1) of the question's weight that the file `path` holds, the
 * share of words the corpus never has, the words the file lacks, and whether that is evidence enough.
 */
export function evidenceOf(db, terms, path) {
  const { total, df } = termFrequencies(db, terms);
  const present = new Set(path === null ? [] : termsInFile(db, path, terms));
  let held = 0;
  let unknown = 0;
  let all = 0;
  for (const term of terms) {
    const weight = idf(total, df.get(term));
    all += weight;
    if (present.has(term)) held += weight;
    if (df.get(term) === 0) unknown += weight;
  }
  const score = share(held, all);
  const unknownShare = share(unknown, all);
  return { score, unknown: unknownShare, missing: terms.filter((term) => !present.has(term)), found: score >= EVIDENCE_BAR && unknownShare < UNKNOWN_BAR };
}

/** A word of the text meets a question term when one starts with the other's stem (a light one: "retries", "retry"). */
function meets(word, term) {
  const stem = term.length > 5 ? term.slice(0, term.length - 2) : term;
  return word.startsWith(stem) || term.startsWith(word.length > 5 ? word.slice(0, word.length - 2) : word);
}

/** Markdown prose as plain text for an answer: no headings or code blocks, links as their text, whitespace folded. */
function plain(text) {
  return text
    .replace(/^\s*(```|~~~)[\s\S]*?^\s*\1.*$/gm, ' ')
    .replace(/^\s{0,3}#{1,6}\s+.*$/gm, ' ')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\*\*([^*]+)\*\*/g, '$1')
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * The sentences of the passage that share the most words with the question, in their order, within 500
 * characters; a passage of code is given as its lines.
 */
export function extractAnswer(passage, terms) {
  if (/^\s*(?:```|~~~)/m.test(passage.text) && !/[.!?]\s/.test(passage.text.replace(/```[\s\S]*?```/g, ''))) {
    const code = passage.text.trim();
    return code.length > MAX_ANSWER_CHARS ? `${code.slice(0, MAX_ANSWER_CHARS - 1)}…` : code;
  }
  const sentences = plain(passage.text).match(/[^.!?]+(?:[.!?]+(?=\s|$)|$)/g) ?? [];
  const scored = sentences.map((sentence, index) => {
    const words = sentence.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    return { sentence: sentence.trim(), index, score: terms.filter((term) => words.some((word) => meets(word, term))).length };
  });
  const chosen = [...scored].sort((a, b) => b.score - a.score || a.index - b.index);
  const kept = [];
  let length = 0;
  for (const item of chosen) {
    if (item.score === 0 && kept.length > 0) break;
    if (length + item.sentence.length > MAX_ANSWER_CHARS && kept.length > 0) break;
    kept.push(item);
    length += item.sentence.length + 1;
  }
  const text = kept.sort((a, b) => a.index - b.index).map((item) => item.sentence).join(' ');
  return text.length > MAX_ANSWER_CHARS ? `${text.slice(0, MAX_ANSWER_CHARS - 1)}…` : text;
}
