// npm run eval:agents [-- name…]: each agent's figures on its eval sets (scripts/eval/sets/<agent_id>/: train.json
// and train-2.json…, the parts the agents were tuned on, and heldout.json, kept aside; sets/README.md). Like a bench it prints figures and asserts
// nothing; it stays out of npm test. Names: dev-review, rag, tutor, outreach, ops-monitor; none: all of them.
// --no-history leaves out the dev review of every commit of this repository, --no-scale the RAG agent's 10,000
// files (the longest parts), --no-heldout every held-out part (for tuning: its figures are read once, after).
import { evalDevReview } from './dev-review.mjs';
import { evalOpsMonitor } from './ops-monitor.mjs';
import { evalOutreach } from './outreach.mjs';
import { evalRag } from './rag.mjs';
import { evalTutor } from './tutor.mjs';
import { removeTempDirs } from './support.mjs';

const EVALS = {
  'dev-review': (options) => evalDevReview(options),
  rag: (options) => evalRag(options),
  tutor: () => evalTutor(),
  outreach: () => evalOutreach(),
  'ops-monitor': () => evalOpsMonitor(),
};

const args = process.argv.slice(2);
const options = { history: !args.includes('--no-history'), scale: !args.includes('--no-scale') };
const names = args.filter((arg) => !arg.startsWith('--'));
for (const name of names) {
  if (!(name in EVALS)) {
    process.stderr.write(`unknown eval ${name}; known: ${Object.keys(EVALS).join(', ')}\n`);
    process.exit(2);
  }
}
try {
  for (const name of names.length > 0 ? names : Object.keys(EVALS)) await EVALS[name](options);
} finally {
  removeTempDirs();
}
