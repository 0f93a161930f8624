// Answers and quizzes drawn from the docs sections: BM25 over passages for a question, facts from tables and
// sentences with a value for a quiz.
import { plain, sentencesOf, tableRows } from './docs.mjs';

const STOPWORDS = new Set(
  ('a an and are as at be by can do does for from has have how i if in into is it its me my of on or should so ' +
    'than that the their them then there these this to was we were what when where which who why will with you your').split(' '),
);

/** A light stem, so "lives" meets "live", "entries" "entry" and "charged" "charge". */
function stem(word) {
  if (word.length <= 3) return word;
  if (word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  if (word.endsWith('ing') && word.length > 5) return word.slice(0, -3);
  if (word.endsWith('ed') && word.length > 4) return word.slice(0, -1);
  return word;
}

/** The words of a text that matter for matching: lower case, no stopwords, stemmed. */
export function terms(text) {
  return (text.normalize('NFKC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((word) => !STOPWORDS.has(word)).map(stem);
}

/** Okapi BM25 (k1 1.2, b 0.75) of every passage against the question; a passage's heading counts as its words. */
export function rankPassages(passages, question) {
  const queryTerms = [...new Set(terms(question))];
  const docs = passages.map((passage) => terms(`${passage.heading ?? ''} ${passage.text}`));
  const averageLength = docs.reduce((sum, doc) => sum + doc.length, 0) / Math.max(1, docs.length);
  const documentFrequency = new Map(queryTerms.map((term) => [term, docs.filter((doc) => doc.includes(term)).length]));
  return passages
    .map((passage, i) => {
      let score = 0;
      for (const term of queryTerms) {
        const frequency = docs[i].filter((word) => word === term).length;
        if (frequency === 0) continue;
        const df = documentFrequency.get(term);
        const idf = Math.log(1 + (docs.length - df + 0.5) / (df + 0.5));
        score += (idf * frequency * 2.2) / (frequency + 1.2 * (0.25 + (0.75 * docs[i].length) / averageLength));
      }
      return { ...passage, score: Math.round(score * 1000) / 1000 };
    })
    .filter((passage) => passage.score > 0)
    .sort((a, b) => b.score - a.score);
}

/** The sentence of a passage that shares the most words with the question: the one-line answer. */
export function bestSentence(doc, passage, question) {
  const wanted = new Set(terms(question));
  const inPassage = sentencesOf(doc).filter((s) => s.line_start >= passage.line_start && s.line_end <= passage.line_end);
  let best = null;
  for (const sentence of inPassage) {
    const overlap = new Set(terms(sentence.text).filter((term) => wanted.has(term))).size;
    if (overlap > 0 && (best === null || overlap > best.overlap)) best = { ...sentence, overlap };
  }
  return best;
}

/** A value worth asking for: a number with its unit or currency, else a short `code` span. */
const NUMBER = /(?<![\w.$§-])\$?\d+(?:[.,]\d+)*(?:\s?(?:%|MiB|KiB|GiB|MB|KB|ms|s|days?|hours?|minutes?|seconds?|cents?)\b|%)?(?!\w)/;
const CODE = /`([^`]{2,40})`/;

function clozeOf(sentence) {
  // A whole sentence, not a fragment introducing a list or a code block ("…, whether it succeeded or failed:").
  if (sentence.text.length < 40 || sentence.text.length > 240 || !/[.!?]$/.test(sentence.text)) return null;
  const number = NUMBER.exec(sentence.text);
  const code = CODE.exec(sentence.text);
  const match = number ?? code;
  if (!match) return null;
  const answer = number ? number[0] : code[1];
  const blanked = `${sentence.text.slice(0, match.index)}_____${sentence.text.slice(match.index + match[0].length)}`;
  return { kind: 'cloze', question: `Fill in the blank: ${plain(blanked)}`, answer, line_start: sentence.line_start, line_end: sentence.line_end, heading: sentence.heading };
}

/**
 * Questions on one row: "what is the <column> for <first cell>?". When the first cell repeats in its table (one
 * agent on two schedules), the row is named by its first two cells, and the second column is not asked.
 */
function tableFactsOf(row, rows) {
  const first = plain(row.cells[0] ?? '');
  const repeated = rows.some((other) => other !== row && other.table === row.table && plain(other.cells[0] ?? '') === first);
  const key = repeated ? `${first}, ${plain(row.cells[1] ?? '')}` : first;
  if (!first || key.length > 60) return [];
  return row.headers.flatMap((header, j) => {
    if (j === 0 || (repeated && j === 1)) return [];
    const value = plain(row.cells[j] ?? '');
    if (!value || value === first || value.length > 60 || !plain(header)) return [];
    const where = row.heading ? `In the table of "${row.heading}", w` : 'W';
    return [{ kind: 'table', question: `${where}hat is the ${plain(header).replace(/^the /i, '')} for "${key}"?`, answer: value, line_start: row.line, line_end: row.line, heading: row.heading }];
  });
}

/** A small PRNG seeded by the run id, so a quiz differs from run to run and can be reproduced from its run. */
function seededRandom(seedText) {
  let seed = [...seedText].reduce((hash, char) => Math.imul(hash ^ char.charCodeAt(0), 16777619), 2166136261) >>> 0;
  return () => {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` questions from the docs, no two on the same line, every answer a value written on its cited lines. */
export function makeQuiz(docs, count, seedText) {
  const pool = docs.flatMap((doc) =>
    [...tableRows(doc).flatMap((row, _, rows) => tableFactsOf(row, rows)), ...sentencesOf(doc).map(clozeOf).filter(Boolean)].map((item) => ({ ...item, section: doc.section, file: doc.file })),
  );
  const random = seededRandom(seedText);
  for (let i = pool.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  const usedLines = new Set();
  const quiz = [];
  for (const item of pool) {
    const where = `${item.file}:${item.line_start}`;
    if (usedLines.has(where)) continue;
    usedLines.add(where);
    quiz.push(item);
    if (quiz.length === count) break;
  }
  return { quiz, available: pool.length };
}
