// Node labels (docs/api.md "Labels"), the way GitHub's runner labels and Buildkite's agent tags route jobs: a node
// carries labels, an execute may require some, and the run goes only to a node that has all of them. One rule for
// the service, the node and the CLI. A label is a word a shell, a URL path, a comma-separated flag and a logfmt
// line all take unquoted; letters are compared without case and kept lowercase, so `GPU` and `gpu` are one label.
import { SvcError } from './errors.js';

/** What the service's schemas accept; letters of either case (stored lowercase). */
export const LABEL_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$';
export const MAX_LABEL_LENGTH = 63;
/** Most labels one node carries, and so the most one execute may require (more could match no node). */
export const MAX_LABELS = 16;

const LABEL = new RegExp(LABEL_PATTERN);

export function isLabel(value: string): boolean {
  return LABEL.test(value);
}

/** Lowercase, each once, sorted: the one spelling of a set of labels (stored, compared, hashed for a key). */
export function normalizeLabels(labels: readonly string[]): string[] {
  return [...new Set(labels.map((label) => label.toLowerCase()))].sort();
}

/**
 * The labels of command-line values: each value one label or several separated by commas (`--label gpu,linux
 * --label arm64`), checked and normalised; a usage error names the first bad one and the rule.
 */
export function parseLabelArguments(values: readonly string[]): string[] {
  const labels = values.flatMap((value) => value.split(',')).map((label) => label.trim());
  const bad = labels.find((label) => !isLabel(label));
  if (bad !== undefined) {
    throw new SvcError('usage', `${bad === '' ? 'an empty label' : `"${bad}"`} is not a label`, {
      remedy: `A label is 1-${MAX_LABEL_LENGTH} letters, digits, dots, underscores or hyphens, starting with a letter or digit (gpu, linux-x64, zone.eu-1).`,
    });
  }
  const normalized = normalizeLabels(labels);
  assertLabelCount(normalized, 'you gave');
  return normalized;
}

/**
 * Refuses a set larger than a node may carry, as a usage error (the CLI) before anything is written or sent.
 * `subject` begins the message: "this node would carry" 17 labels.
 */
export function assertLabelCount(labels: readonly string[], subject: string): void {
  if (labels.length > MAX_LABELS) {
    throw new SvcError('usage', `${subject} ${labels.length} labels; at most ${MAX_LABELS} are allowed`);
  }
}
