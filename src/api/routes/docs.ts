// spec §1.4, §5.4 and DECISIONS.md: the JWT unlocks private documentation sections, per tier. GET /v1/docs lists
// the caller's sections; GET /v1/docs/{section} serves one as Markdown. The sections are files in docs/sections of
// the package, read once when the service starts.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { SvcError } from '../../contract/errors.js';
import { DocsSectionParams, DocsSectionResponse } from '../../contract/schemas.js';
import { DOCS_SECTIONS, TIERS, isDocsSection, isTierId, type DocsSection } from '../../contract/tiers.js';
import { requireAccessToken } from '../bearer.js';
import type { ServiceContext } from '../context.js';

const SECTIONS_DIR = join('docs', 'sections');

export const DocsListResponse = Type.Object({
  tier: Type.String(),
  sections: Type.Array(Type.Object({ section: Type.String(), title: Type.String() })),
});
export type DocsListResponse = Static<typeof DocsListResponse>;

export function docsRoutes(ctx: ServiceContext, options: { sectionsDir?: string } = {}): FastifyPluginAsync {
  return async (app) => {
    const library = loadDocsSections(options.sectionsDir ?? join(packageRoot(), SECTIONS_DIR));

    app.get('/v1/docs', { schema: { response: { 200: DocsListResponse } } }, async (request) => {
      const claims = await requireAccessToken(ctx, request);
      return { tier: claims.tier, sections: unlockedBy(claims.tier).map((section) => ({ section, title: library.get(section)!.title })) };
    });

    app.get<{ Params: Static<typeof DocsSectionParams> }>(
      '/v1/docs/:section',
      { schema: { params: DocsSectionParams, response: { 200: DocsSectionResponse } } },
      async (request) => {
        // The token is checked first: without one, nobody learns which section names exist.
        const claims = await requireAccessToken(ctx, request);
        const { section } = request.params;
        if (!isDocsSection(section)) {
          throw new SvcError('not_found', `there is no documentation section "${section}"`, {
            remedy: `Use one of: ${DOCS_SECTIONS.join(', ')} (swarm-node docs lists yours).`,
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

function unlockedBy(tier: string): readonly DocsSection[] {
  return isTierId(tier) ? TIERS[tier].docs_sections : [];
}

function tiersUnlocking(section: DocsSection): string[] {
  return Object.values(TIERS)
    .filter((tier) => tier.docs_sections.includes(section))
    .map((tier) => tier.tier_id);
}

/** Every section of the contract, read now: a missing file is a packaging mistake that must stop the start. */
export function loadDocsSections(dir: string): ReadonlyMap<DocsSection, DocsSectionResponse> {
  const library = new Map<DocsSection, DocsSectionResponse>();
  for (const section of DOCS_SECTIONS) {
    const file = join(dir, `${section}.md`);
    let body: string;
    try {
      body = readFileSync(file, 'utf8');
    } catch (error) {
      throw new Error(`the documentation section ${section} is missing: cannot read ${file}`, { cause: error });
    }
    library.set(section, { section, title: titleOf(body, section), content_type: 'text/markdown', body });
  }
  return library;
}

/** The first level-one heading names the section. */
function titleOf(markdown: string, fallback: string): string {
  return /^# +(.+?)\s*$/m.exec(markdown)?.[1] ?? fallback;
}

/**
 * The directory holding package.json, found from this module's own file: src/api/routes/ when run from source,
 * dist/ or dist/api/ from the bundle. docs/ ships in the package ("files"), beside dist/.
 */
export function packageRoot(): string {
  const start = dirname(fileURLToPath(import.meta.url));
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, SECTIONS_DIR))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package directory with ${SECTIONS_DIR} above ${start}`);
  }
}
