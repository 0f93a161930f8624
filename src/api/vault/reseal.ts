// After a key rotation (docs/operations.md "Secrets at rest"): what an older key of the ring sealed is sealed again
// under SVC_SECRETS_KEY, a batch at a time, at start and hourly, until nothing needs the older keys; then the
// operator drops them from SVC_SECRETS_PREVIOUS_KEYS. A log line says when that is, and warns of values sealed with
// a key the ring no longer has (dropped too soon: those secrets read as unset).
import { repeatByServiceClock, type ServiceContext } from '../context.js';
import { createSecretStore } from '../user-secrets/secret-store.js';
import { createEndpointStore } from '../webhooks/endpoint-store.js';

const RESEAL_EVERY_MS = 60 * 60 * 1000;
const BATCH = 200;

export function scheduleReseal(
  ctx: ServiceContext,
  log: { info(details: object, message: string): void; warn(details: object, message: string): void },
): void {
  const secrets = createSecretStore(ctx.store, ctx.vault, ctx.clock);
  const endpoints = createEndpointStore(ctx.store, ctx.vault, ctx.clock);
  let warned = false;
  repeatByServiceClock(
    ctx,
    RESEAL_EVERY_MS,
    async () => {
      if (!warned) {
        warned = true;
        const unreadable = await secrets.unreadable();
        if (unreadable > 0)
          log.warn(
            { unreadable },
            'secrets sealed with a key that is neither SVC_SECRETS_KEY nor in SVC_SECRETS_PREVIOUS_KEYS: runs get them unset until they are set again',
          );
      }
      if (ctx.vault.previousKeyIds.length === 0) return false;
      const moved =
        (await ctx.store.transaction(() => secrets.reseal(BATCH))) + (await ctx.store.transaction(() => endpoints.reseal(BATCH)));
      if (moved > 0) log.info({ moved, key_id: ctx.vault.currentKeyId }, 'sealed again under the current secrets key');
      else
        log.info(
          { key_id: ctx.vault.currentKeyId },
          'every secret is sealed under the current secrets key: SVC_SECRETS_PREVIOUS_KEYS may be emptied',
        );
      // A full batch: more to do at the next sweep.
      return moved >= BATCH;
    },
    'sealing secrets again',
    log,
  );
}
