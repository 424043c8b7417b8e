/**
 * Client authentication at the token, revocation and introspection endpoints
 * (RFC 6749 §2.3): HTTP Basic, the secret in the body, a signed assertion
 * (RFC 7523, `private_key_jwt`, with the client's JWKS inline or by URI), or
 * the client id alone for a public client, with a budget of failures per
 * client id.
 */
import type { JWK, JWTVerifyGetKey } from 'jose';
import { jose } from './jose.ts';
import { LatchkeyError } from '../engine/errors.ts';
import { CLIENT_ASSERTION_ALGORITHMS, type ClientAuthMethod, type ClientRecord } from './client_store.ts';
import { basicClientCredentials, invalidClient, invalidRequest, safeEqual } from './oauth_common.ts';
import type { MemoryStore } from './memory_store.ts';
import { digestEqual, digestOf } from './secret_digest.ts';

/** The client behind a request, registered or the flags' own. */
export interface ResolvedClient {
  readonly record: ClientRecord;
  /** True for the `--client-id` client of the flags. */
  readonly fromFlags: boolean;
}

/** What authentication needs of the registry's options. */
export interface ClientAuthenticationOptions {
  memory: MemoryStore;
  nowSeconds: () => number;
  /** The issuer (the audience of client assertions, with the token endpoint). */
  issuer: string;
  flagClient: { clientId: string; clientSecret: string };
}

const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** Failed client authentications allowed per client and window before the client is refused for the rest of it. */
const FAILURE_BUDGET = { max: 20, windowSeconds: 60 };
/** How far ahead a client assertion's `exp` may be (RFC 7523 §3: short-lived). */
const MAX_ASSERTION_LIFETIME = 600;

export class ClientAuthenticator {
  readonly #find: (clientId: string) => Promise<ResolvedClient | undefined>;
  readonly #o: ClientAuthenticationOptions;
  readonly #remoteSets = new Map<string, JWTVerifyGetKey>();
  readonly #localSets = new Map<string, { at: number; set: JWTVerifyGetKey }>();

  /** `find` looks a client up by id (the registry's). */
  constructor(find: (clientId: string) => Promise<ResolvedClient | undefined>, options: ClientAuthenticationOptions) {
    this.#find = find;
    this.#o = options;
  }

  /**
   * Authenticates the client of a token, revocation or introspection request
   * (RFC 6749 §2.3): HTTP Basic, `client_secret` in the body, a
   * `client_assertion` (RFC 7523 §2.2, `private_key_jwt`), or `client_id`
   * alone (a public client). One method per request; a registered client
   * must use the method it registered. Failures are counted per client id and
   * refused for the rest of the window past the budget (`resource_exhausted`,
   * reason `too_many_attempts`), before any comparison. Errors:
   * `invalid_client` (one message whatever the cause), `invalid_request`.
   */
  async authenticate(p: Map<string, string>, authorization: string | undefined): Promise<{ client: ResolvedClient; method: ClientAuthMethod }> {
    let id = p.get('client_id');
    let secret = p.get('client_secret');
    const assertion = p.get('client_assertion');
    const assertionType = p.get('client_assertion_type');
    let method: ClientAuthMethod = 'none';
    const basic = basicClientCredentials(authorization);
    if (basic !== undefined) {
      if (secret !== undefined || assertion !== undefined) throw invalidRequest('use one client authentication method');
      if (id !== undefined && id !== basic.id) throw invalidRequest('client_id differs from the Authorization header');
      ({ id, secret } = basic);
      method = 'client_secret_basic';
    } else if (assertion !== undefined || assertionType !== undefined) {
      if (secret !== undefined) throw invalidRequest('use one client authentication method');
      if (assertionType !== JWT_BEARER_ASSERTION) throw invalidRequest(`client_assertion_type must be ${JWT_BEARER_ASSERTION}`);
      if (assertion === undefined) throw invalidRequest('client_assertion is required with client_assertion_type');
      const issuer = unverifiedIssuer(assertion);
      if (id !== undefined && id !== issuer) throw invalidClient();
      id = issuer;
      method = 'private_key_jwt';
    } else if (secret !== undefined) method = 'client_secret_post';
    if (id === undefined || id === '') throw invalidClient('client_id is required');

    const failures = `client_auth_failures:${digestOf(id).slice(0, 32)}`;
    const seen = Number((await this.#o.memory.get(failures)) ?? '0');
    if (seen >= FAILURE_BUDGET.max) {
      const retry = Math.max(1, await this.#o.memory.ttl(failures));
      throw new LatchkeyError('resource_exhausted', 'too many failed client authentications; try again later', { reason: 'too_many_attempts', details: { retry_after_seconds: retry } });
    }
    const fail = async (): Promise<never> => {
      await this.#o.memory.incr(failures, FAILURE_BUDGET.windowSeconds);
      throw invalidClient();
    };

    const client = await this.#find(id);
    if (client === undefined || client.record.disabled) return fail();
    const r = client.record;
    if (client.fromFlags) {
      // The flags' client, as it always was: its secret in either place, or none (a public client with PKCE).
      if (method === 'private_key_jwt') return fail();
      if (secret !== undefined && !safeEqual(secret, this.#o.flagClient.clientSecret)) return fail();
      return { client, method };
    }
    if (method !== r.token_endpoint_auth_method) return fail();
    if (method === 'client_secret_basic' || method === 'client_secret_post') {
      const s = secret ?? '';
      const current = digestEqual(s, r.secret_digest);
      const previous = r.previous_secret_expires_at !== null && r.previous_secret_expires_at > this.#o.nowSeconds() && digestEqual(s, r.previous_secret_digest);
      if (!current && !previous) return fail();
    } else if (method === 'private_key_jwt') {
      if (!(await this.#assertionValid(r, assertion ?? ''))) return fail();
    }
    return { client, method };
  }

  /** RFC 7523 §3: signed by one of the client's keys, iss = sub = client_id, aud this issuer or its token endpoint, short-lived, never replayed. */
  async #assertionValid(r: ClientRecord, assertion: string): Promise<boolean> {
    const keys = this.#keySet(r);
    const now = this.#o.nowSeconds();
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jose().jwtVerify(assertion, keys, {
        algorithms: [...CLIENT_ASSERTION_ALGORITHMS],
        issuer: r.client_id,
        subject: r.client_id,
        audience: [this.#o.issuer, `${this.#o.issuer}/oauth/token`],
        requiredClaims: ['exp', 'jti'],
        clockTolerance: 30,
        currentDate: new Date(now * 1000),
      }));
    } catch {
      return false;
    }
    const exp = Number(payload['exp']);
    const jti = payload['jti'];
    if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256) return false;
    if (exp - now > MAX_ASSERTION_LIFETIME) return false;
    // A replayed assertion is refused: its jti is remembered until it expires (shared across processes with Redis).
    return this.#o.memory.setIfAbsent(`client_assertion:${digestOf(`${r.client_id}\n${jti}`)}`, '1', Math.max(1, exp - now + 31));
  }

  #keySet(r: ClientRecord): JWTVerifyGetKey {
    if (r.jwks_uri !== null) {
      let set = this.#remoteSets.get(r.jwks_uri);
      if (set === undefined) {
        set = jose().createRemoteJWKSet(new URL(r.jwks_uri), { timeoutDuration: 3000, cooldownDuration: 30_000, cacheMaxAge: 600_000 });
        if (this.#remoteSets.size > 1000) this.#remoteSets.clear();
        this.#remoteSets.set(r.jwks_uri, set);
      }
      return set;
    }
    const cached = this.#localSets.get(r.client_id);
    if (cached !== undefined && cached.at === r.updated_at) return cached.set;
    const set = jose().createLocalJWKSet(r.jwks as unknown as { keys: JWK[] });
    if (this.#localSets.size > 1000) this.#localSets.clear();
    this.#localSets.set(r.client_id, { at: r.updated_at, set });
    return set;
  }
}

function unverifiedIssuer(assertion: string): string {
  const parts = assertion.split('.');
  if (parts.length !== 3 || assertion.length > 16384) throw invalidClient();
  try {
    const payload = JSON.parse(Buffer.from(parts[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
    if (typeof payload['iss'] !== 'string' || payload['iss'] === '') throw invalidClient();
    return payload['iss'];
  } catch {
    throw invalidClient();
  }
}
