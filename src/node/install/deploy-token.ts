// The deploy token that enrolls this host (docs/decisions/0005-tokens.md: never an argument, never written to disk).
import { readFileSync } from 'node:fs';
import { SvcError } from '../../contract/errors.js';

/** From --deploy-token-file ("-": stdin) or SVC_DEPLOY_TOKEN. Errors name the file, never the content. */
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
