// The answer written by a language model, when the node has one (./model.mjs), from the passages the search found
// and only from them: each source is numbered, the model cites them as [1], [2], and the sources it cites are the
// answer's citations. A model that answers nothing usable leaves the search's own answer standing.
import { completeOrExplain } from './model.mjs';

const SYSTEM =
  'Answer the question from the numbered sources only, in at most five sentences, and cite the sources you used as [1], [2]. ' +
  'If the sources do not answer it, reply exactly: NOT IN SOURCES';

/** `{text, model, cited}`, or `{error}`, or `{text: null, model}` when the model found no answer in the sources. */
export async function modelAnswer(model, question, sources) {
  const numbered = sources.map((source, i) => `[${i + 1}] ${source.citation}\n${source.text}`).join('\n\n');
  const reply = await completeOrExplain(model, [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: `Sources:\n\n${numbered}\n\nQuestion: ${question}` },
  ]);
  if (reply.error) return { error: reply.error };
  if (/^NOT IN SOURCES/i.test(reply.text)) return { text: null, model: reply.model };
  const cited = [...new Set([...reply.text.matchAll(/\[(\d+)\]/g)].map((match) => Number(match[1])))].filter((n) => n >= 1 && n <= sources.length).map((n) => sources[n - 1]);
  return { text: reply.text, model: reply.model, cited: cited.length > 0 ? cited : [sources[0]] };
}
