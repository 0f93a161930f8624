// A whole-number option (--limit), parsed by commander so a wrong value is its usage error (exit 2) before any work.
import { InvalidArgumentError } from 'commander';

export function countParser(min: number, max: number): (value: string) => number {
  return (value) => {
    const count = Number(value);
    if (!/^\d+$/.test(value) || count < min || count > max) throw new InvalidArgumentError(`give a whole number from ${min} to ${max}`);
    return count;
  };
}
