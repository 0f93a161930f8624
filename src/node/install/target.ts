// Which install the install commands act on: --root when given; else the install this program runs from (a node
// staged under a scratch root manages itself there); else the host.
import { readFileSync } from 'node:fs';
import { SvcError } from '../../contract/errors.js';
import { installedHomeOf } from '../home.js';
import { installLayout, layoutOfHome, type InstallLayout } from './layout.js';

export function resolveInstallLayout(rootOption: string | undefined, entryScript: string | undefined = process.argv[1]): InstallLayout {
  if (rootOption !== undefined) {
    if (rootOption.trim() === '') throw new SvcError('usage', '--root needs a directory');
    return installLayout(rootOption);
  }
  const installedHome = entryScript === undefined ? undefined : installedHomeOf(entryScript);
  return installedHome === undefined ? installLayout('/') : layoutOfHome(installedHome);
}

/**
 * The deploy token from --deploy-token-file or SVC_DEPLOY_TOKEN (DECISIONS.md "Tokens": never an argument).
 * Errors name the file, never the content.
 */
export function readDeployToken(file: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  if (file !== undefined) {
    try {
      return readFileSync(file === '-' ? 0 : file, 'utf8').trim();
    } catch (error) {
      throw new SvcError('usage', `cannot read the deploy token file ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`, {
        remedy: 'Write the deploy token from activation into a file readable by this user, then pass it again.',
      });
    }
  }
  const fromEnv = env.SVC_DEPLOY_TOKEN?.trim();
  return fromEnv === undefined || fromEnv === '' ? undefined : fromEnv;
}
