// A language model's suggestion for the template, when the node has one (./model.mjs): one call, whatever the
// number of leads, with the template only (never a lead's data), its placeholders kept as they are.
import { completeOrExplain } from './model.mjs';

const SYSTEM = 'You improve cold outreach e-mails. Rewrite the template to be shorter, clearer and more personal. Keep every {{placeholder}} exactly as written and the "Subject:" first line if there is one. Answer with the template only.';

/** `{text, model}` or `{error}`. */
export async function templateSuggestion(model, template) {
  return completeOrExplain(model, [{ role: 'system', content: SYSTEM }, { role: 'user', content: template }], { maxTokens: 500 });
}
