// What changes the fleet or the code, or raises a spending limit, needs a sign-in within the last 15 minutes
// (docs/api.md "Step-up"). A command that gets step_up_required signs in again by mail, in a terminal, with the
// person's address and the token's own offer, and retries once with the new token: the person types a code, as
// `sudo` asks for a password again. Off a terminal the refusal stands (exit 4) with the login that renews it.
import { SvcError } from '../contract/errors.js';
import { isTierId } from '../contract/tiers.js';
import type { CommandContext } from './context.js';
import { codeReader } from './sign-in-code.js';

/** `given`: a JWT the command was handed (--token-file, SVC_TOKEN) rather than the stored one: never renewed here. */
export async function withRecentSignIn<T>(ctx: CommandContext, call: (token: string) => Promise<T>, given?: string): Promise<T> {
  const jwt = given === undefined ? ctx.requireJwt() : undefined;
  try {
    return await call(given ?? jwt!.token);
  } catch (error) {
    if (!(error instanceof SvcError) || error.code !== 'step_up_required' || jwt === undefined || !ctx.canPrompt()) throw error;
    // The service's own words say what needs it (a change of the fleet or the code, a raised spending limit).
    ctx.output.warn(`${error.message}: sign in again with the code mailed to you`);
    const { signInByMail } = await import('../node/identity/session.js');
    const deps = { client: await ctx.client(), clock: ctx.clock, credentialsFile: ctx.paths.credentialsFile };
    const offer = isTierId(jwt.tier) ? jwt.tier : undefined;
    await signInByMail(
      deps,
      { email: jwt.sub, offer, likelyOffer: offer, merchantId: ctx.config().merchant_id },
      codeReader(ctx, undefined),
    );
    return call(ctx.requireJwt().token);
  }
}
