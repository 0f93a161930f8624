// libfaketime for this machine's architecture: where scripts/install-test-tools.sh installs it and looks for it
// (one source for the path; it was written for x86_64 alone).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../../scripts/install-test-tools.sh', import.meta.url));

export const LIBFAKETIME = execFileSync('sh', [script, '--faketime'], { encoding: 'utf8' }).trim();
