// The wallet page and the console link relatively (a proxy may serve them under another path): what leads from a
// request's directory back to the wallet's own, for the links and redirects of a page at any depth.
import { WALLET_BASE_PATH } from './security.js';

/** '' for /wallet/login, '../' for /wallet/runs/ID, '../../' for /wallet/runs/ID/cancel. */
export function baseOf(url: string): string {
  const path = url.split('?')[0]!;
  const rest = path.startsWith(WALLET_BASE_PATH) ? path.slice(WALLET_BASE_PATH.length) : path;
  const depth = Math.max(0, rest.split('/').length - 2);
  return '../'.repeat(depth);
}
