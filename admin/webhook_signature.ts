/**
 * Webhook delivery signatures, in the Standard Webhooks layout:
 *
 *   webhook-id:        the delivery id (stable across retries; receivers dedupe on it)
 *   webhook-timestamp: unix seconds of this attempt
 *   webhook-signature: `v1,<base64 HMAC-SHA256(secret, "<id>.<timestamp>.<body>")>`
 *
 * Signing the id and the timestamp with the body means a captured delivery
 * cannot be replayed later or under another id (security matrix D4), which
 * Authorizer's body-only signature allowed.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';

/** Header names of a signed delivery. */
export const WEBHOOK_HEADERS = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
} as const;

/** The base64 HMAC-SHA256 over `<id>.<timestamp>.<body>`. */
export function computeSignature(secret: string, id: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${id}.${timestamp}.${body}`).digest('base64');
}

/** The three signature headers for one delivery attempt. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): Record<string, string> {
  return {
    [WEBHOOK_HEADERS.id]: id,
    [WEBHOOK_HEADERS.timestamp]: String(timestamp),
    [WEBHOOK_HEADERS.signature]: `v1,${computeSignature(secret, id, timestamp, body)}`,
  };
}

export interface VerifyWebhookOptions {
  /** Largest accepted distance between the timestamp and now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** Current unix time in seconds (default: the system clock). */
  now?: number;
  /**
   * Ids already processed. When given, a delivery whose id is in it is
   * rejected as a replay, and an accepted id is added to it.
   */
  seen?: Set<string>;
}

/**
 * Verifies a received delivery and returns its id. Throws `unauthenticated`
 * with reason `invalid_signature`, `timestamp_out_of_tolerance` or
 * `replayed_delivery`. `headers` keys are matched case-insensitively.
 */
export function verifyWebhook(
  secret: string,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  body: string,
  options: VerifyWebhookOptions = {},
): string {
  const get = (name: string): string | undefined => {
    for (const [k, v] of Object.entries(headers)) {
      if (k.toLowerCase() === name) return Array.isArray(v) ? v[0] : v;
    }
    return undefined;
  };
  const id = get(WEBHOOK_HEADERS.id);
  const ts = get(WEBHOOK_HEADERS.timestamp);
  const sig = get(WEBHOOK_HEADERS.signature);
  if (!id || !ts || !sig || !/^\d+$/.test(ts)) {
    throw new LatchkeyError('unauthenticated', 'invalid webhook signature', { reason: 'invalid_signature' });
  }
  const timestamp = Number(ts);
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? 300)) {
    throw new LatchkeyError('unauthenticated', 'webhook timestamp out of tolerance', {
      reason: 'timestamp_out_of_tolerance',
    });
  }
  const expected = Buffer.from(computeSignature(secret, id, timestamp, body), 'base64');
  // The header may list several space-separated signatures (key rotation).
  const ok = sig.split(' ').some((entry) => {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || !value) return false;
    const got = Buffer.from(value, 'base64');
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
  if (!ok) throw new LatchkeyError('unauthenticated', 'invalid webhook signature', { reason: 'invalid_signature' });
  if (options.seen) {
    if (options.seen.has(id)) {
      throw new LatchkeyError('unauthenticated', 'webhook delivery replayed', { reason: 'replayed_delivery' });
    }
    options.seen.add(id);
  }
  return id;
}
