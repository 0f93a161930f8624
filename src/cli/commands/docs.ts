// swarm-node docs: the private documentation sections the JWT's tier unlocks, or one section's text.
import { Command } from 'commander';
import { SvcError } from '../../contract/errors.js';
import { DOCS_SECTIONS, isDocsSection } from '../../contract/tiers.js';
import { verifyToken } from '../../node/session.js';
import { contextFor } from '../context.js';

export function docsCommand(): Command {
  return new Command('docs')
    .description('list the documentation sections your tier unlocks, or print one')
    .argument('[section]', `one of: ${DOCS_SECTIONS.join(', ')}`)
    .addHelpText('after', '\nExample:\n  $ swarm-node docs\n  $ swarm-node docs node-install | less')
    .action(async (section: string | undefined, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const jwt = ctx.requireJwt();
      if (section !== undefined && !isDocsSection(section)) {
        throw new SvcError('not_found', `there is no docs section "${section}"`, { remedy: `Sections: ${DOCS_SECTIONS.join(', ')}.` });
      }
      const client = await ctx.client();
      const signedIn = await verifyToken({ client, clock: ctx.clock, credentialsFile: ctx.paths.credentialsFile }, jwt.token);
      if (section === undefined) {
        ctx.output.result({ tier: signedIn.tier, docs_sections: signedIn.docs_sections }, (r) => r.docs_sections.join('\n'));
        if (signedIn.docs_sections.length > 0) ctx.output.info(`Read one: swarm-node docs ${signedIn.docs_sections[0]}`);
        return;
      }
      if (!signedIn.docs_sections.includes(section)) {
        throw new SvcError('forbidden', `your tier ${signedIn.tier} does not unlock the section "${section}"`, {
          remedy: `Unlocked: ${signedIn.docs_sections.join(', ') || '(none)'}. Another tier unlocks more (spec: tiers and their sections).`,
        });
      }
      const doc = await client.docsSection(jwt.token, section);
      ctx.output.result(doc, (d) => d.body);
    });
}
