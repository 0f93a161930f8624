// What the wizard's steps say to a person while they work. src/cli/output.ts implements it: lines to stderr, a
// spinner only on a terminal.
import type { Clock } from '../../lib/clock.js';
import type { ServiceClient } from '../service/service-client.js';

export interface WizardUi {
  info(line: string): void;
  warn(line: string): void;
  success(line: string): void;
  spin<T>(text: string, work: (update: (text: string) => void) => Promise<T>): Promise<T>;
}

/** What every step is given. */
export interface WizardStepDeps {
  client: ServiceClient;
  clock: Clock;
  credentialsFile: string;
  ui: WizardUi;
  /** Between two checks while waiting for a payment or for funds. */
  pollIntervalMs: number;
  sleep: (ms: number) => Promise<void>;
}
