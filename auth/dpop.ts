/**
 * DPoP proofs (RFC 9449 §4.3): a JWT of type `dpop+jwt`, signed with an
 * asymmetric key whose public JWK is in its header, naming the request's
 * method (`htm`) and URL without query and fragment (`htu`), issued within a
 * minute of now (`iat`), with a `jti` never seen before (remembered in the
 * memory store, so across processes with Redis) and, when it accompanies an
 * access token, the token's hash (`ath`). The thumbprint of its key (RFC
 * 7638) is what a bound token's `cnf.jkt` names.
 *
 * Server-provided nonces (RFC 9449 §8): the token endpoint requires a proof
 * to carry a nonce this server issued, answering `use_dpop_nonce` with a
 * fresh one in the `DPoP-Nonce` header otherwise. A nonce is the HMAC of a
 * time window under a random key kept in the memory store (so every replica
 * issues and accepts the same nonces); it rotates every window, and the
 * previous window's nonce is still accepted, so a nonce lives between one and
 * two windows.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { PRIVATE_JWK_MEMBERS, carriedKey, parseCompact, payloadOf, verifyCarried, type CarriedKeyAlgorithm } from './jws.ts';
import { LatchkeyError } from '../engine/errors.ts';
import type { MemoryStore } from './memory_store.ts';

/** The algorithms a proof may use (asymmetric only). */
export const DPOP_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const satisfies readonly CarriedKeyAlgorithm[];
type DpopAlgorithm = (typeof DPOP_ALGORITHMS)[number];
const WINDOW_SECONDS = 60;
/** How long one nonce is the current one, in seconds (it is accepted for one more window). */
export const DPOP_NONCE_WINDOW_SECONDS = 300;
const NONCE_KEY = 'dpop_nonce_key';
const NONCE_KEY_TTL_SECONDS = 7 * 24 * 3600;

/** A refused proof: `invalid_dpop_proof` (RFC 9449 §5, §7.1). */
export const invalidDpopProof = (message = 'invalid DPoP proof'): LatchkeyError => new LatchkeyError('unauthenticated', message, { reason: 'invalid_dpop_proof' });

/** A proof without a current server nonce where one is required: `use_dpop_nonce` (RFC 9449 §8). */
export const useDpopNonce = (): LatchkeyError => new LatchkeyError('invalid_argument', 'the DPoP proof must carry the nonce given in the DPoP-Nonce header', { reason: 'use_dpop_nonce' });

/** `htu` as compared: the URL without query and fragment (RFC 9449 §4.3, check 9). */
function withoutQuery(url: string): string | undefined {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return undefined;
  }
}

/** The `ath` of an access token: base64url SHA-256 of its ASCII text. */
export const accessTokenHash = (token: string): string => createHash('sha256').update(token, 'ascii').digest('base64url');

export class DpopVerifier {
  readonly #memory: MemoryStore;
  readonly #nowSeconds: () => number;
  #nonceKey: { key: Buffer; readUntil: number } | undefined;

  constructor(options: { memory: MemoryStore; nowSeconds: () => number }) {
    this.#memory = options.memory;
    this.#nowSeconds = options.nowSeconds;
  }

  /** The key nonces are derived from: one for every replica, created by the first that needs it, re-read every window. */
  async #key(): Promise<Buffer> {
    const now = this.#nowSeconds();
    if (this.#nonceKey !== undefined && now < this.#nonceKey.readUntil) return this.#nonceKey.key;
    await this.#memory.setIfAbsent(NONCE_KEY, randomBytes(32).toString('base64url'), NONCE_KEY_TTL_SECONDS);
    const stored = await this.#memory.get(NONCE_KEY);
    if (stored === undefined) throw new LatchkeyError('unavailable', 'the DPoP nonce key could not be read', { reason: 'storage_unavailable' });
    const key = Buffer.from(stored, 'base64url');
    this.#nonceKey = { key, readUntil: now + DPOP_NONCE_WINDOW_SECONDS };
    return key;
  }

  #nonceOf(key: Buffer, window: number): string {
    return createHmac('sha256', key).update(`dpop-nonce:${window}`).digest('base64url');
  }

  /** The current server nonce (sent as `DPoP-Nonce`). */
  async nonce(): Promise<string> {
    return this.#nonceOf(await this.#key(), Math.floor(this.#nowSeconds() / DPOP_NONCE_WINDOW_SECONDS));
  }

  /** True when `nonce` is the current or the previous window's nonce. */
  async #nonceFresh(nonce: unknown): Promise<boolean> {
    if (typeof nonce !== 'string' || nonce.length === 0 || nonce.length > 128) return false;
    const key = await this.#key();
    const window = Math.floor(this.#nowSeconds() / DPOP_NONCE_WINDOW_SECONDS);
    return nonce === this.#nonceOf(key, window) || nonce === this.#nonceOf(key, window - 1);
  }

  /**
   * Checks a proof for `method` and `url` (and `accessToken`'s hash when
   * given; a current server nonce when `requireNonce`); answers its key's
   * thumbprint. Throws `invalid_dpop_proof`, or `use_dpop_nonce` for a proof
   * that is valid but lacks a current nonce (its `jti` is then not spent).
   */
  async verify(proof: string, method: string, url: string, accessToken?: string, requireNonce = false): Promise<{ jkt: string }> {
    if (typeof proof !== 'string' || proof.length === 0 || proof.length > 8192 || proof.includes(',')) throw invalidDpopProof();
    const parsed = parseCompact(proof);
    if (parsed === undefined) throw invalidDpopProof();
    const { header } = parsed;
    const alg = header['alg'];
    if (header['typ'] !== 'dpop+jwt' || typeof alg !== 'string' || !(DPOP_ALGORITHMS as readonly string[]).includes(alg)) throw invalidDpopProof('DPoP proof must be a dpop+jwt signed with an asymmetric algorithm');
    const jwk = header['jwk'];
    if (jwk === null || typeof jwk !== 'object' || PRIVATE_JWK_MEMBERS.some((m) => m in jwk)) throw invalidDpopProof('DPoP proof must carry a public jwk');
    // No extension this server understands: a header that says one is critical is refused (RFC 7515 §4.1.11).
    if ('crit' in header) throw invalidDpopProof();
    const key = carriedKey(jwk, alg as DpopAlgorithm);
    if (key === undefined || !(await verifyCarried(key, parsed.input, parsed.signature))) throw invalidDpopProof();
    const payload = payloadOf(parsed);
    if (payload === undefined) throw invalidDpopProof();
    const now = this.#nowSeconds();
    // As a JWT's verifier checks them (RFC 7519 §4.1.4, §4.1.5): a minute's tolerance either way.
    const { exp, nbf } = payload;
    if ((exp !== undefined && (typeof exp !== 'number' || exp <= now - WINDOW_SECONDS)) || (nbf !== undefined && (typeof nbf !== 'number' || nbf > now + WINDOW_SECONDS))) {
      throw invalidDpopProof();
    }
    if (payload['htm'] !== method) throw invalidDpopProof('DPoP proof htm does not match the request method');
    const htu = typeof payload['htu'] === 'string' ? withoutQuery(payload['htu']) : undefined;
    if (htu === undefined || htu !== withoutQuery(url)) throw invalidDpopProof('DPoP proof htu does not match the request URL');
    const iat = payload['iat'];
    if (typeof iat !== 'number' || Math.abs(now - iat) > WINDOW_SECONDS) throw invalidDpopProof('DPoP proof iat is outside the accepted window');
    const jti = payload['jti'];
    if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256) throw invalidDpopProof('DPoP proof needs a jti');
    if (accessToken !== undefined && payload['ath'] !== accessTokenHash(accessToken)) throw invalidDpopProof('DPoP proof ath does not match the access token');
    if (requireNonce && !(await this.#nonceFresh(payload['nonce']))) throw useDpopNonce();
    const jkt = key.thumbprint;
    // Single use: a proof seen before (within twice the window it could be accepted in) is a replay.
    const fresh = await this.#memory.setIfAbsent(`dpop_jti:${createHash('sha256').update(`${jkt}\n${jti}`).digest('base64url')}`, '1', WINDOW_SECONDS * 2 + 1);
    if (!fresh) throw invalidDpopProof('DPoP proof was already used');
    return { jkt };
  }
}

/** A JWK SHA-256 thumbprint as `dpop_jkt` carries it (RFC 9449 §10): 43 base64url characters. */
export const JKT_FORMAT = /^[A-Za-z0-9_-]{43}$/;

/**
 * The key check of a grant whose tokens may be bound (RFC 9449 §5, §10):
 * `bound` is the key the grant is bound to (an authorization request's
 * `dpop_jkt`, or the key of a DPoP-bound grant's earlier tokens), `proven`
 * the key of this request's proof. A bound grant needs a proof; with
 * `sameKey` (a code bound by `dpop_jkt`, a public client's refresh token)
 * by the same key. Throws `invalid_dpop_proof`.
 */
export function checkGrantKey(bound: string | undefined, proven: string | undefined, sameKey: boolean): void {
  if (bound === undefined) return;
  if (proven === undefined) throw invalidDpopProof('this grant is bound to a DPoP key: a DPoP proof is required');
  if (sameKey && proven !== bound) throw invalidDpopProof('the DPoP proof is signed by another key than the one this grant is bound to');
}
