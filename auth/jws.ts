/**
 * Compact JWS (RFC 7515) of the server's own tokens, on node:crypto: one
 * configured algorithm (RFC 7518 §3) and key, signing and checking the
 * signature of `header.payload`; and the keys DPoP proofs carry (RFC 9449),
 * imported from their JWK with the JWK rules' checks ({@link carriedKey}).
 *
 * Why not jose, which verifies the other JWTs here (clients' assertions,
 * providers' ID tokens): jose signs and verifies through
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
import { constants, createHash, createHmac, createPrivateKey, createPublicKey, createSecretKey, sign as signAsync, timingSafeEqual, verify as verifyAsync, type KeyObject } from 'node:crypto';

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

/** The asymmetric algorithms a key carried in a JWT (a DPoP proof's `jwk`) may sign with. */
export type CarriedKeyAlgorithm = 'RS256' | 'PS256' | 'ES256' | 'ES384' | 'ES512' | 'EdDSA';

/** Each ECDSA algorithm's curve (RFC 7518 §3.4) and the length in bytes of a coordinate and of a signature's halves. */
const EC_CURVES: Readonly<Record<string, { crv: string; bytes: number }>> = {
  ES256: { crv: 'P-256', bytes: 32 },
  ES384: { crv: 'P-384', bytes: 48 },
  ES512: { crv: 'P-521', bytes: 66 },
};
/**
 * The length in bytes of an OKP public key (RFC 8037 §2) by the curves `EdDSA` is taken to sign with here:
 * Ed25519 only, as before (jose's WebCrypto path knows no other).
 */
const EDDSA_CURVES: Readonly<Record<string, number>> = { Ed25519: 32 };
/** The members of a JWK that belong to a private or symmetric key (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2). */
export const PRIVATE_JWK_MEMBERS: readonly string[] = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

/** A base64url member of a JWK in canonical form, decoded; undefined otherwise. */
function jwkBytes(value: unknown): Buffer | undefined {
  return typeof value === 'string' ? decodeSegment(value) : undefined;
}

/** A public key carried in a JWT, checked for one algorithm, with its RFC 7638 thumbprint. */
export interface CarriedKey {
  readonly alg: CarriedKeyAlgorithm;
  readonly key: KeyObject;
  /** The base64url SHA-256 thumbprint of the JWK (RFC 7638 §3). */
  readonly thumbprint: string;
}

/**
 * Keys already imported by {@link carriedKey}, by algorithm and canonical JWK: a client proves possession of
 * the same key on every request, and importing it (with the point's check) costs about 40 µs of the 150 a
 * proof's check takes. Only keys that passed every check are kept; the least recently used goes first.
 */
const CARRIED_KEYS = new Map<string, CarriedKey>();
const CARRIED_KEYS_MAX = 1024;

/**
 * The public key of `jwk` for `alg`, or undefined when the JWK is not a
 * public key that suits it: `kty` RSA (at least 2,048 bits, no private or
 * multi-prime members) for RS256 and PS256; EC on the algorithm's curve, the
 * point on it and each coordinate exactly as long as the curve's, for
 * ES256/384/512; OKP on Ed25519 for EdDSA. Every key member must be
 * canonical base64url, RSA's integers without leading zero bytes (RFC 7518
 * §2, §6.2.1.2, §6.3.1); jose forgives both, and a key written two ways would
 * have two thumbprints. A `key_ops` list must allow `verify` (RFC 7517 §4.3);
 * `use` and `alg` are not compared (a verifier takes the algorithm from the
 * JWT's header, as WebCrypto's import does once jose drops them).
 */
export function carriedKey(jwk: unknown, alg: CarriedKeyAlgorithm): CarriedKey | undefined {
  if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk)) return undefined;
  const j = jwk as Record<string, unknown>;
  if (PRIVATE_JWK_MEMBERS.some((m) => m in j)) return undefined;
  const ops = j['key_ops'];
  if (ops !== undefined && !(Array.isArray(ops) && ops.includes('verify'))) return undefined;
  let members: Record<string, string>;
  if (alg === 'RS256' || alg === 'PS256') {
    const n = jwkBytes(j['n']);
    const e = jwkBytes(j['e']);
    // Unsigned integers in as few bytes as they take (RFC 7518 §2, "Base64urlUInt").
    if (j['kty'] !== 'RSA' || n === undefined || e === undefined || n[0] === 0 || e[0] === 0) return undefined;
    members = { e: j['e'] as string, kty: 'RSA', n: j['n'] as string };
  } else if (alg === 'EdDSA') {
    const size = typeof j['crv'] === 'string' ? EDDSA_CURVES[j['crv']] : undefined;
    if (j['kty'] !== 'OKP' || size === undefined || jwkBytes(j['x'])?.length !== size) return undefined;
    members = { crv: j['crv'] as string, kty: 'OKP', x: j['x'] as string };
  } else {
    const curve = EC_CURVES[alg];
    if (curve === undefined || j['kty'] !== 'EC' || j['crv'] !== curve.crv) return undefined;
    if (jwkBytes(j['x'])?.length !== curve.bytes || jwkBytes(j['y'])?.length !== curve.bytes) return undefined;
    members = { crv: curve.crv, kty: 'EC', x: j['x'] as string, y: j['y'] as string };
  }
  // The required members in lexicographic order, as JSON without white space (RFC 7638 §3.2, §3.3): the
  // thumbprint's input, and the key's name among those already imported.
  const canonicalJwk = JSON.stringify(members);
  const name = `${alg} ${canonicalJwk}`;
  const known = CARRIED_KEYS.get(name);
  if (known !== undefined) {
    // Most recently used last: the oldest goes first when the map is full.
    CARRIED_KEYS.delete(name);
    CARRIED_KEYS.set(name, known);
    return known;
  }
  let key: KeyObject;
  try {
    // OpenSSL refuses an EC point that is not on the curve.
    key = createPublicKey({ key: members, format: 'jwk' });
  } catch {
    return undefined;
  }
  if (key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) return undefined;
  const carried: CarriedKey = { alg, key, thumbprint: createHash('sha256').update(canonicalJwk, 'utf8').digest('base64url') };
  if (CARRIED_KEYS.size >= CARRIED_KEYS_MAX) CARRIED_KEYS.delete(CARRIED_KEYS.keys().next().value as string);
  CARRIED_KEYS.set(name, carried);
  return carried;
}

/**
 * Whether `signature` is `alg`'s signature of `input` under `key` (from
 * {@link carriedKey}): on the thread pool, through node's callback form.
 * Never throws.
 */
export function verifyCarried(key: CarriedKey, input: string, signature: Buffer): Promise<boolean> {
  const { alg } = key;
  const curve = EC_CURVES[alg];
  // ECDSA signatures are r and s side by side, each as long as the curve's coordinates (RFC 7518 §3.4).
  if (curve !== undefined && signature.length !== 2 * curve.bytes) return Promise.resolve(false);
  const hash = alg === 'EdDSA' ? null : `sha${alg.slice(2)}`;
  const options =
    curve !== undefined
      ? { dsaEncoding: 'ieee-p1363' as const }
      : alg === 'PS256'
        ? { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }
        : {};
  return new Promise((resolve) => {
    try {
      verifyAsync(hash, Buffer.from(input, 'utf8'), { key: key.key, ...options }, signature, (err, ok) => resolve(err === null && ok));
    } catch {
      resolve(false);
    }
  });
}
