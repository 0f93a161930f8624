// swarm-node docs: the private documentation sections the JWT's tier unlocks, or one section's text.
import { Command } from 'commander';
import { DOCS_SECTIONS } from '../../contract/tiers.js';
import { contextFor } from '../context.js';

export function docsCommand(): Command {
  return new Command('docs')
    .description('list the documentation sections your tier unlocks, or print one')
    .argument('[section]', `one of: ${DOCS_SECTIONS.join(', ')}`)
    .addHelpText('after', '\nExample:\n  $ swarm-node docs\n  $ swarm-node docs node-install | less')
    .action(async (section: string | undefined, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const jwt = ctx.requireJwt();
      const { readDocs } = await import('../../node/service/docs.js');
      const answer = await readDocs(
        { client: await ctx.client(), clock: ctx.clock, credentialsFile: ctx.paths.credentialsFile },
        jwt.token,
        section,
      );
      if ('section' in answer) {
        ctx.output.result(answer.section, (d) => d.body);
        return;
      }
      ctx.output.result(answer, (r) => r.docs_sections.join('\n'));
      if (answer.docs_sections.length > 0) ctx.output.next(`Read one: swarm-node docs ${answer.docs_sections[0]}`);
    });
}
