/**
 * Test helper: a software WebAuthn authenticator. Its keys are P-256 pairs
 * made here with node:crypto; it answers registration options with
 * attestation `none` (the attestation object and the authenticator data
 * CBOR-encoded by the small encoder below, W3C WebAuthn §6.1 and §6.5, RFC
 * 8949 §3) and authentication options with an ES256 signature over the
 * authenticator data and the client data's hash (§6.3.3). Every field a
 * relying party checks can be spoiled on request (origin, RP ID, challenge,
 * flags, counter, signature), so that each refusal can be provoked.
 */
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

type Cbor = number | string | Uint8Array | readonly Cbor[] | Map<number | string, Cbor> | { readonly [k: string]: Cbor };

function head(major: number, n: number): Buffer {
  if (n < 24) return Buffer.from([(major << 5) | n]);
  if (n < 0x100) return Buffer.from([(major << 5) | 24, n]);
  if (n < 0x10000) {
    const b = Buffer.alloc(3);
    b[0] = (major << 5) | 25;
    b.writeUInt16BE(n, 1);
    return b;
  }
  const b = Buffer.alloc(5);
  b[0] = (major << 5) | 26;
  b.writeUInt32BE(n, 1);
  return b;
}

/** Encodes the subset of CBOR WebAuthn uses: integers, byte and text strings, arrays and maps. */
export function cbor(v: Cbor): Buffer {
  if (typeof v === 'number') return v >= 0 ? head(0, v) : head(1, -1 - v);
  if (typeof v === 'string') {
    const bytes = Buffer.from(v, 'utf8');
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (v instanceof Uint8Array) return Buffer.concat([head(2, v.length), Buffer.from(v)]);
  if (Array.isArray(v)) return Buffer.concat([head(4, v.length), ...v.map(cbor)]);
  const entries: Array<[number | string, Cbor]> = v instanceof Map ? [...v.entries()] : Object.entries(v as Record<string, Cbor>);
  return Buffer.concat([head(5, entries.length), ...entries.flatMap(([k, x]) => [cbor(k), cbor(x)])]);
}

const b64u = (b: Uint8Array): string => Buffer.from(b).toString('base64url');
const sha256 = (b: Uint8Array | string): Buffer => createHash('sha256').update(b).digest();

const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_BE = 0x08;
const FLAG_BS = 0x10;
const FLAG_AT = 0x40;

/** What a test may spoil in one answer. */
export interface Spoil {
  origin?: string;
  rpId?: string;
  challenge?: string;
  /** The user-verified flag (default: the authenticator's `userVerifying`). */
  uv?: boolean;
  /** The counter to report instead of the next one. */
  counter?: number;
  /** Flip a bit of the signature. */
  badSignature?: boolean;
  /** Answer with this credential id instead of a registered one. */
  credentialId?: string;
  /** Answer with the newest credential even when the options list others (as a hostile client would). */
  ignoreAllowList?: boolean;
}

interface Credential {
  id: Buffer;
  key: KeyObject;
  userHandle: string;
  counter: number;
  rpId: string;
}

export type Json = Record<string, unknown>;

/** A software authenticator for one origin and RP ID (discoverable credentials, user verification by default). */
export class SoftwareAuthenticator {
  readonly origin: string;
  readonly rpId: string;
  readonly userVerifying: boolean;
  readonly #credentials: Credential[] = [];

  constructor(o: { origin: string; rpId: string; userVerifying?: boolean }) {
    this.origin = o.origin;
    this.rpId = o.rpId;
    this.userVerifying = o.userVerifying ?? true;
  }

  /** The credential ids made so far (base64url). */
  get credentialIds(): string[] {
    return this.#credentials.map((c) => b64u(c.id));
  }

  #clientData(type: string, challenge: string, spoil: Spoil): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge: spoil.challenge ?? challenge, origin: spoil.origin ?? this.origin, crossOrigin: false }), 'utf8');
  }

  #flags(spoil: Spoil, extra: number): number {
    return FLAG_UP | ((spoil.uv ?? this.userVerifying) ? FLAG_UV : 0) | FLAG_BE | FLAG_BS | extra;
  }

  /** Answers `navigator.credentials.create()` options (`PublicKeyCredentialCreationOptionsJSON`) with a new credential. */
  create(options: Json, spoil: Spoil = {}): Json {
    const user = options['user'] as { id: string };
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' }) as { x: string; y: string };
    const id = randomBytes(16);
    const rpId = spoil.rpId ?? this.rpId;
    // COSE_Key (RFC 9052 §7, RFC 9053 §7.1.1): kty EC2, alg ES256, crv P-256, x, y.
    const coseKey = cbor(new Map<number, Cbor>([[1, 2], [3, -7], [-1, 1], [-2, Buffer.from(jwk.x, 'base64url')], [-3, Buffer.from(jwk.y, 'base64url')]]));
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(id.length);
    const authData = Buffer.concat([sha256(rpId), Buffer.from([this.#flags(spoil, FLAG_AT)]), Buffer.alloc(4), Buffer.alloc(16), idLength, id, coseKey]);
    const attestationObject = cbor(new Map<string, Cbor>([['fmt', 'none'], ['attStmt', new Map()], ['authData', authData]]));
    const clientDataJSON = this.#clientData('webauthn.create', String(options['challenge']), spoil);
    this.#credentials.push({ id, key: privateKey, userHandle: user.id, counter: 0, rpId });
    return {
      id: b64u(id),
      rawId: b64u(id),
      type: 'public-key',
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
      response: { clientDataJSON: b64u(clientDataJSON), attestationObject: b64u(attestationObject), transports: ['internal', 'hybrid'] },
    };
  }

  /** Answers `navigator.credentials.get()` options with a listed credential, or (none listed) the newest one. */
  get(options: Json, spoil: Spoil = {}): Json {
    const allow = spoil.ignoreAllowList ? [] : ((options['allowCredentials'] as Array<{ id: string }> | undefined) ?? []).map((c) => c.id);
    const candidates = this.#credentials.filter((c) => allow.length === 0 || allow.includes(b64u(c.id)));
    const cred = candidates[candidates.length - 1];
    if (cred === undefined) throw new Error('the software authenticator holds no credential for these options');
    const counter = spoil.counter ?? ++cred.counter;
    const counterBytes = Buffer.alloc(4);
    counterBytes.writeUInt32BE(counter);
    const authData = Buffer.concat([sha256(spoil.rpId ?? cred.rpId), Buffer.from([this.#flags(spoil, 0)]), counterBytes]);
    const clientDataJSON = this.#clientData('webauthn.get', String(options['challenge']), spoil);
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientDataJSON)]), cred.key);
    if (spoil.badSignature) signature.writeUInt8(signature.readUInt8(signature.length - 1) ^ 0x01, signature.length - 1);
    const id = spoil.credentialId ?? b64u(cred.id);
    return {
      id,
      rawId: id,
      type: 'public-key',
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
      response: { clientDataJSON: b64u(clientDataJSON), authenticatorData: b64u(authData), signature: b64u(signature), userHandle: cred.userHandle },
    };
  }
}
