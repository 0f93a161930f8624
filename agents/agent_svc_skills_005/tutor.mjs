// Answers from the docs sections' facts (./docs.mjs factsOf): BM25 over each fact's words and its heading's, with a
// bonus for the kind of value the question asks for (a price, a path, a size, a duration, a command, an exit
// code), so "how much does the dev review cost" lands on the price, not on a sentence about costs.

const STOPWORDS = new Set(
  ('a an and are as at be by can do does for from has have how i if in into is it its me my of on or should so ' +
    'than that the their them then there these this to was we were what when where which who why will with you your ' +
    'one any may might could would much many not without also').split(' '),
);

/** Words written apart in a question and together in the docs ("roll back" / rollback), folded onto one. */
const COMPOUNDS = [
  [/\broll(?:ed|ing|s)?[\s-]+back\b/g, 'rollback'],
  [/\bsign(?:ed|ing|s)?[\s-]+in\b/g, 'signin'],
  [/\blog(?:ged|ging|s)?[\s-]+in\b/g, 'login'],
  [/\bset(?:ting|s)?[\s-]+up\b/g, 'setup'],
  [/\bclean(?:ed|ing|s)?[\s-]+up\b/g, 'cleanup'],
  [/\bup[\s-]+grade/g, 'upgrade'],
];

/** A light stem: plurals, -ing and -ed off, then a final e, so "uploaded" meets "upload" and "charged" "charge". */
function stem(word) {
  if (word.length <= 3) return word;
  let stemmed = word;
  if (stemmed.endsWith('ies') && stemmed.length > 4) stemmed = `${stemmed.slice(0, -3)}y`;
  else if (stemmed.endsWith('s') && !stemmed.endsWith('ss') && !stemmed.endsWith('us')) stemmed = stemmed.slice(0, -1);
  if (stemmed.endsWith('ing') && stemmed.length > 5) stemmed = stemmed.slice(0, -3);
  else if (stemmed.endsWith('ed') && stemmed.length > 4) stemmed = stemmed.slice(0, -2);
  if (stemmed.endsWith('e') && stemmed.length > 4) stemmed = stemmed.slice(0, -1);
  return stemmed;
}

/** The words of a text that matter for matching: lower case, compounds folded, no stopwords, stemmed. */
export function terms(text) {
  // A possessive's "s" is no word ("the node's unit": node, unit).
  let lower = text.normalize('NFKC').toLowerCase().replace(/(?<=[\p{L}\p{N}])['\u2019]s\b/gu, '');
  for (const [pattern, word] of COMPOUNDS) lower = lower.replace(pattern, word);
  return (lower.match(/[\p{L}\p{N}]+/gu) ?? []).filter((word) => !STOPWORDS.has(word)).map(stem);
}

/**
 * Words of a question and the docs' words for the same thing (by stem): the product's own vocabulary, which a
 * question in everyday words does not use. They count half as much as the question's own words.
 */
const SYNONYMS = new Map(
  [
  ['database', ['db', 'sqlite']],
  ['log', ['journalctl', 'journal']],
  ['prompt', ['unattended', 'interactive']],
  ['script', ['unattended']],
  ['big', ['limit', 'most', 'maximum']],
  ['large', ['limit', 'most', 'maximum']],
  ['size', ['limit', 'most', 'maximum']],
  ['memory', ['mib']],
  ['cost', ['price']],
  ['charge', ['price', 'refund']],
  ['new', ['init']],
  ['start', ['init']],
  ['create', ['init']],
  ['need', ['require', 'newer']],
  ['installed', ['install_path', 'live']],
  // A registration's schedule is its `--every`; what a thing may hold or contain is a limit on it.
  ['schedule', ['every']],
  ['hold', ['most', 'limit']],
  ['contain', ['most', 'limit']],
  ].map(([word, others]) => [stem(word), others.map(stem)]),
);

/**
 * What a question asks for, and how a fact that holds such a value looks. A fact with it weighs more; for a value
 * (`strict`: a price, a path, a size, a duration, a version) a fact without one cannot be the answer, and weighs less.
 */
const WITHOUT_VALUE = 0.4;
const WANTED = [
  { asks: /\b(?:cost|price|how much does|charged? for)\b/i, has: (fact) => /\$\d/.test(fact.text), weight: 1.8, strict: true },
  // The price of one run, not what runs cost over a day or a month.
  { asks: /\b(?:one|a|per|each) run\b/i, has: (fact) => /\bper run\b/i.test(fact.text), weight: 1.3 },
  // A path: absolute, or relative to the node's home as the docs write them (`var/agents/<agent_id>/`, `etc/`).
  { asks: /^where\b|\bwhere (?:is|are|does|do)\b/i, has: (fact) => /(?:^|[\s`(])\/[a-z]/i.test(fact.text) || /`[\w.-]+\/[^`\s]*`/.test(fact.raw ?? ''), weight: 1.8, strict: true },
  { asks: /\bhow (?:big|large)\b|\bhow much (?:memory|disk|space)\b|\bsize\b/i, has: (fact) => /\d\s?(?:MiB|KiB|GiB|MB|KB|GB)\b/.test(fact.text), weight: 1.8, strict: true },
  { asks: /\bhow long\b|\bvalid\b|\bexpire/i, has: (fact) => /\b\d+\s?(?:s|seconds?|minutes?|hours?|days?)\b/.test(fact.text), weight: 1.6, strict: true },
  // A user account: "runs … as `svc-swarm`", "owner svc-swarm", "the service user `svc-swarm`".
  { asks: /\b(?:which|what) user\b|\bas (?:which|what|whom)\b|\bwho owns\b/i, has: (fact) => /\b(?:as|user|owner)\s+(?:`[a-z_][\w-]*`|[a-z_][\w]*-[\w-]+)/.test(fact.raw ?? fact.text), weight: 1.6, strict: true },
  { asks: /\b(?:which|what) version\b/i, has: (fact) => /\b\d+\.\d+/.test(fact.text), weight: 1.6, strict: true },
  { asks: /\bhow many\b|\bthreshold\b|\bdefault\b/i, has: (fact) => /\d/.test(fact.text), weight: 1.3 },
  // "How many files may a bundle hold?": what is allowed at most, a limit.
  { asks: /\bhow (?:many|much|big|large|long)\b.*\b(?:may|can)\b|\b(?:limit|maximum|at most)\b/i, has: (fact) => /\b(?:at most|up to|limits?|maximum)\b/i.test(fact.text), weight: 1.5 },
  { asks: /\b(?:which|what) (?:files|file types|extensions)\b/i, has: (fact) => /(?:^|[\s`(])\.[a-z0-9]{1,8}\b/i.test(fact.text), weight: 1.6, strict: true },
  {
    asks: /^how (?:do|can|should) i\b|\bwhich command\b|\bhow to\b|\bhow does .* (?:run|start)\b/i,
    has: (fact) => fact.kind === 'code' || (fact.kind === 'row' && /command/i.test(fact.row.headers[0])) || /\bswarm-node \w|--\w/.test(fact.text),
    weight: 1.5,
  },
];

const LABEL_WEIGHT = 1.5;
const FOCUS_LABEL_WEIGHT = 2.5;

/** What a "which X …" or "what X …" question asks for: X ("which input does … need": input). */
function focusOf(question) {
  const word = /^\s*(?:which|what)\s+([\p{L}\p{N}-]+)/iu.exec(question)?.[1];
  return word === undefined ? null : (terms(word)[0] ?? null);
}
const HEADING_WEIGHT = Number(process.env.TUTOR_HEADING_WEIGHT ?? 0.5);

/** "exit code 3", "exit 4": the row of a table whose first column is that code. */
function exitCodeAsked(question) {
  return /\bexit(?: code| status)?\s+(\d{1,3})\b/i.exec(question)?.[1] ?? null;
}

/**
 * Okapi BM25 (k1 1.2, b 0.75) of every fact against the question, times the share of the question's own words it
 * covers (itself or by a synonym: a fact that repeats one word does not beat one that holds them all), times the
 * bonuses; best first, score > 0.
 */
export function rankFacts(facts, question) {
  const own = [...new Set(terms(question))];
  const queryTerms = [...new Set([...own, ...own.flatMap((term) => SYNONYMS.get(term) ?? [])])];
  const weightOf = (term) => (own.includes(term) ? 1 : 0.5);
  // A fact's own words (with the line introducing a code block), and its heading's, which count half: a heading
  // says what every fact under it is about, a fact's own words what it says.
  const texts = facts.map((fact) => terms(`${fact.context ?? ''} ${fact.text}`));
  const headings = facts.map((fact) => terms(fact.heading ?? ''));
  const lengths = texts.map((text, i) => text.length + headings[i].length / 2);
  const averageLength = lengths.reduce((sum, length) => sum + length, 0) / Math.max(1, lengths.length);
  const holds = (i, term) => texts[i].includes(term) || headings[i].includes(term);
  const documentFrequency = new Map(queryTerms.map((term) => [term, facts.filter((_, i) => holds(i, term)).length]));
  const wanted = WANTED.filter((want) => want.asks.test(question));
  const exitCode = exitCodeAsked(question);
  const focus = focusOf(question);
  return facts
    .map((fact, i) => {
      let score = 0;
      for (const term of queryTerms) {
        const frequency = texts[i].filter((word) => word === term).length + headings[i].filter((word) => word === term).length * HEADING_WEIGHT;
        if (frequency === 0) continue;
        const df = documentFrequency.get(term);
        const idf = Math.log(1 + (facts.length - df + 0.5) / (df + 0.5));
        score += (weightOf(term) * idf * frequency * 2.2) / (frequency + 1.2 * (0.25 + (0.75 * lengths[i]) / averageLength));
      }
      // A word the fact says itself covers it; one only its heading says, half.
      const says = (term) => texts[i].includes(term) || (SYNONYMS.get(term) ?? []).some((other) => texts[i].includes(other));
      const heads = (term) => headings[i].includes(term) || (SYNONYMS.get(term) ?? []).some((other) => headings[i].includes(other));
      const covered = own.reduce((sum, term) => sum + (says(term) ? 1 : heads(term) ? 0.5 : 0), 0);
      score *= covered / Math.max(1, own.length);
      for (const want of wanted) score *= want.has(fact) ? want.weight : want.strict ? WITHOUT_VALUE : 1;
      // The sentence that defines what the question names ("**Input**: …"), above all what it asks for ("which
      // input does … need").
      if (fact.label) {
        const labelTerms = terms(fact.label);
        if (focus !== null && labelTerms.includes(focus)) score *= FOCUS_LABEL_WEIGHT;
        else if (labelTerms.some((term) => own.includes(term))) score *= LABEL_WEIGHT;
      }
      if (exitCode !== null && fact.kind === 'row' && /exit/i.test(fact.row.headers[0]) && fact.row.cells[0] === exitCode) score = score * 3 + 5;
      return { ...fact, score: Math.round(score * 1000) / 1000 };
    })
    .filter((fact) => fact.score > 0)
    .sort((a, b) => b.score - a.score);
}
