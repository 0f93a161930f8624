// swarm-node secret set | list | rm: your secrets at the service (docs/api.md "Secrets"), handed to the runs of the
// agents whose agent.json declares them, as environment variables. Values go in, never come out: list shows names.
import { Command } from 'commander';
import { SvcError } from '../../contract/errors.js';
import { secretNameProblem } from '../../contract/secret-names.js';
import { withRecentSignIn } from '../step-up.js';
import { contextFor } from '../context.js';
import { confirmRemoval } from '../confirm-removal.js';
import { readSecretValue } from '../secret-value.js';
import { shortTime, table } from '../table.js';

function checkName(name: string): string {
  const problem = secretNameProblem(name);
  if (problem !== undefined) throw new SvcError('usage', `the secret's name ${problem}`);
  return name;
}

export function secretCommand(): Command {
  const secret = new Command('secret')
    .description('your secrets, handed to the runs of agents that declare them: set, list, rm')
    .addHelpText(
      'after',
      `
An agent names the secrets it needs in its agent.json ("secrets": ["OPENAI_API_KEY"]); each of its runs gets the
values you set as environment variables of those names, on whichever of your nodes runs it. The service keeps
them encrypted; outputs, errors and logs of the run show *** where a value (or its base64 or URL-encoded form)
was. Setting and removing need a sign-in within 15 minutes (a terminal renews it by mail).

Example:
  $ printf %s "$OPENAI_API_KEY" | swarm-node secret set OPENAI_API_KEY
  $ swarm-node secret set SMTP_PASSWORD --value-file ./smtp-password
  $ swarm-node secret list
  $ swarm-node secret rm SMTP_PASSWORD --yes`,
    );

  secret.addCommand(
    new Command('set')
      .description('set a secret (a new one, or a new value): the value from --value-file, a hidden prompt, or stdin')
      .argument('<name>', 'an environment variable name: capitals, digits and _ (OPENAI_API_KEY)')
      .option('--value-file <file>', 'read the value from this file ("-" for stdin); one final newline is dropped')
      .addHelpText(
        'after',
        '\nExample:\n  $ printf %s "$OPENAI_API_KEY" | swarm-node secret set OPENAI_API_KEY\n  $ swarm-node secret set SMTP_PASSWORD --value-file ./smtp-password',
      )
      .action(async (name: string, options: { valueFile?: string }, command: Command) => {
        const ctx = contextFor(command);
        checkName(name);
        const value = await readSecretValue(ctx, name, options.valueFile);
        const { setSecret } = await import('../../node/service/secrets-api.js');
        const client = await ctx.client();
        const written = await withRecentSignIn(ctx, (token) => setSecret(client, token, name, value));
        ctx.output.result(written, (w) => `${w.created ? 'Set' : 'Changed'} ${w.name}: runs of agents that declare it get it from now on.`);
      }),
  );

  secret.addCommand(
    new Command('list')
      .description('the names of your secrets and when each was set (never a value)')
      .addHelpText('after', '\nExample:\n  $ swarm-node secret list\n  $ swarm-node --json secret list')
      .action(async (_options: unknown, command: Command) => {
        const ctx = contextFor(command);
        const { listSecrets } = await import('../../node/service/secrets-api.js');
        const listed = await listSecrets(await ctx.client(), ctx.requireJwt().token);
        ctx.output.result(listed, (l) =>
          l.secrets.length === 0
            ? 'No secrets yet: swarm-node secret set NAME'
            : table(
                ['NAME', 'CREATED', 'UPDATED'],
                l.secrets.map((s) => [s.name, shortTime(s.created_at), shortTime(s.updated_at)]),
              ),
        );
      }),
  );

  secret.addCommand(
    new Command('rm')
      .description('remove a secret: runs get it no more (it cannot be brought back)')
      .argument('<name>', 'the secret to remove')
      .option('-y, --yes', 'remove without asking (needed when stdin is not a terminal)')
      .addHelpText('after', '\nExample:\n  $ swarm-node secret rm SMTP_PASSWORD --yes')
      .action(async (name: string, options: { yes?: boolean }, command: Command) => {
        const ctx = contextFor(command);
        checkName(name);
        await confirmRemoval(ctx, {
          yes: options.yes,
          what: name,
          question: `Remove the secret ${name} for good? Runs of agents that declare it get it no more.`,
          again: `swarm-node secret rm ${name}`,
        });
        const { removeSecret } = await import('../../node/service/secrets-api.js');
        const client = await ctx.client();
        const removed = await withRecentSignIn(ctx, (token) => removeSecret(client, token, name));
        ctx.output.result(removed, (r) => `Removed ${r.name}.`);
      }),
  );
  return secret;
}
