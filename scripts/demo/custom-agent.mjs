// The demo's own agent (docs/sections/agent-upload.md): what `swarm-node agent init` scaffolds, with one line
// edited the way a user starts theirs, so that its run's output is unmistakably this code and not the built-in agent.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A catalog agent the demo uses nowhere else: the upload replaces it for the demo's user only. */
export const CUSTOM_AGENT = 'agent_svc_skills_005';
export const CUSTOM_PRICE_CENTS = 5;
/** What only the edited agent says; the demo and its test look for it. */
export const CUSTOM_MARK = 'a version made by the demo';

const SCAFFOLDED = `summary: \`Hello, \${name}, from ${CUSTOM_AGENT} on \${hostname()}\``;
const EDITED = `summary: \`Hello, \${name}: ${CUSTOM_AGENT}, ${CUSTOM_MARK}, ran on \${hostname()}\``;

/**
 * Edits the scaffold's main.mjs in `dir`: the summary it answers, nothing else (the same values in it). Returns the
 * line before and after, to show. Throws when the scaffold no longer has that line.
 */
export function editCustomAgent(dir) {
  const file = join(dir, 'main.mjs');
  const script = readFileSync(file, 'utf8');
  const line = script.split('\n').find((text) => text.includes(SCAFFOLDED));
  if (line === undefined) throw new Error(`${file} has no line with ${SCAFFOLDED}: agent init scaffolds something else now`);
  const edited = line.replace(SCAFFOLDED, EDITED);
  writeFileSync(file, script.replace(line, edited));
  return { before: line, after: edited };
}
