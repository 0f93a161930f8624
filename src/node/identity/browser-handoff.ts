// Opening a URL that holds a secret without putting the secret on a command line: the opener (xdg-open, open) gets
// the path of a page only this user can read, and the page sends the browser on. Argv is visible to every user in
// `ps`; a 0600 file in a 0700 directory is not.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** How long the page stays: enough for a cold browser to read it, short enough not to linger. */
export const HANDOFF_PAGE_LIFETIME_MS = 30_000;

export interface HandoffPage {
  path: string;
  remove(): void;
  /** Removes the page after HANDOFF_PAGE_LIFETIME_MS from a detached process, so this command can exit now. */
  removeLater(): void;
}

export function writeHandoffPage(secretUrl: string): HandoffPage {
  const dir = mkdtempSync(join(process.env.XDG_RUNTIME_DIR || tmpdir(), 'swarm-node-open-'));
  const path = join(dir, 'open.html');
  const href = escapeHtml(secretUrl);
  writeFileSync(
    path,
    `<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">` +
      `<meta http-equiv="refresh" content="0;url=${href}"><title>Opening the wallet…</title>` +
      `<p><a href="${href}">Open the wallet</a></p>\n`,
    { mode: 0o600 },
  );
  const remove = (): void => rmSync(dir, { recursive: true, force: true });
  return {
    path,
    remove,
    removeLater() {
      const child = spawn(
        process.execPath,
        [
          '-e',
          `setTimeout(() => require('fs').rmSync(process.argv[1], { recursive: true, force: true }), ${HANDOFF_PAGE_LIFETIME_MS})`,
          dir,
        ],
        {
          detached: true,
          stdio: 'ignore',
        },
      );
      child.on('error', remove);
      child.unref();
    },
  };
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The desktop's URL opener, when there is a desktop to open it on. */
export function browserOpener(env: NodeJS.ProcessEnv): string | undefined {
  if (process.platform === 'darwin') return 'open';
  if (process.platform === 'win32') return undefined;
  return env.DISPLAY || env.WAYLAND_DISPLAY ? 'xdg-open' : undefined;
}

/**
 * Opens a URL that holds a secret in the browser: the opener gets a private page that forwards to it, never the URL
 * itself. Says why not when it could not: no display, or the opener failed.
 */
export async function openSecretUrl(
  url: string,
  env: NodeJS.ProcessEnv,
): Promise<{ opened: true } | { opened: false; why: 'no_display' | 'opener_failed'; opener?: string }> {
  const opener = browserOpener(env);
  if (opener === undefined) return { opened: false, why: 'no_display' };
  const { execa } = await import('execa');
  const page = writeHandoffPage(url);
  const outcome = await execa(opener, [page.path], { reject: false, stdio: 'ignore', timeout: 10_000 });
  if (outcome.exitCode === 0) {
    page.removeLater();
    return { opened: true };
  }
  page.remove();
  return { opened: false, why: 'opener_failed', opener };
}
