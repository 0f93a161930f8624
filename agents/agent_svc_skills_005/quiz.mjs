// Quizzes of real questions drawn from the docs' facts (the price of an agent, what an exit code means, a default
// threshold, which command does what, a limit), each with four choices, the others of the same kind; and the
// grading of a quiz's answers, with the fact that explains each (docs/sections/starter-agents.md).
import { createHash } from 'node:crypto';
import { InputError } from './agent-io.mjs';
import { plain } from './docs.mjs';

const LETTERS = ['A', 'B', 'C', 'D'];
const SIZE = /\b\d+(?:[.,]\d+)*\s?(?:MiB|KiB|GiB|MB|KB|GB|seconds?|minutes?|hours?|days?|s|ms|files|entries|versions|uploads)\b/;
const LIMIT_WORDS = /\b(?:at most|up to|limit|maximum|no more than|within|capped|cap)\b/i;
const LAYOUT = /^(\/\S+)\s{2,}(.+)$/;

/** A small PRNG seeded by text, so a quiz differs from run to run and is the same again for its quiz id. */
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

function shuffle(items, random) {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}

/** Each question the facts can make: `{kind, question, answer, family, fact}`; `family` groups the possible distractors. */
function questionsOf(facts) {
  const questions = [];
  for (const fact of facts) {
    if (fact.kind === 'row') {
      const { headers, cells } = fact.row;
      const first = plain(cells[0] ?? '');
      const price = headers.findIndex((header) => /price/i.test(header));
      if (price > 0 && /\$\d/.test(cells[price] ?? '') && /^agent_/.test(first)) {
        const name = headers.findIndex((header) => /^agent$/i.test(plain(header)));
        questions.push({ kind: 'price', question: `How much does one run of ${name > 0 ? `${plain(cells[name])} (${first})` : first} cost?`, answer: plain(cells[price]), family: `price:${fact.file}:${fact.row.table}`, fact });
      } else if (/^exit$/i.test(plain(headers[0] ?? '')) && /^\d+$/.test(first) && cells[1]) {
        questions.push({ kind: 'exit_code', question: `What does exit code ${first} of swarm-node mean?`, answer: plain(cells[1]), family: `exit:${fact.file}:${fact.row.table}`, fact });
      } else {
        const defaults = headers.findIndex((header) => /default/i.test(header));
        if (defaults > 0 && cells[defaults] && first.length <= 60) {
          questions.push({ kind: 'default', question: `What is the default of ${first}${fact.heading ? ` (${fact.heading})` : ''}?`, answer: plain(cells[defaults]), family: `default:${fact.file}:${fact.row.table}`, fact });
        }
      }
    } else if (fact.kind === 'code' && fact.comment && /\bswarm-node\b|install\.sh|uninstall\.sh/.test(fact.command)) {
      questions.push({ kind: 'command', question: `Which command does this: "${fact.comment}"?`, answer: fact.command, family: `command:${fact.section}`, fact });
    } else if (fact.kind === 'code' && LAYOUT.test(fact.text)) {
      const [, path, what] = LAYOUT.exec(fact.text);
      questions.push({ kind: 'layout', question: `What is kept at ${path}?`, answer: what, family: `layout:${fact.file}`, fact });
    } else if (fact.kind === 'sentence' && LIMIT_WORDS.test(fact.text) && SIZE.test(fact.text) && fact.text.length <= 240) {
      const match = SIZE.exec(fact.text);
      const blanked = `${fact.text.slice(0, match.index)}_____${fact.text.slice(match.index + match[0].length)}`;
      const unit = /iB|[KMG]B/.test(match[0]) ? 'size' : /\d\s?(?:s|ms|seconds?|minutes?|hours?|days?)$/.test(match[0]) ? 'time' : 'count';
      questions.push({ kind: 'limit', question: `Fill in the limit: ${blanked}`, answer: match[0], family: `limit:${unit}`, fact });
    }
  }
  return questions;
}

/** Up to three other answers of the same family (other prices, other meanings, other commands), all different. */
function choicesFor(item, pool, random) {
  const others = [...new Set(pool.filter((other) => other.family === item.family && other.answer !== item.answer).map((other) => other.answer))];
  return shuffle([item.answer, ...shuffle(others, random).slice(0, 3)], random);
}

/** The quiz id names the draw (its seed and size) and the docs it was drawn from, so a grade regrades that quiz. */
export function docsDigest(docs) {
  return createHash('sha256').update(docs.map((doc) => doc.lines.join('\n')).join('\0')).digest('hex').slice(0, 8);
}

/** `count` questions with their choices, no two on the same line: `{quiz_id, items, available}`. */
export function makeQuiz(facts, docs, count, seed) {
  const pool = questionsOf(facts);
  const random = seededRandom(seed);
  const usedLines = new Set();
  const items = [];
  for (const item of shuffle(pool, random)) {
    const where = `${item.fact.file}:${item.fact.line_start}`;
    const choices = choicesFor(item, pool, random);
    if (usedLines.has(where) || choices.length < 2) continue;
    usedLines.add(where);
    items.push({ ...item, choices });
    if (items.length === count) break;
  }
  return { quiz_id: `${seed}.${count}.${docsDigest(docs)}`, items, available: pool.length };
}

const normalize = (text) => plain(String(text)).toLowerCase().replace(/[`"'$]/g, '').replace(/\s+/g, ' ').trim();

/** Grades `answers` (a letter or the answer's text each) against the quiz `quizId` names. */
export function gradeQuiz(facts, docs, quizId, answers) {
  const match = /^(.+)\.(\d{1,2})\.([0-9a-f]{8})$/.exec(quizId);
  if (!match) throw new InputError('grade.quiz_id: not a quiz id (it is the quiz_id a quiz answered with)');
  const [, seed, count, digest] = match;
  if (digest !== docsDigest(docs)) throw new InputError('grade.quiz_id: the docs changed since this quiz was drawn; take a new quiz');
  const { items } = makeQuiz(facts, docs, Number(count), seed);
  if (answers.length !== items.length) throw new InputError(`grade.answers: the quiz has ${items.length} questions; give one answer for each, in order (${answers.length} given)`);
  const results = items.map((item, i) => {
    const given = String(answers[i]).trim();
    const letter = LETTERS.indexOf(given.toUpperCase());
    const chosen = letter !== -1 && letter < item.choices.length ? item.choices[letter] : given;
    const correct = normalize(chosen) === normalize(item.answer);
    return {
      number: i + 1,
      question: item.question,
      given,
      correct,
      answer: item.answer,
      explanation: item.fact.raw ? plain(item.fact.raw) : item.fact.text,
      citation: { section: item.fact.section, file: item.fact.file, heading: item.fact.heading, line_start: item.fact.line_start, line_end: item.fact.line_end },
    };
  });
  return { results, right: results.filter((result) => result.correct).length };
}

export { LETTERS };
