// `docs` (spec §1.4, §5.4): the private documentation sections the token's tier unlocks, or one section's text.
import { SvcError } from '../../contract/errors.js';
import type { DocsSectionResponse } from '../../contract/schemas.js';
import { DOCS_SECTIONS, isDocsSection } from '../../contract/tiers.js';
import { verifyToken, type SessionDeps } from '../identity/session.js';

export type DocsAnswer = { tier: string; docs_sections: string[] } | { section: DocsSectionResponse };

/** The sections the service says this token unlocks; with `section`, that section's text, when it is one of them. */
export async function readDocs(deps: SessionDeps, token: string, section: string | undefined): Promise<DocsAnswer> {
  // An unknown name is told before anything is sent.
  if (section !== undefined && !isDocsSection(section)) {
    throw new SvcError('not_found', `there is no docs section "${section}"`, { remedy: `Sections: ${DOCS_SECTIONS.join(', ')}.` });
  }
  const signedIn = await verifyToken(deps, token);
  if (section === undefined) return { tier: signedIn.tier, docs_sections: signedIn.docs_sections };
  if (!signedIn.docs_sections.includes(section)) {
    throw new SvcError('forbidden', `your tier ${signedIn.tier} does not unlock the section "${section}"`, {
      remedy: `Unlocked: ${signedIn.docs_sections.join(', ') || '(none)'}. Another tier unlocks more (spec: tiers and their sections).`,
    });
  }
  return { section: await deps.client.docsSection(token, section) };
}
