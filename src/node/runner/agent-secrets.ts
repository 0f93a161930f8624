// A run's secrets on the node (docs/api.md "Secrets"): the values the service handed with the run, given to the agent
// as environment variables of their names, in every isolation mode (the environment is how each mode starts the
// agent: spawn's env, bubblewrap's inherited one, the systemd service's request line on the agent socket), and never
// written to the node's disk: not in the executions journal (only the redacted result is), not in a file, not in an
// argument. A name the contract reserves is dropped here too, whatever the service sent (an LD_PRELOAD would load into
// the sandbox's launchers, some of which run as root).
import { secretNameProblem, type RunSecrets } from '../../contract/secrets.js';
import { createRedactor, type Redact } from '../../lib/redact.js';

export function secretsEnv(secrets: RunSecrets | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(secrets ?? {})) {
    if (secretNameProblem(name) === undefined && typeof value === 'string' && !value.includes('\u0000')) env[name] = value;
  }
  return env;
}

/** What hides the run's secret values in what it wrote: its output, its error, its log lines. */
export function secretsRedactor(secrets: RunSecrets | undefined): Redact {
  return createRedactor(Object.values(secrets ?? {}));
}
