/**
 * Signed tokens: access, id and refresh JWTs, the JWKS document and the
 * OpenID discovery document. The tokens are signed and their signatures
 * checked by auth/jws.ts on node:crypto; jose (loaded on first use through
 * auth/jose.ts) imports and checks RSA and EC keys at start and writes the
 * public JWK.
 *
 * Verification (ASVS v5 9.1–9.2): the token must be a compact JWS in
 * canonical base64url; the algorithm is pinned to the configured one (so
 * `alg: none` and HS/RS confusion are refused), the `kid` must be ours,
 * key-carrying headers (`jku`, `jwk`, `x5u`, `x5c`) and `crit` are refused
 * outright (no file or network access ever happens, no extension is
 * understood), the signature is checked next, then `iss`, `aud`, the
 * required claims, `exp`, `iat`, `nbf` (numbers, with a bounded clock
 * tolerance), and the `token_type` claim must be the one the caller expects,
 * so an id token or a refresh token is never accepted as an access token.
 */
import { createHash } from 'node:crypto';
import type { CryptoKey, JWK, JWTPayload } from 'jose';
import { jose } from './jose.ts';
import { randomBase64url } from './random_token.ts';
import { asymmetricKey, hmacKey, JWT_ALGORITHMS, parseCompact, payloadOf, signCompact, type JwsKey, type JwtAlgorithm } from './jws.ts';
import { LatchkeyError } from '../engine/errors.ts';
import { CLIENT_ASSERTION_ALGORITHMS } from './client_store.ts';
import { DPOP_ALGORITHMS } from './dpop.ts';

export { JWT_ALGORITHMS, type JwtAlgorithm } from './jws.ts';

/** The three token kinds, as carried in the `token_type` claim. */
export type TokenType = 'access_token' | 'id_token' | 'refresh_token';
export const TOKEN_TYPES: readonly TokenType[] = ['access_token', 'id_token', 'refresh_token'];

/** Options of {@link TokenService}. */
export interface TokenOptions {
  /** `--jwt-type`. */
  algorithm: JwtAlgorithm;
  /** `--jwt-secret`, required for HS*. */
  secret?: string | undefined;
  /** `--jwt-private-key` (PKCS#8 PEM), required for RS*, ES*, PS*. */
  privateKey?: string | undefined;
  /** `--jwt-public-key` (SPKI PEM), required for RS*, ES*, PS*. */
  publicKey?: string | undefined;
  /** `iss` of every token; also the discovery document's issuer (the server's public URL). */
  issuer: string;
  /** `aud` of every token: the client id. */
  audience: string;
  /** Lifetime of access and id tokens, seconds. Default 1800. */
  accessTokenTtl?: number;
  /** Lifetime of refresh tokens, seconds. Default 30 days. */
  refreshTokenTtl?: number;
  /** Accepted clock skew when verifying, seconds. Default 30. */
  clockToleranceSeconds?: number;
  /** Milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** Claims of a verified token. */
export type TokenClaims = JWTPayload & { token_type: TokenType; sub: string; [claim: string]: unknown };

const INVALID_TOKEN = (cause?: unknown): LatchkeyError =>
  new LatchkeyError('unauthenticated', 'invalid token', { reason: 'invalid_token', cause });

/** Header parameters that refuse a token: those that carry or point at a key, and `crit` (no extension is understood here). */
const FORBIDDEN_HEADERS = ['jku', 'jwk', 'x5u', 'x5c', 'crit'] as const;
/** Claims every token of ours carries. */
const REQUIRED_CLAIMS = ['exp', 'iat', 'sub', 'jti'] as const;
const VERIFIED_CACHE_SIZE = 10_000;
const VERIFIED_KEY_LENGTH = 32;
/** A token's key in the verified-token cache: its last characters (see `TokenService.#verified`). */
const verifiedKey = (token: string): string => (token.length > VERIFIED_KEY_LENGTH ? token.slice(-VERIFIED_KEY_LENGTH) : token);

/** Signs and verifies the server's JWTs with one configured key. */
export class TokenService {
  readonly algorithm: JwtAlgorithm;
  readonly issuer: string;
  readonly audience: string;
  readonly accessTokenTtl: number;
  readonly refreshTokenTtl: number;
  readonly kid: string;
  readonly #key: JwsKey;
  readonly #publicJwk: JWK | undefined;
  readonly #tolerance: number;
  readonly #now: () => number;
  /**
   * Tokens whose signature and static claims were verified. A hit skips only
   * the parsing and the signature work (for HMAC about 10 µs, for RSA and
   * ECDSA far more); the time-dependent checks and the expected type are
   * re-run on every call. Keyed by the
   * token's last 32 characters (part of its signature), as a token is a fresh
   * string on every request and hashing all of it for the lookup cost more
   * than the rest of a hit; an entry answers only the token it holds,
   * compared whole, so any changed byte is a full verification. Bounded,
   * oldest entries evicted first.
   */
  readonly #verified = new Map<string, { token: string; claims: TokenClaims }>();

  private constructor(init: {
    options: TokenOptions;
    key: JwsKey;
    publicJwk: JWK | undefined;
    kid: string;
  }) {
    const o = init.options;
    this.algorithm = o.algorithm;
    this.issuer = o.issuer;
    this.audience = o.audience;
    this.accessTokenTtl = o.accessTokenTtl ?? 1800;
    this.refreshTokenTtl = o.refreshTokenTtl ?? 30 * 24 * 3600;
    this.#tolerance = o.clockToleranceSeconds ?? 30;
    this.#now = o.now ?? Date.now;
    this.#key = init.key;
    this.#publicJwk = init.publicJwk;
    this.kid = init.kid;
  }

  /**
   * Imports the configured keys once. Throws `invalid_argument` (reason
   * `invalid_jwt_options`) when the options do not fit the algorithm.
   */
  static async create(options: TokenOptions): Promise<TokenService> {
    const bad = (message: string, cause?: unknown): LatchkeyError =>
      new LatchkeyError('invalid_argument', message, { reason: 'invalid_jwt_options', cause });
    const alg = options.algorithm;
    if (!(JWT_ALGORITHMS as readonly string[]).includes(alg)) throw bad(`unsupported jwt type ${String(alg)}`);
    if (!options.issuer) throw bad('token issuer is required');
    if (!options.audience) throw bad('token audience (client id) is required');
    if (alg.startsWith('HS')) {
      if (!options.secret) throw bad(`--jwt-secret is required for ${alg}`);
      // The kid names the secret without revealing it; HMAC keys are never published (JWKS stays empty).
      const kid = createHash('sha256').update('latchkey-kid:').update(options.secret).digest('base64url').slice(0, 16);
      return new TokenService({ options, key: hmacKey(alg, options.secret), publicJwk: undefined, kid });
    }
    if (!options.privateKey || !options.publicKey) throw bad(`--jwt-private-key and --jwt-public-key are required for ${alg}`);
    // jose's import refuses a key of the wrong type or curve for the algorithm, and its verification of the probe
    // below refuses an RSA key under 2,048 bits; its public JWK is published.
    let verifyKey: CryptoKey;
    let key: JwsKey;
    try {
      await jose().importPKCS8(options.privateKey, alg);
      verifyKey = await jose().importSPKI(options.publicKey, alg, { extractable: true });
      key = asymmetricKey(alg, options.privateKey, options.publicKey);
    } catch (err) {
      throw bad(`the jwt keys are not valid PEM keys for ${alg}`, err);
    }
    const jwk = await jose().exportJWK(verifyKey);
    const kid = await jose().calculateJwkThumbprint(jwk);
    // The pair must match: sign a probe with the private key and verify it with the public key, through jose as
    // any relying party would.
    try {
      const probe = await signCompact(key, {}, {});
      await jose().jwtVerify(probe, verifyKey, { algorithms: [alg] });
    } catch (err) {
      throw bad('--jwt-private-key and --jwt-public-key do not form a key pair', err);
    }
    return new TokenService({ options, key, publicJwk: { ...jwk, kid, alg, use: 'sig' }, kid });
  }

  /** Seconds since the epoch, from the injected clock. */
  nowSeconds(): number {
    return Math.floor(this.#now() / 1000);
  }

  /**
   * Signs a token of `type` for subject `sub` with the given extra claims.
   * `iss`, `aud`, `sub`, `iat`, `exp`, `jti` and `token_type` are set here and
   * override same-named extra claims.
   */
  async sign(type: TokenType, sub: string, claims: Record<string, unknown>, ttlSeconds?: number, extraAudience: readonly string[] = []): Promise<{ token: string; expiresAt: number; jti: string }> {
    const iat = this.nowSeconds();
    const ttl = ttlSeconds ?? (type === 'refresh_token' ? this.refreshTokenTtl : this.accessTokenTtl);
    const exp = iat + ttl;
    const jti = randomBase64url(16);
    const token = await signCompact(
      this.#key,
      { kid: this.kid, typ: 'JWT' },
      {
        ...claims,
        token_type: type,
        iss: this.issuer,
        // Extra audiences (RFC 8707 resource indicators) come after this server's own, which every token keeps.
        aud: extraAudience.length === 0 ? this.audience : [this.audience, ...extraAudience],
        sub,
        iat,
        exp,
        jti,
      },
    );
    return { token, expiresAt: exp, jti };
  }

  /**
   * A logout token (OpenID Connect Back-Channel Logout 1.0 §2.4) for client
   * `clientId` about the session `sid` of `sub`: type `logout+jwt`, the
   * back-channel logout event, no nonce, valid two minutes.
   */
  async signLogoutToken(clientId: string, sub: string, sid: string): Promise<string> {
    const iat = this.nowSeconds();
    return signCompact(
      this.#key,
      { kid: this.kid, typ: 'logout+jwt' },
      {
        sid,
        events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
        iss: this.issuer,
        aud: clientId,
        sub,
        iat,
        exp: iat + 120,
        jti: randomBase64url(16),
      },
    );
  }

  /**
   * The claims of `token` without a promise when it was verified before and
   * is valid now as `expectedType` (its times checked again); undefined
   * otherwise, when {@link verify} decides (and says why it refuses).
   */
  verifiedNow(token: string, expectedType: TokenType): TokenClaims | undefined {
    if (typeof token !== 'string' || token.length === 0 || token.length > 16384) return undefined;
    const entry = this.#verified.get(verifiedKey(token));
    if (entry === undefined || entry.token !== token) return undefined;
    const claims = entry.claims;
    return claims.token_type === expectedType && this.#timesHold(claims) ? claims : undefined;
  }

  /**
   * Verifies `token` and returns its claims. Throws `unauthenticated` (reason
   * `invalid_token`, message `invalid token`) for every failure, whatever the
   * cause, so a caller learns nothing about which check failed.
   */
  async verify(token: string, expectedType: TokenType): Promise<TokenClaims> {
    if (typeof token !== 'string' || token.length === 0 || token.length > 16384) throw INVALID_TOKEN();
    const key = verifiedKey(token);
    const entry = this.#verified.get(key);
    const cached = entry !== undefined && entry.token === token ? entry.claims : undefined;
    if (cached !== undefined) {
      this.#checkTimes(cached);
      if (cached.token_type !== expectedType) throw INVALID_TOKEN();
      return cached;
    }
    const parsed = parseCompact(token);
    if (parsed === undefined) throw INVALID_TOKEN();
    const header = parsed.header;
    if (header['alg'] !== this.algorithm || header['kid'] !== this.kid) throw INVALID_TOKEN();
    for (const h of FORBIDDEN_HEADERS) if (h in header) throw INVALID_TOKEN();
    if (!(await this.#key.verify(parsed.input, parsed.signature))) throw INVALID_TOKEN();
    const payload = payloadOf(parsed) as JWTPayload | undefined;
    if (payload === undefined || payload.iss !== this.issuer) throw INVALID_TOKEN();
    const aud = payload.aud;
    if (!(aud === this.audience || (Array.isArray(aud) && aud.includes(this.audience)))) throw INVALID_TOKEN();
    for (const claim of REQUIRED_CLAIMS) if (!(claim in payload)) throw INVALID_TOKEN();
    if (payload.nbf !== undefined && typeof payload.nbf !== 'number') throw INVALID_TOKEN();
    if (typeof payload.sub !== 'string' || payload.sub.length === 0) throw INVALID_TOKEN();
    if (!(TOKEN_TYPES as readonly unknown[]).includes(payload['token_type'])) throw INVALID_TOKEN();
    const claims = Object.freeze(payload) as TokenClaims;
    this.#checkTimes(claims);
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) {
      const oldest = this.#verified.keys().next();
      if (!oldest.done) this.#verified.delete(oldest.value);
    }
    this.#verified.delete(key);
    this.#verified.set(key, { token, claims });
    if (claims.token_type !== expectedType) throw INVALID_TOKEN();
    return claims;
  }

  /** `exp`, `nbf` and `iat` against the clock, with the tolerance: on every call, a hit of the verified-token cache included. */
  #checkTimes(claims: TokenClaims): void {
    if (!this.#timesHold(claims)) throw INVALID_TOKEN();
  }

  #timesHold(claims: TokenClaims): boolean {
    const now = this.nowSeconds();
    if (typeof claims.exp !== 'number' || claims.exp + this.#tolerance <= now) return false;
    if (typeof claims.nbf === 'number' && claims.nbf > now + this.#tolerance) return false;
    // A token "issued" in the future beyond the tolerance is as suspect as an expired one.
    return typeof claims.iat === 'number' && claims.iat <= now + this.#tolerance;
  }

  /** `at_hash` of an access token (OpenID Connect Core §3.1.3.6). */
  atHash(accessToken: string): string {
    const bits = this.algorithm.slice(2);
    const digest = createHash(`sha${bits}`).update(accessToken, 'ascii').digest();
    return digest.subarray(0, digest.length / 2).toString('base64url');
  }

  /** The JWKS document: the public key for RS*, ES*, PS*; empty for HS* (secrets are never published). */
  jwks(): { keys: JWK[] } {
    return { keys: this.#publicJwk === undefined ? [] : [{ ...this.#publicJwk }] };
  }

  /**
   * The protected-resource metadata of the server's own API (RFC 9728 §3):
   * its resource identifier, the authorization server that issues its tokens
   * (itself), the keys that verify them and how they are presented (the
   * `Authorization` header: bearer access tokens and API keys).
   */
  protectedResourceMetadata(baseUrl: string): Record<string, unknown> {
    const base = baseUrl.replace(/\/+$/, '');
    return {
      resource: base,
      authorization_servers: [this.issuer],
      jwks_uri: `${base}/.well-known/jwks.json`,
      bearer_methods_supported: ['header'],
      resource_signing_alg_values_supported: [this.algorithm],
      resource_name: 'Latchkey API',
    };
  }

  /** The OpenID discovery document for a server at `baseUrl` (no trailing slash). */
  openidConfiguration(baseUrl: string, options: { roleClaim?: string; pkcePlain?: boolean; registration?: boolean } = {}): Record<string, unknown> {
    const base = baseUrl.replace(/\/+$/, '');
    return {
      issuer: this.issuer,
      authorization_endpoint: `${base}/authorize`,
      token_endpoint: `${base}/oauth/token`,
      userinfo_endpoint: `${base}/userinfo`,
      revocation_endpoint: `${base}/oauth/revoke`,
      pushed_authorization_request_endpoint: `${base}/oauth/par`,
      device_authorization_endpoint: `${base}/oauth/device_authorization`,
      // RFC 7591: only when dynamic registration is on (--oauth-registration-access-token).
      ...(options.registration === true ? { registration_endpoint: `${base}/oauth/register` } : {}),
      require_pushed_authorization_requests: false,
      introspection_endpoint: `${base}/oauth/introspect`,
      end_session_endpoint: `${base}/logout`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      response_types_supported: ['code', 'token', 'id_token', 'id_token token', 'code id_token', 'code token', 'code id_token token'],
      response_modes_supported: ['query', 'fragment', 'form_post'],
      grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials', 'implicit', 'urn:ietf:params:oauth:grant-type:token-exchange', 'urn:ietf:params:oauth:grant-type:device_code'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: [this.algorithm],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
      // RFC 7523 client assertions: asymmetric algorithms only (the client's key is never shared with the server).
      token_endpoint_auth_signing_alg_values_supported: [...CLIENT_ASSERTION_ALGORITHMS],
      revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
      revocation_endpoint_auth_signing_alg_values_supported: [...CLIENT_ASSERTION_ALGORITHMS],
      introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'],
      introspection_endpoint_auth_signing_alg_values_supported: [...CLIENT_ASSERTION_ALGORITHMS],
      // Only what /authorize accepts: plain only with --enable-pkce-plain.
      code_challenge_methods_supported: options.pkcePlain === true ? ['S256', 'plain'] : ['S256'],
      authorization_response_iss_parameter_supported: true,
      // RFC 9449 §5.1: DPoP proofs at the token endpoint (binding the tokens of the code, refresh, device and client_credentials grants).
      dpop_signing_alg_values_supported: [...DPOP_ALGORITHMS],
      // OpenID Connect Back-Channel Logout 1.0 §2.1: logout tokens with sid, to clients that register a URI.
      backchannel_logout_supported: true,
      backchannel_logout_session_supported: true,
      scopes_supported: ['openid', 'email', 'profile', 'phone', 'offline_access'],
      claims_supported: [
        'iss',
        'aud',
        'sub',
        'exp',
        'iat',
        'auth_time',
        'nonce',
        'amr',
        'acr',
        'at_hash',
        'c_hash',
        'email',
        'email_verified',
        'phone_number',
        'phone_number_verified',
        'given_name',
        'family_name',
        'middle_name',
        'nickname',
        'preferred_username',
        'picture',
        'gender',
        'birthdate',
        'locale',
        'roles',
        options.roleClaim ?? 'role',
      ],
    };
  }
}
