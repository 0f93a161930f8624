// Parsers of repeated options (--input, --label), defined with the commands (run.ts's own reading of the input is in
// run-input.ts).
import { InvalidArgumentError } from 'commander';

/** commander's collector for a repeated --input. */
export function collectInputPair(value: string, previous: string[] = []): string[] {
  const separator = value.indexOf('=');
  if (separator < 1) throw new InvalidArgumentError('give key=value, for example --input repo=/srv/app');
  return [...previous, value];
}

/** commander's collector for a repeated option whose values are checked later (--label). */
export function collectValues(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}
