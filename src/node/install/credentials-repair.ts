// Install and doctor read credentials.json even when its mode is wrong (credentials.ts refuses such a file, as ssh
// does with keys): they are the tools that report and repair the mode. The content is never quoted.
import { readFileSync } from 'node:fs';
import type { Credentials } from '../identity/credentials.js';

export function readCredentialsIgnoringMode(path: string): Credentials | Error {
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Credentials) : new Error(`${path} is not a JSON object`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    return new Error(`${path} cannot be read or is not valid JSON`);
  }
}
