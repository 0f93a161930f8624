// The --input option's parser, defined with the command (run.ts's own reading of the input is in run-input.ts).
import { InvalidArgumentError } from 'commander';

/** commander's collector for a repeated --input. */
export function collectInputPair(value: string, previous: string[] = []): string[] {
  const separator = value.indexOf('=');
  if (separator < 1) throw new InvalidArgumentError('give key=value, for example --input repo=/srv/app');
  return [...previous, value];
}
