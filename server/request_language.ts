/**
 * The `Accept-Language` of the call being handled, for what the call sends
 * without holding its context: the one-time codes the MFA flows mail and
 * text (server/compose/otp_delivery.ts). The pipeline runs each handler
 * inside {@link withRequestLanguage}; outside a call there is none.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const storage = new AsyncLocalStorage<string | undefined>();

/**
 * Runs `fn` with `acceptLanguage` as the call's language. A call without a
 * language, made where there is none already, runs `fn` as it is: inside it,
 * and in what it starts, there is then none either way, and entering a
 * context of its own cost a copy of the context's map on every call.
 */
export function withRequestLanguage<T>(acceptLanguage: string | undefined, fn: () => T): T {
  if (acceptLanguage === undefined && storage.getStore() === undefined) return fn();
  return storage.run(acceptLanguage, fn);
}

/** The `Accept-Language` of the call in progress (undefined outside one, or when it sent none). */
export function requestLanguage(): string | undefined {
  return storage.getStore();
}
