// spec §1.4, §5.4 and docs/decisions/0006-tiers.md: the JWT unlocks private documentation sections, per tier.
// GET /v1/docs lists the caller's sections; GET /v1/docs/{section} serves one as Markdown (src/api/docs/library.ts
// reads them).
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { SvcError } from '../../../contract/errors.js';
import { DocsSectionParams, DocsSectionResponse } from '../../../contract/schemas.js';
import { DOCS_SECTIONS, isDocsSection } from '../../../contract/tiers.js';
import { loadDocsSections, sectionsDirectory, tiersUnlocking, unlockedBy } from '../../docs/library.js';
import { userOf } from '../../http/auth.js';
import type { ServiceContext } from '../../context.js';

export const DocsListResponse = Type.Object({
  tier: Type.String(),
  sections: Type.Array(Type.Object({ section: Type.String(), title: Type.String() })),
});
export type DocsListResponse = Static<typeof DocsListResponse>;

export function docsRoutes(ctx: ServiceContext, options: { sectionsDir?: string } = {}): FastifyPluginAsync {
  return async (app) => {
    const library = loadDocsSections(options.sectionsDir ?? sectionsDirectory());

    app.get('/v1/docs', { config: { auth: 'access-token' }, schema: { response: { 200: DocsListResponse } } }, async (request) => {
      const claims = userOf(request);
      return { tier: claims.tier, sections: unlockedBy(claims.tier).map((section) => ({ section, title: library.get(section)!.title })) };
    });

    app.get<{ Params: Static<typeof DocsSectionParams> }>(
      '/v1/docs/:section',
      // The token is checked first (before the params): without one, nobody learns which section names exist.
      { config: { auth: 'access-token' }, schema: { params: DocsSectionParams, response: { 200: DocsSectionResponse } } },
      async (request) => {
        const claims = userOf(request);
        const { section } = request.params;
        if (!isDocsSection(section)) {
          throw new SvcError('not_found', `there is no documentation section "${section}"`, {
            remedy: `Use one of: ${DOCS_SECTIONS.join(', ')} (yours: swarm-node docs).`,
          });
        }
        if (!unlockedBy(claims.tier).includes(section)) {
          throw new SvcError('forbidden', `the section "${section}" is not unlocked by the tier ${claims.tier}`, {
            remedy: `Buy a tier that unlocks it: ${tiersUnlocking(section).join(' or ')}, then sign in with that offer.`,
          });
        }
        return library.get(section)!;
      },
    );
  };
}
