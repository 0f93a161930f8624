// The private documentation sections (spec §1.4): Markdown files in docs/sections of the package, read once when
// the service starts, and which tier unlocks which (docs/decisions/0006-tiers.md).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DocsSectionResponse } from '../../contract/schemas.js';
import { DOCS_SECTIONS, TIERS, isTierId, type DocsSection } from '../../contract/tiers.js';

const SECTIONS_DIR = join('docs', 'sections');

/** Where the package's sections are. */
export function sectionsDirectory(): string {
  return join(packageRoot(), SECTIONS_DIR);
}

export function unlockedBy(tier: string): readonly DocsSection[] {
  return isTierId(tier) ? TIERS[tier].docs_sections : [];
}

export function tiersUnlocking(section: DocsSection): string[] {
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
