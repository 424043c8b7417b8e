/**
 * The WebAuthn relying party (W3C Web Authentication Level 3): the options of
 * the registration and authentication ceremonies, and the verification of an
 * authenticator's answer. `@simplewebauthn/server` is confined to this module.
 *
 * Before the library verifies signatures and attestation statements, this
 * module decodes the client data and the authenticator data itself and
 * refuses, each with its own reason, at the point where the fault is known:
 * the ceremony type, the challenge (§7.1 step 8 / §7.2 step 12), the origin
 * (step 9 / 13), the RP ID hash (step 13 / 15), user presence and user
 * verification (steps 14-15 / 16-17) and, for a sign-in, a signature counter
 * that did not move forward (§6.1.1, a cloned authenticator). What the library
 * refuses after these checks is a bad signature (sign-in) or a bad
 * attestation statement (registration). No refusal code is derived from a
 * library message.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { parseAuthenticatorData } from '@simplewebauthn/server/helpers';
import { LatchkeyError } from '../engine/errors.ts';

type WebAuthnLib = typeof import('@simplewebauthn/server') & typeof import('@simplewebauthn/server/helpers');
let loaded: WebAuthnLib | undefined;
/** The WebAuthn library, loaded when the first relying party is made: a server without passkeys never holds it. */
function lib(): WebAuthnLib {
  if (loaded === undefined) {
    const require = createRequire(import.meta.url);
    loaded = { ...(require('@simplewebauthn/server') as typeof import('@simplewebauthn/server')), ...(require('@simplewebauthn/server/helpers') as typeof import('@simplewebauthn/server/helpers')) };
  }
  return loaded;
}

/** How the relying party is configured (`--webauthn-*`). */
export interface RelyingPartyOptions {
  /** `--webauthn-rp-id`: the registrable domain the credentials are scoped to. */
  rpId: string;
  /** `--webauthn-rp-name`: shown by authenticators at registration. */
  rpName: string;
  /** `--webauthn-origins`: the exact origins a ceremony may come from. */
  origins: readonly string[];
  /** `--webauthn-attestation`: `none` (default) or `direct` (an attestation statement is required and verified). */
  attestation: 'none' | 'direct';
  /** `--webauthn-require-user-verification`: refuse an answer whose UV flag is not set (else UV is preferred). */
  requireUserVerification: boolean;
}

/** How long a ceremony's challenge may be answered, milliseconds (§5.4 recommends 300 s with user verification). */
export const CEREMONY_TIMEOUT_MS = 300_000;

/** A stored credential, as the verification of a sign-in needs it. */
export interface StoredCredential {
  /** base64url credential id. */
  credentialId: string;
  /** base64url COSE public key. */
  publicKey: string;
  signCount: number;
  transports: readonly string[];
}

/** What a verified registration stores. */
export interface NewCredential {
  credentialId: string;
  publicKey: string;
  signCount: number;
  transports: string[];
  backupEligible: boolean;
  backedUp: boolean;
  aaguid: string;
  userVerified: boolean;
  attestationFormat: string;
}

/** What a verified sign-in updates. */
export interface VerifiedAssertion {
  newSignCount: number;
  backedUp: boolean;
  userVerified: boolean;
}

/** A refusal of a ceremony's answer: `unauthenticated` with its precise reason (and, never sent, the user it concerns). */
export function ceremonyRefused(reason: string, message: string, userId?: string): LatchkeyError {
  return new LatchkeyError('unauthenticated', message, { reason, cause: { internal_reason: reason, ...(userId === undefined ? {} : { user_id: userId }) } });
}

const malformed = (detail: string): LatchkeyError =>
  new LatchkeyError('invalid_argument', `credential: ${detail}`, { reason: 'passkey_malformed_response', details: { field: 'credential' } });

const B64URL = /^[A-Za-z0-9_-]*$/;

function b64(value: unknown, field: string, maxLength = 65_536): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength || !B64URL.test(value)) throw malformed(`${field} must be a base64url string`);
  return value;
}

function record(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw malformed(`${field} must be an object`);
  return value as Record<string, unknown>;
}

interface ClientData {
  type: string;
  challenge: string;
  origin: string;
}

function clientDataOf(encoded: string): ClientData {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch {
    throw malformed('response.clientDataJSON is not JSON');
  }
  const c = record(parsed, 'response.clientDataJSON');
  if (typeof c['type'] !== 'string' || typeof c['challenge'] !== 'string' || typeof c['origin'] !== 'string') throw malformed('response.clientDataJSON lacks type, challenge or origin');
  return { type: c['type'], challenge: c['challenge'], origin: c['origin'] };
}

/** The library's options as plain JSON: fields it leaves undefined are dropped (every protocol carries the same object). */
function plainJson(options: object): Record<string, unknown> {
  return JSON.parse(JSON.stringify(options)) as Record<string, unknown>;
}

/** The credential id and user handle of a sign-in answer, read before its credential is looked up. */
export interface AssertionIds {
  credentialId: string;
  /** The user handle the authenticator returned (a discoverable credential), base64url; undefined when none. */
  userHandle: string | undefined;
}

/** The relying party of one server. */
export class RelyingParty {
  readonly options: RelyingPartyOptions;
  readonly #rpIdHash: Buffer;

  constructor(options: RelyingPartyOptions) {
    if (options.rpId === '' || options.origins.length === 0) throw new LatchkeyError('invalid_argument', 'the relying party needs an RP ID and at least one origin', { reason: 'invalid_option' });
    this.options = Object.freeze({ ...options, origins: Object.freeze([...options.origins]) });
    this.#rpIdHash = createHash('sha256').update(options.rpId, 'utf8').digest();
    // Loaded now, with passkeys on: a missing library stops the server at startup, not at the first ceremony.
    lib();
  }

  /** The options for `navigator.credentials.create()`: a discoverable credential, UV preferred (or required), attestation per the flag. */
  async registrationOptions(input: {
    challenge: string;
    userHandle: string;
    userName: string;
    displayName: string;
    exclude: readonly StoredCredential[];
  }): Promise<Record<string, unknown>> {
    return plainJson(await lib().generateRegistrationOptions({
      rpName: this.options.rpName,
      rpID: this.options.rpId,
      userName: input.userName,
      userDisplayName: input.displayName,
      userID: Buffer.from(input.userHandle, 'utf8'),
      challenge: Buffer.from(input.challenge, 'base64url'),
      timeout: CEREMONY_TIMEOUT_MS,
      attestationType: this.options.attestation,
      excludeCredentials: input.exclude.map((c) => ({ id: c.credentialId, transports: [...c.transports] })),
      authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: this.#userVerification() },
    }));
  }

  /** The options for `navigator.credentials.get()`: any discoverable credential when `allow` is undefined. */
  async authenticationOptions(input: { challenge: string; allow?: readonly StoredCredential[] | undefined }): Promise<Record<string, unknown>> {
    return plainJson(await lib().generateAuthenticationOptions({
      rpID: this.options.rpId,
      challenge: Buffer.from(input.challenge, 'base64url'),
      timeout: CEREMONY_TIMEOUT_MS,
      userVerification: this.#userVerification(),
      ...(input.allow === undefined ? {} : { allowCredentials: input.allow.map((c) => ({ id: c.credentialId, transports: [...c.transports] })) }),
    }));
  }

  #userVerification(): 'required' | 'preferred' {
    return this.options.requireUserVerification ? 'required' : 'preferred';
  }

  /** Checks the client data of an answer: its type, the ceremony's challenge and an allowed origin. */
  #checkClientData(encoded: string, type: 'webauthn.create' | 'webauthn.get', challenge: string, userId: string | undefined): void {
    const client = clientDataOf(encoded);
    if (client.type !== type) throw malformed(`response.clientDataJSON type must be ${type}`);
    if (client.challenge !== challenge) throw ceremonyRefused('passkey_challenge_invalid', 'the passkey answer does not belong to this ceremony', userId);
    if (!this.options.origins.includes(client.origin)) throw ceremonyRefused('passkey_origin_mismatch', 'the passkey answer comes from an origin this server does not accept', userId);
  }

  /** Checks the authenticator data's RP ID hash and flags. */
  #checkFlags(authData: ReturnType<typeof parseAuthenticatorData>, userId: string | undefined): void {
    if (!Buffer.from(authData.rpIdHash).equals(this.#rpIdHash)) throw ceremonyRefused('passkey_rp_id_mismatch', 'the passkey was made for another relying party', userId);
    if (!authData.flags.up) throw ceremonyRefused('passkey_user_not_present', 'the authenticator did not confirm the user was present', userId);
    if (this.options.requireUserVerification && !authData.flags.uv) throw ceremonyRefused('passkey_user_verification_required', 'this server requires user verification (PIN or biometric) on the authenticator', userId);
  }

  /**
   * Verifies a registration answer against the ceremony's challenge. Errors:
   * `invalid_argument` (`passkey_malformed_response`); `unauthenticated` with
   * `passkey_challenge_invalid`, `passkey_origin_mismatch`,
   * `passkey_rp_id_mismatch`, `passkey_user_not_present`,
   * `passkey_user_verification_required`, `passkey_attestation_required`
   * (`direct` attestation asked and none given) or
   * `passkey_invalid_attestation`.
   */
  async verifyRegistration(credential: unknown, challenge: string, userId?: string): Promise<NewCredential> {
    const c = record(credential, 'credential');
    const id = b64(c['id'], 'id', 1400);
    if (c['rawId'] !== id) throw malformed('rawId must equal id');
    if (c['type'] !== 'public-key') throw malformed('type must be public-key');
    const response = record(c['response'], 'response');
    const clientDataJSON = b64(response['clientDataJSON'], 'response.clientDataJSON');
    const attestationObject = b64(response['attestationObject'], 'response.attestationObject');
    this.#checkClientData(clientDataJSON, 'webauthn.create', challenge, userId);
    let fmt: string;
    let authData: ReturnType<typeof parseAuthenticatorData>;
    try {
      const decoded = lib().decodeAttestationObject(Buffer.from(attestationObject, 'base64url'));
      fmt = decoded.get('fmt');
      authData = lib().parseAuthenticatorData(decoded.get('authData'));
    } catch {
      throw malformed('response.attestationObject is not a valid attestation object');
    }
    this.#checkFlags(authData, userId);
    if (authData.credentialID === undefined || Buffer.from(authData.credentialID).toString('base64url') !== id) throw malformed('the attested credential id differs from id');
    if (this.options.attestation === 'direct' && fmt === 'none') throw ceremonyRefused('passkey_attestation_required', 'this server requires an attestation statement from the authenticator', userId);
    const transports = Array.isArray(response['transports']) ? response['transports'].filter((t): t is string => typeof t === 'string' && /^[a-z-]{1,16}$/.test(t)).slice(0, 8) : [];
    let verified: Awaited<ReturnType<WebAuthnLib['verifyRegistrationResponse']>>;
    try {
      verified = await lib().verifyRegistrationResponse({
        response: { ...(c as unknown as RegistrationResponseJSON), response: { ...(response as unknown as RegistrationResponseJSON['response']), transports: transports as never } },
        expectedChallenge: challenge,
        expectedOrigin: [...this.options.origins],
        expectedRPID: this.options.rpId,
        requireUserVerification: this.options.requireUserVerification,
      });
    } catch (err) {
      throw new LatchkeyError('unauthenticated', 'the authenticator\'s attestation could not be verified', { reason: 'passkey_invalid_attestation', cause: { internal_reason: 'passkey_invalid_attestation', user_id: userId, err } });
    }
    if (!verified.verified) throw ceremonyRefused('passkey_invalid_attestation', 'the authenticator\'s attestation could not be verified', userId);
    const info = verified.registrationInfo;
    return {
      credentialId: info.credential.id,
      publicKey: Buffer.from(info.credential.publicKey).toString('base64url'),
      signCount: info.credential.counter,
      transports,
      backupEligible: info.credentialDeviceType === 'multiDevice',
      backedUp: info.credentialBackedUp,
      aaguid: info.aaguid,
      userVerified: info.userVerified,
      attestationFormat: info.fmt,
    };
  }

  /** The credential id and user handle of a sign-in answer (`invalid_argument` `passkey_malformed_response` when unreadable). */
  assertionIds(credential: unknown): AssertionIds {
    const c = record(credential, 'credential');
    const id = b64(c['id'], 'id', 1400);
    if (c['rawId'] !== id) throw malformed('rawId must equal id');
    if (c['type'] !== 'public-key') throw malformed('type must be public-key');
    const response = record(c['response'], 'response');
    const handle = response['userHandle'];
    return { credentialId: id, userHandle: handle === undefined || handle === null || handle === '' ? undefined : b64(handle, 'response.userHandle', 128) };
  }

  /**
   * Verifies a sign-in answer with its stored credential. Errors:
   * `invalid_argument` (`passkey_malformed_response`); `unauthenticated`
   * with `passkey_challenge_invalid`, `passkey_origin_mismatch`,
   * `passkey_rp_id_mismatch`, `passkey_user_not_present`,
   * `passkey_user_verification_required`, `passkey_counter_regression` (the
   * counter did not move forward: a cloned authenticator) or
   * `passkey_invalid_signature`.
   */
  async verifyAuthentication(credential: unknown, challenge: string, stored: StoredCredential, userId?: string): Promise<VerifiedAssertion> {
    const c = record(credential, 'credential');
    const response = record(c['response'], 'response');
    const clientDataJSON = b64(response['clientDataJSON'], 'response.clientDataJSON');
    const authenticatorData = b64(response['authenticatorData'], 'response.authenticatorData');
    b64(response['signature'], 'response.signature');
    this.#checkClientData(clientDataJSON, 'webauthn.get', challenge, userId);
    let authData: ReturnType<typeof parseAuthenticatorData>;
    try {
      authData = lib().parseAuthenticatorData(Buffer.from(authenticatorData, 'base64url'));
    } catch {
      throw malformed('response.authenticatorData is not valid authenticator data');
    }
    this.#checkFlags(authData, userId);
    // §6.1.1: a counter that does not move forward while either is non-zero signals a cloned authenticator.
    if ((authData.counter > 0 || stored.signCount > 0) && authData.counter <= stored.signCount) {
      throw ceremonyRefused('passkey_counter_regression', 'this passkey\'s signature counter went backwards; the sign-in is refused', userId);
    }
    let verified: Awaited<ReturnType<WebAuthnLib['verifyAuthenticationResponse']>>;
    try {
      verified = await lib().verifyAuthenticationResponse({
        response: c as unknown as AuthenticationResponseJSON,
        expectedChallenge: challenge,
        expectedOrigin: [...this.options.origins],
        expectedRPID: this.options.rpId,
        credential: { id: stored.credentialId, publicKey: Buffer.from(stored.publicKey, 'base64url'), counter: stored.signCount, transports: [...stored.transports] as never },
        requireUserVerification: this.options.requireUserVerification,
      });
    } catch (err) {
      throw new LatchkeyError('unauthenticated', 'the passkey signature is not valid', { reason: 'passkey_invalid_signature', cause: { internal_reason: 'passkey_invalid_signature', user_id: userId, err } });
    }
    if (!verified.verified) throw ceremonyRefused('passkey_invalid_signature', 'the passkey signature is not valid', userId);
    return { newSignCount: verified.authenticationInfo.newCounter, backedUp: verified.authenticationInfo.credentialBackedUp, userVerified: verified.authenticationInfo.userVerified };
  }
}
