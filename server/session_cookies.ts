/**
 * The app's session cookies (spec, Cookies): `cookie_session` (host-only) and
 * `cookie_session_domain` (scoped to the registrable domain of `--url` when
 * it has one), both HttpOnly, `Path=/`, `Max-Age` of the session's lifetime,
 * `Secure` per `--app-cookie-secure`, and `SameSite` per
 * `--app-cookie-same-site` (default None, which browsers only honour on
 * Secure cookies, so an insecure cookie falls back to Lax); and the
 * short-lived `mfa` challenge cookie. Written once here for the operations'
 * handlers and for the endpoints outside the table (OAuth, social login).
 */
import { MFA_COOKIE, SESSION_COOKIE, SESSION_DOMAIN_COOKIE, type AuthResult } from '../auth/index.ts';
import type { CookieOptions, CookieSink } from './context.ts';
import type { Config } from './flags.ts';

/** `.example.com` for `https://app.example.com`; undefined for IPs, single labels and without `--url`. */
export function cookieDomainOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return undefined;
  }
  if (/^[0-9.]+$/.test(host) || host.includes(':') || !host.includes('.')) return undefined;
  const labels = host.split('.');
  return `.${labels.length > 2 ? labels.slice(-2).join('.') : host}`;
}

function cookieBase(c: Config): CookieOptions {
  const secure = Boolean(c.appCookieSecure);
  const configured = c.appCookieSameSite;
  const sameSite: CookieOptions['sameSite'] = configured === 'strict' ? 'Strict' : configured === 'lax' ? 'Lax' : secure ? 'None' : 'Lax';
  return { path: '/', httpOnly: true, secure, sameSite };
}

/** Sets the session cookie pair of a new or rotated session on `sink` (nothing when the result opened none). */
export function setSessionPairOn(sink: CookieSink, config: Config, result: AuthResult): void {
  if (result.session === undefined) return;
  const base = cookieBase(config);
  const domain = cookieDomainOf(config.url);
  sink.set(SESSION_COOKIE, result.session.token, { ...base, maxAgeSeconds: result.session.maxAgeSeconds });
  sink.set(SESSION_DOMAIN_COOKIE, result.session.token, { ...base, maxAgeSeconds: result.session.maxAgeSeconds, ...(domain ? { domain } : {}) });
}

/** Sets the `mfa` challenge cookie (host-only, HttpOnly) on `sink` when a result opened an MFA challenge. */
export function setMfaCookieOn(sink: CookieSink, config: Config, result: AuthResult): void {
  if (result.mfaSession === undefined) return;
  sink.set(MFA_COOKIE, result.mfaSession.token, { ...cookieBase(config), maxAgeSeconds: result.mfaSession.maxAgeSeconds });
}

/** Sets the session cookie pair and the `mfa` challenge cookie a result carries on `sink`. */
export function setSessionCookiesOn(sink: CookieSink, config: Config, result: AuthResult): void {
  setSessionPairOn(sink, config, result);
  setMfaCookieOn(sink, config, result);
}

/** Clears the `mfa` challenge cookie on `sink`. */
export function clearMfaCookieOn(sink: CookieSink, config: Config): void {
  sink.clear(MFA_COOKIE, cookieBase(config));
}

/** Clears both app session cookies on `sink`. */
export function clearSessionCookiesOn(sink: CookieSink, config: Config): void {
  const base = cookieBase(config);
  const domain = cookieDomainOf(config.url);
  sink.clear(SESSION_COOKIE, base);
  sink.clear(SESSION_DOMAIN_COOKIE, { ...base, ...(domain ? { domain } : {}) });
}
