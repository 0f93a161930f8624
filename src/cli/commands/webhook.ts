// swarm-node webhook add | list | rm | rotate | deliveries | resend: HTTPS endpoints your run events are sent to,
// signed (docs/api.md "Webhooks"). Adding, removing and rotating need a sign-in within 15 minutes.
import { writeFileSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { WEBHOOK_EVENTS, type WebhookEvent } from '../../contract/webhook-limits.js';
import type { WebhookCreated } from '../../contract/webhooks.js';
import { parseDuration } from '../../node/agents/duration.js';
import { withRecentSignIn } from '../step-up.js';
import { contextFor, type CommandContext } from '../context.js';
import { confirmRemoval } from '../confirm-removal.js';
import { countParser } from '../count-option.js';
import { shortTime, table } from '../table.js';

function events(value: string): WebhookEvent[] {
  const names = value
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const unknown = names.filter((name) => !(WEBHOOK_EVENTS as readonly string[]).includes(name));
  if (names.length === 0 || unknown.length > 0)
    throw new InvalidArgumentError(`give events among ${WEBHOOK_EVENTS.join(', ')}, comma-separated`);
  return [...new Set(names)] as WebhookEvent[];
}

/** The signing secret: into --secret-file (0600) when given, else shown once on the result. */
function handOver(ctx: CommandContext, created: WebhookCreated, secretFile: string | undefined): Record<string, unknown> {
  if (secretFile === undefined) return created;
  writeFileSync(secretFile, `${created.signing_secret}\n`, { mode: 0o600 });
  const { signing_secret: _secret, ...rest } = created;
  ctx.output.info(`The signing secret is in ${secretFile} (0600).`);
  return { ...rest, signing_secret_file: secretFile };
}

const describeCreated =
  (verb: string) =>
  (c: Record<string, unknown>): string =>
    [
      `${verb} ${String(c.endpoint_id)}: ${String(c.url)} (${(c.events as string[]).join(', ')}).`,
      typeof c.signing_secret === 'string' ? `Signing secret (shown once; verify Svc-Signature with it): ${c.signing_secret}` : '',
    ]
      .filter((line) => line !== '')
      .join('\n');

export function webhookCommand(): Command {
  const webhook = new Command('webhook')
    .description('HTTPS endpoints your run and schedule events are sent to, signed: add, list, rm, rotate, deliveries, resend')
    .addHelpText(
      'after',
      `
Events: ${WEBHOOK_EVENTS.join(', ')}. Each delivery is a POST of {id, type: "run.<event>", created, data: {run}},
signed with the endpoint's secret like the service's payment webhooks: Svc-Signature: t=<unix>,v1=<HMAC-SHA256 hex
of "<t>.<body>">. A 2xx answer delivers it; otherwise it is tried again for about 21 hours.

Example:
  $ swarm-node webhook add https://hooks.example.com/svc --events succeeded,failed --secret-file ./whsec
  $ swarm-node webhook list
  $ swarm-node webhook deliveries 0193c1f2-…
  $ swarm-node webhook rotate 0193c1f2-… --previous-for 1h`,
    );

  webhook.addCommand(
    new Command('add')
      .description('send run and schedule events to an HTTPS URL; shows the signing secret once (or writes it to --secret-file)')
      .argument('<url>', 'https://… on a public address')
      .option('--events <list>', `which events, comma-separated (default all: ${WEBHOOK_EVENTS.join(',')})`, events)
      .option('--description <text>', 'a note for yourself')
      .option('--secret-file <file>', 'write the signing secret to this file (0600) instead of showing it')
      .addHelpText('after', '\nExample:\n  $ swarm-node webhook add https://hooks.example.com/svc --events succeeded,failed')
      .action(async (url: string, options: { events?: WebhookEvent[]; description?: string; secretFile?: string }, command: Command) => {
        const ctx = contextFor(command);
        const { addWebhook } = await import('../../node/service/webhooks-api.js');
        const client = await ctx.client();
        const given = {
          url,
          ...(options.events === undefined ? {} : { events: options.events }),
          ...(options.description === undefined ? {} : { description: options.description }),
        };
        const created = await withRecentSignIn(ctx, (token) => addWebhook(client, token, given));
        ctx.output.result(handOver(ctx, created, options.secretFile), describeCreated('Added'));
      }),
  );

  webhook.addCommand(
    new Command('list')
      .description('your endpoints')
      .addHelpText('after', '\nExample:\n  $ swarm-node webhook list')
      .action(async (_options: unknown, command: Command) => {
        const ctx = contextFor(command);
        const { listWebhooks } = await import('../../node/service/webhooks-api.js');
        const listed = await listWebhooks(await ctx.client(), ctx.requireJwt().token);
        ctx.output.result(listed, (l) =>
          l.webhooks.length === 0
            ? 'No webhook endpoints: swarm-node webhook add https://…'
            : table(
                ['ID', 'URL', 'EVENTS', 'CREATED'],
                l.webhooks.map((w) => [w.endpoint_id, w.url, w.events.join(','), shortTime(w.created_at)]),
              ),
        );
      }),
  );

  webhook.addCommand(
    new Command('rm')
      .description('remove an endpoint, with its deliveries (it cannot be undone)')
      .argument('<id>', 'the endpoint (swarm-node webhook list)')
      .option('-y, --yes', 'remove without asking (needed when stdin is not a terminal)')
      .addHelpText('after', '\nExample:\n  $ swarm-node webhook rm 0193c1f2-… --yes')
      .action(async (id: string, options: { yes?: boolean }, command: Command) => {
        const ctx = contextFor(command);
        await confirmRemoval(ctx, {
          yes: options.yes,
          what: `endpoint ${id}`,
          question: `Remove the webhook endpoint ${id} and its deliveries for good?`,
          again: `swarm-node webhook rm ${id}`,
        });
        const { removeWebhook } = await import('../../node/service/webhooks-api.js');
        const client = await ctx.client();
        await withRecentSignIn(ctx, (token) => removeWebhook(client, token, id));
        ctx.output.result({ endpoint_id: id, removed: true }, () => `Removed ${id}.`);
      }),
  );

  webhook.addCommand(
    new Command('rotate')
      .description('make a new signing secret; the old one still signs beside it for --previous-for (default 24h)')
      .argument('<id>', 'the endpoint')
      .option('--previous-for <duration>', 'how long the old secret keeps signing too: 0s to 7d, e.g. 1h', (value: string) =>
        value === '0' || value === '0s' ? 0 : parseDuration(value),
      )
      .option('--secret-file <file>', 'write the new signing secret to this file (0600) instead of showing it')
      .addHelpText('after', '\nExample:\n  $ swarm-node webhook rotate 0193c1f2-… --previous-for 1h --secret-file ./whsec')
      .action(async (id: string, options: { previousFor?: number; secretFile?: string }, command: Command) => {
        const ctx = contextFor(command);
        const { rotateWebhookSecret } = await import('../../node/service/webhooks-api.js');
        const client = await ctx.client();
        const rotated = await withRecentSignIn(ctx, (token) => rotateWebhookSecret(client, token, id, options.previousFor));
        ctx.output.result(handOver(ctx, rotated, options.secretFile), describeCreated('Rotated the secret of'));
      }),
  );

  webhook.addCommand(
    new Command('deliveries')
      .description("an endpoint's deliveries, newest first; with an event id, that delivery's attempts and answers")
      .argument('<id>', 'the endpoint')
      .argument('[event_id]', 'one delivery')
      .option('--limit <n>', 'how many (1 to 100)', countParser(1, 100), 20)
      .option('--before <event_id>', 'the deliveries older than this one (the next page)')
      .addHelpText(
        'after',
        '\nExample:\n  $ swarm-node webhook deliveries 0193c1f2-…\n  $ swarm-node webhook deliveries 0193c1f2-… 0193c1f3-…',
      )
      .action(async (id: string, eventId: string | undefined, options: { limit: number; before?: string }, command: Command) => {
        const ctx = contextFor(command);
        const api = await import('../../node/service/webhooks-api.js');
        const client = await ctx.client();
        const token = ctx.requireJwt().token;
        if (eventId !== undefined) {
          const detail = await api.webhookDelivery(client, token, id, eventId);
          ctx.output.result(detail, (d) =>
            [
              `${d.event_type} of run ${d.run_id}: ${d.status} after ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}`,
              table(
                ['#', 'AT', 'STATUS', 'ERROR', 'MS'],
                d.attempt_log.map((a) => [
                  String(a.attempt),
                  shortTime(a.at),
                  a.status_code === null ? '-' : String(a.status_code),
                  a.error ?? '',
                  String(a.duration_ms),
                ]),
              ),
            ].join('\n'),
          );
          return;
        }
        const page = await api.webhookDeliveries(client, token, id, {
          limit: options.limit,
          ...(options.before === undefined ? {} : { before: options.before }),
        });
        ctx.output.result(page, (p) =>
          p.deliveries.length === 0
            ? 'No deliveries yet.'
            : `${table(
                ['EVENT', 'TYPE', 'OF', 'STATUS', 'TRIES', 'LAST'],
                p.deliveries.map((d) => [
                  d.event_id,
                  d.event_type,
                  d.run_id ?? d.schedule_id ?? '',
                  d.status,
                  String(d.attempts),
                  d.last_status_code === null ? (d.last_error ?? '') : String(d.last_status_code),
                ]),
              )}${p.next_before === null ? '' : `\nOlder: swarm-node webhook deliveries ${id} --before ${p.next_before}`}`,
        );
      }),
  );

  webhook.addCommand(
    new Command('resend')
      .description('send a delivery again now (a new series of tries)')
      .argument('<id>', 'the endpoint')
      .argument('<event_id>', 'the delivery')
      .addHelpText('after', '\nExample:\n  $ swarm-node webhook resend 0193c1f2-… 0193c1f3-…')
      .action(async (id: string, eventId: string, _options: unknown, command: Command) => {
        const ctx = contextFor(command);
        const { resendWebhook } = await import('../../node/service/webhooks-api.js');
        const delivery = await resendWebhook(await ctx.client(), ctx.requireJwt().token, id, eventId);
        ctx.output.result(delivery, (d) => `Sending ${d.event_type} of run ${d.run_id} to ${id} again.`);
      }),
  );
  return webhook;
}
