/**
 * Calls to a social or OpenID provider's endpoints (token, userinfo, the
 * emails list, discovery): JSON (or a form-encoded answer, as some token
 * endpoints give), no redirects followed, 10 seconds at most. A provider
 * that cannot be reached or answers 5xx is `unavailable`
 * `provider_unavailable`; one that refuses is `unauthenticated`
 * `social_login_failed`.
 */
import { LatchkeyError } from '../engine/errors.ts';

const PROVIDER_TIMEOUT_MS = 10_000;

/** A login refused because of what the provider answered (`unauthenticated` `social_login_failed`). */
export const providerFailed = (display: string, why: string, cause?: unknown): LatchkeyError =>
  new LatchkeyError('unauthenticated', `login with ${display} failed: ${why}`, { reason: 'social_login_failed', ...(cause === undefined ? {} : { cause }) });

/** The JSON object (or form) `url` answers. */
export async function providerJson(display: string, url: string, init: RequestInit): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS) });
  } catch (err) {
    throw new LatchkeyError('unavailable', `${display} could not be reached; try again later`, { reason: 'provider_unavailable', cause: err });
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = Object.fromEntries(new URLSearchParams(text));
  }
  if (!res.ok) {
    if (res.status >= 500) throw new LatchkeyError('unavailable', `${display} could not be reached; try again later`, { reason: 'provider_unavailable', cause: new Error(`HTTP ${res.status}`) });
    throw providerFailed(display, 'the provider refused the request', new Error(`HTTP ${res.status} ${text.slice(0, 200)}`));
  }
  if (typeof json !== 'object' || json === null) throw providerFailed(display, 'unexpected answer');
  return json as Record<string, unknown>;
}

/** Any JSON `url` answers (undefined when it is none). */
export async function providerJsonAny(display: string, url: string, init: RequestInit): Promise<unknown> {
  const res = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS) }).catch((err: unknown) => {
    throw new LatchkeyError('unavailable', `${display} could not be reached; try again later`, { reason: 'provider_unavailable', cause: err });
  });
  if (!res.ok) throw providerFailed(display, 'the provider refused the request', new Error(`HTTP ${res.status}`));
  return res.json().catch(() => undefined);
}
