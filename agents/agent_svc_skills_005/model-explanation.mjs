// A language model's explanation of the answer, when the node has one (./model.mjs): written from the passages the
// tutor found and only from them, beside the cited fact, never instead of it.
import { completeOrExplain } from './model.mjs';

const SYSTEM = 'You are a tutor for the product these docs describe. Answer the question in two or three sentences, using only the passages given. Name the command, value or limit exactly as the passages write it.';

/** `{text, model}` or `{error}`. */
export async function modelExplanation(model, question, best, passages) {
  const context = passages.map((passage) => `(${passage.citation.section}, lines ${passage.citation.line_start}-${passage.citation.line_end})\n${passage.text}`).join('\n\n');
  return completeOrExplain(model, [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: `Passages:\n\n${context}\n\nThe fact that answers best: ${best.text}\n\nQuestion: ${question}` },
  ], { maxTokens: 300 });
}
