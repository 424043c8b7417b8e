/**
 * OpenID Connect per connection (docs/sso.md): the relying party of an
 * organization's own provider. The issuer's discovery document (OpenID
 * Connect Discovery 1.0) is fetched once per issuer and kept for ten
 * minutes; the login is the authorization code flow with PKCE (S256, RFC
 * 7636) and a nonce; the ID token is verified against the provider's JWKS
 * (signature, `iss` exactly the issuer, `aud` our client id, `azp` when there
 * are several audiences, `exp` with one minute of skew, the nonce of this
 * login: OpenID Connect Core §3.1.3.7).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { JWTVerifyGetKey } from 'jose';
import { jose } from './jose.ts';
import { LatchkeyError } from '../engine/errors.ts';
import type { OidcSettings } from './sso_store.ts';

const TIMEOUT_MS = 10_000;
const DISCOVERY_TTL_MS = 600_000;
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

interface Discovery {
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  issuer: string;
}

const failed = (why: string, cause?: unknown): LatchkeyError =>
  new LatchkeyError('unauthenticated', `sign-in with the organization's OpenID provider failed: ${why}`, { reason: 'sso_oidc_failed', ...(cause === undefined ? {} : { cause }) });

/** What a start keeps for the callback. */
export interface OidcLoginState {
  verifier: string;
  nonce: string;
}

export class OidcConnections {
  readonly #discovered = new Map<string, { at: number; doc: Promise<Discovery> }>();
  readonly #jwks = new Map<string, JWTVerifyGetKey>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  async #json(url: string, init: RequestInit = {}): Promise<Record<string, unknown>> {
    let res: Response;
    try {
      res = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch (err) {
      throw new LatchkeyError('unavailable', 'the organization\'s OpenID provider could not be reached; try again later', { reason: 'provider_unavailable', cause: err });
    }
    const body = (await res.json().catch(() => undefined)) as unknown;
    if (!res.ok || typeof body !== 'object' || body === null) throw failed(`the provider answered ${res.status}`);
    return body as Record<string, unknown>;
  }

  async #discovery(issuer: string): Promise<Discovery> {
    const cached = this.#discovered.get(issuer);
    if (cached !== undefined && Date.now() - cached.at < DISCOVERY_TTL_MS) return cached.doc;
    const doc = (async () => {
      const d = await this.#json(`${issuer}/.well-known/openid-configuration`, { headers: { accept: 'application/json' } });
      // Discovery §4.3: the document names the issuer it was fetched for.
      if (d['issuer'] !== issuer && d['issuer'] !== `${issuer}/`) throw failed('its discovery document names another issuer');
      for (const k of ['authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const) if (typeof d[k] !== 'string') throw failed(`its discovery document has no ${k}`);
      return { authorization_endpoint: String(d['authorization_endpoint']), token_endpoint: String(d['token_endpoint']), jwks_uri: String(d['jwks_uri']), issuer: String(d['issuer']) };
    })();
    this.#discovered.set(issuer, { at: Date.now(), doc });
    doc.catch(() => this.#discovered.delete(issuer));
    return doc;
  }

  /** The provider's authorization URL for a new login, and what the callback needs. */
  async begin(settings: OidcSettings, redirectUri: string, state: string): Promise<{ location: string; login: OidcLoginState }> {
    const d = await this.#discovery(settings.issuer);
    const login: OidcLoginState = { verifier: randomBytes(32).toString('base64url'), nonce: randomBytes(24).toString('base64url') };
    const url = new URL(d.authorization_endpoint);
    const p = url.searchParams;
    p.set('response_type', 'code');
    p.set('client_id', settings.client_id);
    p.set('redirect_uri', redirectUri);
    p.set('scope', settings.scopes.join(' '));
    p.set('state', state);
    p.set('nonce', login.nonce);
    p.set('code_challenge', createHash('sha256').update(login.verifier).digest('base64url'));
    p.set('code_challenge_method', 'S256');
    return { location: url.toString(), login };
  }

  /** Exchanges the code and returns the verified ID token's claims. */
  async finish(settings: OidcSettings, redirectUri: string, code: string, login: OidcLoginState): Promise<Record<string, unknown>> {
    const d = await this.#discovery(settings.issuer);
    const body = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: login.verifier, client_id: settings.client_id });
    if (settings.client_secret !== '') body.set('client_secret', settings.client_secret);
    const tokens = await this.#json(d.token_endpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body: body.toString() });
    const idToken = tokens['id_token'];
    if (typeof idToken !== 'string') throw failed('no ID token');
    let jwks = this.#jwks.get(d.jwks_uri);
    if (jwks === undefined) {
      jwks = jose().createRemoteJWKSet(new URL(d.jwks_uri), { timeoutDuration: 5_000, cooldownDuration: 30_000, cacheMaxAge: 600_000 });
      this.#jwks.set(d.jwks_uri, jwks);
    }
    let payload: Record<string, unknown>;
    try {
      payload = (await jose().jwtVerify(idToken, jwks, { issuer: d.issuer, audience: settings.client_id, algorithms: ALGORITHMS, currentDate: new Date(this.#now()), clockTolerance: 60, requiredClaims: ['sub', 'exp', 'iat'] })).payload as Record<string, unknown>;
    } catch (err) {
      throw failed('the ID token is not valid', err);
    }
    const aud = payload['aud'];
    if (Array.isArray(aud) && aud.length > 1 && payload['azp'] !== settings.client_id) throw failed('the ID token was issued to another client');
    const got = Buffer.from(typeof payload['nonce'] === 'string' ? payload['nonce'] : '');
    const want = Buffer.from(login.nonce);
    if (got.length !== want.length || !timingSafeEqual(got, want)) throw failed('the ID token nonce does not match');
    return payload;
  }
}

/** A claim as a list of strings (a groups claim may be a list or one string). */
export function claimList(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}
