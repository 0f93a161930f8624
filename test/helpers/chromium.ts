// A real browser for the wallet page's and the console's tests: headless Chromium (Debian's /usr/bin/chromium, never a
// downloaded one) driven by playwright-core, with a fresh profile, screenshots kept in test-output/ (gitignored), and
// an accessibility check of a page: axe-core's WCAG 2.1 A/AA rules and best practices (labels, landmarks, contrast,
// ARIA) plus the order of the headings, which any page must pass.
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import axe from 'axe-core';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { REPO_ROOT } from './svc-api.js';
import { tempDir } from './temp.js';

const CHROMIUM = '/usr/bin/chromium';

/**
 * Why the browser tests cannot run here, or undefined: only on Ubuntu, whose chromium is a snap that does not run
 * without snapd (scripts/install-test-tools.sh does not install it there); elsewhere a missing browser is a missing
 * tool, which npm test reports before any test runs.
 */
export const browserUnavailable: string | undefined =
  !existsSync(CHROMIUM) && /^ID=ubuntu$/m.test(readFileIfAny('/etc/os-release'))
    ? "the browser tests need Debian's chromium (Ubuntu's is a snap): skipped on this Ubuntu machine"
    : undefined;

function readFileIfAny(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
export const SCREENSHOTS = join(REPO_ROOT, 'test-output');

export interface Browser {
  context: BrowserContext;
  page: Page;
  /** Console messages: a Content-Security-Policy violation (a style or script the policy does not allow) shows up here. */
  messages: string[];
}

/** `timezoneId`: the zone the browser believes it is in (an IANA name), for pages that show local times. */
export async function launchChromium(viewport = { width: 900, height: 900 }, options: { timezoneId?: string } = {}): Promise<Browser> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const context = await chromium.launchPersistentContext(tempDir('chromium-profile-'), {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport,
    ...(options.timezoneId === undefined ? {} : { timezoneId: options.timezoneId }),
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const messages: string[] = [];
  page.on('console', (message) => messages.push(message.text()));
  return { context, page, messages };
}

/** The policy's refusals among the messages. */
export function policyViolations(messages: readonly string[]): string[] {
  return messages.filter((text) => /Content Security Policy|Refused to/.test(text));
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/**
 * What keeps the page from being used with a keyboard or a screen reader: axe-core's violations (evaluated through
 * the DevTools protocol, which the page's policy does not govern), and headings out of order (one h1, first; no
 * level skipped on the way down). An empty list: none found.
 */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  await page.evaluate(axe.source);
  // Strings, not functions: the tests are compiled without the DOM's types, and this runs in the page.
  const violations = await page.evaluate<string[]>(`axe
    .run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })
    .then((found) => found.violations.map((v) => v.id + ': ' + v.help + ' (' + v.nodes.map((node) => node.target.join(' ')).join(', ') + ')'))`);
  const levels = await page.evaluate<number[]>(
    `[...document.querySelectorAll('h1, h2, h3, h4, h5, h6')].map((heading) => Number(heading.tagName.slice(1)))`,
  );
  const order: string[] = [];
  if (levels[0] !== 1 || levels.filter((level) => level === 1).length !== 1)
    order.push(`headings: one h1 must come first, got ${levels.join(' ')}`);
  levels.forEach((level, index) => {
    if (index > 0 && level > levels[index - 1]! + 1) order.push(`headings: h${level} follows h${levels[index - 1]}, skipping a level`);
  });
  return [...violations, ...order];
}

/**
 * A browser for a file's tests, as useSvcApi is a service: launched before them, its cookies cleared after each (no
 * test signs in as the one before), closed after them. Returns it, for the tests to call once it is up.
 */
export function useChromium(...args: Parameters<typeof launchChromium>): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await launchChromium(...args);
  });
  afterEach(async () => {
    await browser?.context.clearCookies();
  });
  afterAll(async () => {
    await browser?.context.close();
  });
  return () => browser!;
}

/** Opens `url` in the browser's page: its status, a screenshot, no accessibility problem and nothing its policy refused. */
export async function visitChecked(browser: Browser, url: string, screenshotName: string, status = 200): Promise<void> {
  const before = browser.messages.length;
  const response = (await browser.page.goto(url))!;
  expect(response.status(), url).toBe(status);
  await screenshot(browser.page, screenshotName);
  expect(await accessibilityProblems(browser.page), url).toEqual([]);
  expect(policyViolations(browser.messages.slice(before)), url).toEqual([]);
}
