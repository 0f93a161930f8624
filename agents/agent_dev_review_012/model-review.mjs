// A language model's review of the change, when the node has one (./model.mjs): the lines the change added, with
// every line a secret was found on withheld, so no credential leaves the host, cut to a size a small local model
// takes. Beside the analyzers' findings, never instead of them.
import { completeOrExplain } from './model.mjs';

const MAX_PROMPT_CHARS = 24_000;
const SYSTEM = 'You review a code change. Name real problems only (bugs, security holes, missing error handling), each with its file and line and a one-line fix. Say "No problems found." when there are none. Be brief.';

/** `added` maps each file to its added lines (number → text). Answers `{model, text}` or `{error}`. */
export async function modelReview(model, added, findings) {
  const withheld = new Set(findings.filter((finding) => finding.kind === 'secret').map((finding) => `${finding.file}:${finding.line}`));
  let prompt = '';
  for (const [file, lines] of added) {
    let block = `--- ${file}\n`;
    for (const [line, text] of lines) block += `${line}: ${withheld.has(`${file}:${line}`) ? '[line withheld: it holds a secret]' : text}\n`;
    if (prompt.length + block.length > MAX_PROMPT_CHARS) {
      prompt += `--- (further files left out: the change is over ${MAX_PROMPT_CHARS} characters)\n`;
      break;
    }
    prompt += block;
  }
  if (prompt === '') return null;
  return completeOrExplain(model, [{ role: 'system', content: SYSTEM }, { role: 'user', content: `The lines this change adds, by file, with their line numbers:\n${prompt}` }]);
}
