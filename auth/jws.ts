/**
 * Compact JWS (RFC 7515) of the server's own tokens, on node:crypto: one
 * configured algorithm (RFC 7518 §3) and key, signing and checking the
 * signature of `header.payload`.
 *
 * Why not jose, which verifies every other JWT here (clients' assertions,
 * DPoP proofs, providers' ID tokens): jose signs and verifies through
 * WebCrypto, whose every call is a job handed to the thread pool with its
 * key and data copied. For HMAC that cost about 180 µs of CPU a token
 * against about 25 µs here, and a refresh signs two tokens and checks two.
 * HMAC runs here at once; RSA and ECDSA, whose own work is milliseconds, go
 * to the thread pool through node's callback form, keeping the event loop
 * free as before.
 *
 * Parsing is strict: three segments of the base64url alphabet in their
 * canonical form (no padding, no stray bits), header and payload JSON
 * objects. The claims are the caller's to check (tokens.ts).
 */
import { constants, createHmac, createPrivateKey, createPublicKey, createSecretKey, sign as signAsync, timingSafeEqual, verify as verifyAsync, type KeyObject } from 'node:crypto';

/** The signing algorithms of `--jwt-type`. */
export const JWT_ALGORITHMS = [
  'HS256',
  'HS384',
  'HS512',
  'RS256',
  'RS384',
  'RS512',
  'ES256',
  'ES384',
  'ES512',
  'PS256',
  'PS384',
  'PS512',
] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];

/** Signs and checks `header.payload` for one algorithm and key. */
export interface JwsKey {
  readonly alg: JwtAlgorithm;
  /** The signature of `input`, in base64url. */
  sign(input: string): Promise<string>;
  /** Whether `signature` (decoded) is a signature of `input`. Never throws. */
  verify(input: string, signature: Buffer): Promise<boolean>;
}

const hashOf = (alg: JwtAlgorithm): string => `sha${alg.slice(2)}`;

/** An HMAC key (HS256, HS384, HS512) from the shared secret's UTF-8 bytes. */
export function hmacKey(alg: JwtAlgorithm, secret: string): JwsKey {
  if (!alg.startsWith('HS')) throw new TypeError(`${alg} is not an HMAC algorithm`);
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  const hash = hashOf(alg);
  const mac = (input: string): Buffer => createHmac(hash, key).update(input, 'utf8').digest();
  return {
    alg,
    sign: (input) => Promise.resolve(mac(input).toString('base64url')),
    verify: (input, signature) => {
      const expected = mac(input);
      return Promise.resolve(signature.length === expected.length && timingSafeEqual(signature, expected));
    },
  };
}

/**
 * An RSA or ECDSA key pair (RS*, PS*, ES*) from PKCS#8 and SPKI PEM. The
 * caller checks that the keys suit the algorithm (tokens.ts imports them
 * with jose first, which refuses a wrong key type or curve, and has jose
 * verify a probe, which refuses an RSA key under 2,048 bits).
 */
export function asymmetricKey(alg: JwtAlgorithm, privatePem: string, publicPem: string): JwsKey {
  if (alg.startsWith('HS')) throw new TypeError(`${alg} is not an asymmetric algorithm`);
  const privateKey: KeyObject = createPrivateKey(privatePem);
  const publicKey: KeyObject = createPublicKey(publicPem);
  const hash = hashOf(alg);
  // ECDSA signatures are r and s side by side (RFC 7518 §3.4), not DER; PSS uses a salt as long as the hash (§3.5).
  const options = alg.startsWith('ES')
    ? { dsaEncoding: 'ieee-p1363' as const }
    : alg.startsWith('PS')
      ? { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }
      : {};
  return {
    alg,
    sign: (input) =>
      new Promise((resolve, reject) =>
        signAsync(hash, Buffer.from(input, 'utf8'), { key: privateKey, ...options }, (err, signature) => (err ? reject(err) : resolve(signature.toString('base64url')))),
      ),
    verify: (input, signature) =>
      new Promise((resolve) => {
        try {
          verifyAsync(hash, Buffer.from(input, 'utf8'), { key: publicKey, ...options }, signature, (err, ok) => resolve(err === null && ok));
        } catch {
          resolve(false);
        }
      }),
  };
}

const B64URL = /^[A-Za-z0-9_-]+$/;

/** The bytes of a base64url segment in canonical form (as its encoder writes it), else undefined. */
function decodeSegment(segment: string): Buffer | undefined {
  if (!B64URL.test(segment)) return undefined;
  const bytes = Buffer.from(segment, 'base64url');
  return bytes.toString('base64url') === segment ? bytes : undefined;
}

function jsonObject(bytes: Buffer): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

const encodeJson = (value: unknown): string => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

/** The compact JWS of `payload` under the key's algorithm and the other fields of `header`. */
export async function signCompact(key: JwsKey, header: Record<string, unknown>, payload: Record<string, unknown>): Promise<string> {
  const input = `${encodeJson({ alg: key.alg, ...header })}.${encodeJson(payload)}`;
  return `${input}.${await key.sign(input)}`;
}

/** A compact JWS taken apart: its header, and what its signature covers. */
export interface ParsedJws {
  readonly header: Record<string, unknown>;
  /** `header.payload` as sent: what the signature covers. */
  readonly input: string;
  readonly payloadSegment: string;
  readonly signature: Buffer;
}

/** Takes a compact JWS apart, or undefined when it is not one in canonical form with a JSON object for header. */
export function parseCompact(token: string): ParsedJws | undefined {
  const first = token.indexOf('.');
  const second = first < 0 ? -1 : token.indexOf('.', first + 1);
  if (second < 0 || token.indexOf('.', second + 1) >= 0) return undefined;
  const headerBytes = decodeSegment(token.slice(0, first));
  const signature = decodeSegment(token.slice(second + 1));
  if (headerBytes === undefined || signature === undefined) return undefined;
  const header = jsonObject(headerBytes);
  if (header === undefined) return undefined;
  return { header, input: token.slice(0, second), payloadSegment: token.slice(first + 1, second), signature };
}

/** The payload of a parsed JWS as a JSON object, or undefined (call only once its signature holds). */
export function payloadOf(parsed: ParsedJws): Record<string, unknown> | undefined {
  const bytes = decodeSegment(parsed.payloadSegment);
  return bytes === undefined ? undefined : jsonObject(bytes);
}
