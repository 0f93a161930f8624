// Install and doctor read credentials.json even when its mode is wrong (credentials.ts refuses such a file, as ssh
// does with keys): they are the tools that report and repair the mode. The content is never quoted.
import { readFileSync } from 'node:fs';
import { SvcError } from '../../contract/errors.js';
import { parseCredentials, type Credentials } from '../identity/credentials.js';

/** The credentials, or the error saying why they cannot be read (with the remedy that repairs them). */
export function readCredentialsIgnoringMode(path: string): Credentials | SvcError {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    return new SvcError('local_state', `cannot read the credentials file ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  try {
    return parseCredentials(path, text);
  } catch (error) {
    if (error instanceof SvcError) return error;
    throw error;
  }
}
