// swarm-node audit: what happened to your account (docs/api.md "Audit"): sign-ins, tokens, enrolments, removals,
// rotations, uploads, with when, from which address and client.
import { Command } from 'commander';
import type { AuditEvent } from '../../contract/auth.js';
import { contextFor } from '../context.js';
import { table } from '../table.js';
import { countParser } from '../count-option.js';

interface AuditOptions {
  limit: number;
  before?: string;
}

export function auditCommand(): Command {
  return new Command('audit')
    .description("your account's events, newest first: sign-ins, tokens, nodes enrolled and removed, uploads")
    .option('--limit <n>', 'how many events (1 to 200)', countParser(1, 200), 20)
    .option('--before <event_id>', 'the events older than this one (the next page)')
    .addHelpText('after', '\nExample:\n  $ swarm-node audit\n  $ swarm-node audit --limit 100 --json')
    .action(async (options: AuditOptions, command: Command) => {
      const ctx = contextFor(command);
      const { auditEvents } = await import('../../node/service/account-api.js');
      const page = await auditEvents(await ctx.client(), ctx.requireJwt().token, {
        limit: options.limit,
        ...(options.before === undefined ? {} : { before: options.before }),
      });
      ctx.output.result(page, (p) => renderAudit(p.events, p.next_before));
    });
}

function renderAudit(events: AuditEvent[], next: string | null): string {
  if (events.length === 0) return 'No events yet.';
  const rows = events.map((event) => [
    event.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z'),
    event.kind,
    describe(event),
    event.client_address ?? '',
    event.user_agent ?? '',
  ]);
  const more = next === null ? '' : `\nOlder: swarm-node audit --before ${next}`;
  return `${table(['AT', 'EVENT', 'WHAT', 'FROM', 'CLIENT'], rows)}${more}`;
}

function describe(event: AuditEvent): string {
  const detail = event.detail;
  const parts = ['node_id', 'agent_id', 'version', 'tier', 'tier_id', 'by', 'everywhere', 'revoked']
    .filter((key) => detail[key] !== undefined && detail[key] !== null)
    .map((key) => `${key}=${String(detail[key])}`);
  return parts.join(' ');
}
