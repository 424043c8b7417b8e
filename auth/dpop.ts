/**
 * DPoP proofs (RFC 9449 §4.3): a JWT of type `dpop+jwt`, signed with an
 * asymmetric key whose public JWK is in its header, naming the request's
 * method (`htm`) and URL without query and fragment (`htu`), issued within a
 * minute of now (`iat`), with a `jti` never seen before (remembered in the
 * memory store, so across processes with Redis) and, when it accompanies an
 * access token, the token's hash (`ath`). The thumbprint of its key (RFC
 * 7638) is what a bound token's `cnf.jkt` names.
 */
import { createHash } from 'node:crypto';
import { calculateJwkThumbprint, decodeProtectedHeader, importJWK, jwtVerify, type JWK } from 'jose';
import { LatchkeyError } from '../engine/errors.ts';
import type { MemoryStore } from './memory_store.ts';

/** The algorithms a proof may use (asymmetric only). */
export const DPOP_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
const WINDOW_SECONDS = 60;
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'];

/** A refused proof: `invalid_dpop_proof` (RFC 9449 §5, §7.1). */
export const invalidDpopProof = (message = 'invalid DPoP proof'): LatchkeyError => new LatchkeyError('unauthenticated', message, { reason: 'invalid_dpop_proof' });

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

  constructor(options: { memory: MemoryStore; nowSeconds: () => number }) {
    this.#memory = options.memory;
    this.#nowSeconds = options.nowSeconds;
  }

  /** Checks a proof for `method` and `url` (and `accessToken`'s hash when given); answers its key's thumbprint. */
  async verify(proof: string, method: string, url: string, accessToken?: string): Promise<{ jkt: string }> {
    if (typeof proof !== 'string' || proof.length === 0 || proof.length > 8192 || proof.includes(',')) throw invalidDpopProof();
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(proof);
    } catch {
      throw invalidDpopProof();
    }
    const alg = header.alg;
    const jwk = header.jwk as JWK | undefined;
    if (header.typ !== 'dpop+jwt' || typeof alg !== 'string' || !(DPOP_ALGORITHMS as readonly string[]).includes(alg)) throw invalidDpopProof('DPoP proof must be a dpop+jwt signed with an asymmetric algorithm');
    if (jwk === undefined || typeof jwk !== 'object' || PRIVATE_MEMBERS.some((m) => m in jwk)) throw invalidDpopProof('DPoP proof must carry a public jwk');
    const now = this.#nowSeconds();
    let payload: Record<string, unknown>;
    try {
      const key = await importJWK(jwk, alg);
      ({ payload } = await jwtVerify(proof, key, { typ: 'dpop+jwt', algorithms: [alg], currentDate: new Date(now * 1000), clockTolerance: WINDOW_SECONDS }));
    } catch {
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
    const jkt = await calculateJwkThumbprint(jwk, 'sha256');
    // Single use: a proof seen before (within twice the window it could be accepted in) is a replay.
    const fresh = await this.#memory.setIfAbsent(`dpop_jti:${createHash('sha256').update(`${jkt}\n${jti}`).digest('base64url')}`, '1', WINDOW_SECONDS * 2 + 1);
    if (!fresh) throw invalidDpopProof('DPoP proof was already used');
    return { jkt };
  }
}
