/**
 * The `Accept-Language` of the call being handled, for what the call sends
 * without holding its context: the one-time codes the MFA flows mail and
 * text (server/compose/otp_delivery.ts). The pipeline runs each handler
 * inside {@link withRequestLanguage}; outside a call there is none.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const storage = new AsyncLocalStorage<string | undefined>();

/** Runs `fn` with `acceptLanguage` as the call's language. */
export function withRequestLanguage<T>(acceptLanguage: string | undefined, fn: () => T): T {
  return storage.run(acceptLanguage, fn);
}

/** The `Accept-Language` of the call in progress (undefined outside one, or when it sent none). */
export function requestLanguage(): string | undefined {
  return storage.getStore();
}
