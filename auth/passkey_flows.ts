/**
 * Passkeys (WebAuthn): sign-up without a password, sign-in with a
 * discoverable credential or with an identifier, a passkey as the second
 * factor of a password login, adding one to a signed-in account, and
 * managing them.
 *
 * Every ceremony is two calls: one answers the options for the browser's
 * `navigator.credentials.create()` / `.get()` and opens a ceremony; the next
 * hands back the authenticator's answer. A ceremony is a random 256-bit
 * token (shown once, stored only hashed in the memory store) holding the
 * challenge and what it is bound to: the drafted user of a sign-up, the user
 * named by a sign-in, the user and session of an addition, the password
 * login of a second factor (whose token is the `mfa` cookie). It is used
 * once: it is taken out of the store before the answer is verified, so a
 * replayed answer or ceremony finds nothing (`passkey_challenge_invalid`),
 * and it expires after {@link CEREMONY_TIMEOUT_MS} by the service's clock
 * (`passkey_challenge_expired`). A refused answer stores nothing.
 */
import { createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { MemoryStore } from './memory_store.ts';
import type { ResolvedAuthOptions } from './options.ts';
import type { MainDatabase, StoreTransaction } from './main_database.ts';
import type { PasskeyRecord, PasskeyStore } from './passkey_store.ts';
import { CEREMONY_TIMEOUT_MS, ceremonyRefused, type RelyingParty, type StoredCredential } from './webauthn.ts';
import { normalizeEmail, type UserFields, type UserRecord, type UserStore } from './user_store_types.ts';
import type { EmailFlows, LinkDelivery } from './email_flows.ts';
import { signupEventSteps, type SignupRecorder } from './signup_recorder.ts';
import { EMAIL_RE, invalidArgument, invalidCredentials } from './profile.ts';
import { firstFactorAmr } from './issue_tokens.ts';
import { toPublicUser, type AuthCallContext, type AuthResponse, type AuthResult, type SessionGrant } from './public_user.ts';
import { requestedRoles, unauthenticated, type SessionFlows } from './session_flows.ts';

/** The sign-in method recorded for a passkey session (`login_method`, the session's first factor). */
export const PASSKEY_LOGIN_METHOD = 'passkey';

/** What a ceremony is for. */
type CeremonyKind = 'signup' | 'login' | 'register' | 'mfa' | 'step_up';

/** What a ceremony remembers. */
interface Ceremony {
  kind: CeremonyKind;
  /** base64url, 32 random bytes. */
  challenge: string;
  /** When the challenge stops being accepted, milliseconds since the epoch (service clock). */
  expires_ms: number;
  /** signup: the drafted user's id; login: the user named by the identifier; register and mfa: the user. */
  user_id?: string | undefined;
  /** login: an identifier was given (the answer must be a passkey of `user_id`, and of no one when it is unset). */
  named?: boolean | undefined;
  /** register: the session that asked. */
  session_id?: string | undefined;
  /** signup: the new user's fields. */
  fields?: UserFields | undefined;
  /** mfa: the password login's requested roles, scope and first factor, and when it was proven. */
  roles?: string[] | undefined;
  scope?: string[] | null | undefined;
  login_method?: string | undefined;
  created_ms?: number | undefined;
}

/** A ceremony's options for the browser and its id (the token to hand back). */
export interface CeremonyStart {
  ceremony_id: string;
  options: Record<string, unknown>;
}

/** The public view of a passkey. */
export interface PublicPasskey {
  id: string;
  name: string;
  credential_id: string;
  transports: string[];
  backup_eligible: boolean;
  backed_up: boolean;
  aaguid: string;
  created_at: number;
  last_used_at: number | null;
}

export function toPublicPasskey(p: PasskeyRecord): PublicPasskey {
  return {
    id: p.id,
    name: p.name,
    credential_id: p.credential_id,
    transports: p.transports,
    backup_eligible: p.backup_eligible,
    backed_up: p.backed_up,
    aaguid: p.aaguid,
    created_at: p.created_at,
    last_used_at: p.last_used_at,
  };
}

const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('base64url');
const DEFAULT_NAME = 'Passkey';
/** How long a step-up stays good for one sensitive operation of its session, seconds. */
export const STEP_UP_TTL_SECONDS = 300;

export interface PasskeyFlowsDeps {
  /** The relying party; undefined when passkeys are off (`--enable-passkeys=false`). */
  rp: RelyingParty | undefined;
  store: PasskeyStore;
  memory: MemoryStore;
  users: UserStore;
  database: MainDatabase;
  options: ResolvedAuthOptions;
  sessions: SessionFlows;
  email: EmailFlows;
  signupRoles: (requested: readonly string[] | undefined) => string[];
  /** When every session of a user was last ended at once. */
  endedAllAt: (userId: string) => Promise<number | undefined>;
}

/** The passkey flows of the identity service. */
export class PasskeyFlows {
  readonly #d: PasskeyFlowsDeps;
  readonly #decoyKey: Buffer;

  constructor(deps: PasskeyFlowsDeps) {
    this.#d = deps;
    this.#decoyKey = Buffer.from(hkdfSync('sha256', Buffer.from(deps.options.mfaSecret, 'utf8'), 'latchkey', 'passkey decoy', 32));
  }

  /** True when passkeys are on. */
  get enabled(): boolean {
    return this.#d.rp !== undefined;
  }

  #rp(): RelyingParty {
    const rp = this.#d.rp;
    if (rp === undefined) throw new LatchkeyError('failed_precondition', 'passkeys are disabled for this instance', { reason: 'passkeys_disabled' });
    return rp;
  }

  #now(): number {
    return this.#d.options.now();
  }

  // ---------------------------------------------------------------- ceremonies

  async #open(c: Omit<Ceremony, 'challenge' | 'expires_ms'>): Promise<{ token: string; challenge: string }> {
    const token = randomBytes(32).toString('base64url');
    const challenge = randomBytes(32).toString('base64url');
    const ceremony: Ceremony = { ...c, challenge, expires_ms: this.#now() + CEREMONY_TIMEOUT_MS };
    await this.#d.memory.set(`webauthn:${sha256(token)}`, JSON.stringify(ceremony), Math.ceil(CEREMONY_TIMEOUT_MS / 1000) + 60);
    return { token, challenge };
  }

  /** Takes a ceremony out of the store (used once, whatever the answer), checking its kind and age. */
  async #take(token: string | undefined, kind: CeremonyKind): Promise<Ceremony> {
    if (token === undefined || token.length === 0 || token.length > 256) throw ceremonyRefused('passkey_challenge_invalid', 'unknown, used or expired passkey ceremony');
    const key = `webauthn:${sha256(token)}`;
    const raw = await this.#d.memory.get(key);
    if (raw === undefined) throw ceremonyRefused('passkey_challenge_invalid', 'unknown, used or expired passkey ceremony');
    const ceremony = JSON.parse(raw) as Ceremony;
    if (ceremony.kind !== kind) throw ceremonyRefused('passkey_challenge_invalid', 'this passkey ceremony is for another purpose', ceremony.user_id);
    // Of two answers racing for one ceremony, one takes it.
    if ((await this.#d.memory.del(key)) !== 1) throw ceremonyRefused('passkey_challenge_invalid', 'unknown, used or expired passkey ceremony', ceremony.user_id);
    if (ceremony.expires_ms <= this.#now()) throw ceremonyRefused('passkey_challenge_expired', 'the passkey ceremony expired; start again', ceremony.user_id);
    return ceremony;
  }

  #stored(p: PasskeyRecord): StoredCredential {
    return { credentialId: p.credential_id, publicKey: p.public_key, signCount: p.sign_count, transports: p.transports };
  }

  /** A credential id that looks like a real one for an address with no passkey (sign-in options reveal no accounts). */
  #decoy(email: string): StoredCredential {
    const id = createHmac('sha256', this.#decoyKey).update(email, 'utf8').digest().subarray(0, 16).toString('base64url');
    return { credentialId: id, publicKey: '', signCount: 0, transports: ['internal', 'hybrid'] };
  }

  /** Whether MFA applies to the user (as `MfaFlows.methodFor` decides). */
  #mfaApplies(user: UserRecord): boolean {
    const o = this.#d.options;
    return o.enforceMfa || (o.enableMfa && user.is_multi_factor_auth_enabled === true);
  }

  /** The session of a proven passkey: `amr` per RFC 8176 (hwk: a hardware-bound key; user: presence; mfa when verified). */
  #amr(userVerified: boolean): string[] {
    return userVerified ? ['hwk', 'user', 'mfa'] : ['hwk', 'user'];
  }

  /**
   * Verifies a sign-in answer: the credential is known (and is the named
   * user's, and matches the user handle the authenticator returned), then the
   * relying party's checks, then the counter moves forward atomically.
   * Errors: `unauthenticated` `passkey_unknown_credential` and those of
   * `RelyingParty.verifyAuthentication`.
   */
  async #assert(
    credential: unknown,
    ceremony: Ceremony,
    userId: string | undefined,
    beforeUse?: (passkey: PasskeyRecord, userVerified: boolean) => Promise<void>,
  ): Promise<{ passkey: PasskeyRecord; userVerified: boolean }> {
    const rp = this.#rp();
    const ids = rp.assertionIds(credential);
    const passkey = await this.#d.store.findByCredentialId(ids.credentialId);
    if (passkey === undefined) throw ceremonyRefused('passkey_unknown_credential', 'this passkey is not registered here', userId || undefined);
    if (userId !== undefined && passkey.user_id !== userId) throw ceremonyRefused('passkey_unknown_credential', 'this passkey is not registered here', userId || undefined);
    if (ids.userHandle !== undefined && Buffer.from(ids.userHandle, 'base64url').toString('utf8') !== passkey.user_id) {
      throw ceremonyRefused('passkey_unknown_credential', 'this passkey is not registered here', passkey.user_id);
    }
    const verified = await rp.verifyAuthentication(credential, ceremony.challenge, this.#stored(passkey), passkey.user_id);
    // What else refuses the sign-in (the account's state) refuses it before the counter moves: a refusal changes nothing.
    await beforeUse?.(passkey, verified.userVerified);
    const at = Math.floor(this.#now() / 1000);
    // A concurrent sign-in with the same counter value got there first: one of the two is a copy.
    if (!(await this.#d.store.recordUse(passkey.id, passkey.sign_count, { signCount: verified.newSignCount, backedUp: verified.backedUp, at }))) {
      throw ceremonyRefused('passkey_counter_regression', 'this passkey\'s signature counter went backwards; the sign-in is refused', passkey.user_id);
    }
    return { passkey, userVerified: verified.userVerified };
  }

  // ---------------------------------------------------------------- sign-up

  /**
   * `passkey_signup_options`: opens a sign-up ceremony for a new account
   * with an email address and no password. Errors: `failed_precondition`
   * (`passkeys_disabled`, `signup_disabled`), `invalid_argument` (bad email
   * or roles), `already_exists` for a taken address.
   */
  async signupOptions(input: {
    email: string;
    given_name?: string | undefined;
    family_name?: string | undefined;
    nickname?: string | undefined;
    roles?: readonly string[] | undefined;
    app_data?: Record<string, unknown> | undefined;
  }): Promise<CeremonyStart> {
    const rp = this.#rp();
    const o = this.#d.options;
    if (!o.enableSignup) throw new LatchkeyError('failed_precondition', 'signup is disabled for this instance', { reason: 'signup_disabled' });
    const email = normalizeEmail(input.email);
    if (email === undefined || email.length > 320 || !EMAIL_RE.test(email)) throw invalidArgument('invalid email address', 'invalid_email');
    const roles = this.#d.signupRoles(input.roles);
    if ((await this.#d.users.findByEmail(email)) !== undefined) throw new LatchkeyError('already_exists', 'user with given email already exists', { reason: 'user_already_exists' });
    const fields: UserFields = {
      email,
      password: null,
      signup_methods: PASSKEY_LOGIN_METHOD,
      roles,
      given_name: input.given_name ?? null,
      family_name: input.family_name ?? null,
      nickname: input.nickname ?? null,
      app_data: input.app_data ?? null,
    };
    const draft = this.#d.users.draft(fields);
    const { token, challenge } = await this.#open({ kind: 'signup', user_id: draft.id, fields });
    const options = await rp.registrationOptions({ challenge, userHandle: draft.id, userName: email, displayName: input.given_name ?? email, exclude: [] });
    return { ceremony_id: token, options };
  }

  /**
   * `passkey_signup`: verifies the new credential and stores the user with
   * it (one transaction on SQL, with the sign-up's verification mail and
   * event). With email verification on, mails the link and opens no session
   * (as `signup`); else opens the session. When MFA applies, an answer
   * without user verification is refused (`passkey_user_verification_required`)
   * before anything is stored. Errors: those of the ceremony and of
   * `RelyingParty.verifyRegistration`, `already_exists` (address taken
   * meanwhile, or the credential registered).
   */
  async signup(
    input: { ceremony_id: string; credential: unknown; name?: string | undefined; scope?: readonly string[] | undefined },
    ctx: AuthCallContext = {},
    verification?: LinkDelivery,
    record?: SignupRecorder,
  ): Promise<AuthResult & { passkey?: PasskeyRecord }> {
    const rp = this.#rp();
    const o = this.#d.options;
    const ceremony = await this.#take(input.ceremony_id, 'signup');
    const fields = ceremony.fields ?? {};
    const userId = ceremony.user_id ?? '';
    const cred = await rp.verifyRegistration(input.credential, ceremony.challenge);
    const now = Math.floor(this.#now() / 1000);
    const verifyEmail = o.enableEmailVerification;
    const stored: UserFields = { ...fields, email_verified_at: verifyEmail ? null : now };
    const draft = this.#d.users.draft(stored);
    if (!verifyEmail && this.#mfaApplies(draft) && !cred.userVerified) {
      throw ceremonyRefused('passkey_user_verification_required', 'a second factor is required: the authenticator must verify the user (PIN or biometric)');
    }
    const mailed = verifyEmail && verification !== undefined;
    const mail = mailed ? await this.#d.email.prepareSignupVerification({ ...draft, id: userId }, verification) : undefined;
    const events = signupEventSteps(this.#d.database, record);
    let passkey: PasskeyRecord | undefined;
    const within = async (user: UserRecord, transaction: StoreTransaction): Promise<void> => {
      passkey = await this.#d.store.create(
        {
          user_id: user.id,
          credential_id: cred.credentialId,
          public_key: cred.publicKey,
          sign_count: cred.signCount,
          transports: cred.transports,
          backup_eligible: cred.backupEligible,
          backed_up: cred.backedUp,
          aaguid: cred.aaguid,
          name: input.name ?? DEFAULT_NAME,
        },
        transaction,
      );
      await mail?.(user, transaction);
      await events.within?.(user, transaction);
    };
    const user = await this.#d.users.create(stored, { id: userId, within });
    await events.after?.(user);
    if (mailed && mail === undefined) await this.#d.email.sendSignupVerification(user, verification);
    else if (mailed) await verification.done?.(user, { created: true });
    if (verifyEmail) return { response: { message: 'Verification email has been sent. Please check your inbox', user: toPublicUser(user) }, record: user, ...(passkey ? { passkey } : {}) };
    await this.#d.sessions.endPresentedSession(ctx);
    const result = await this.#d.sessions.open(user, {
      roles: fields.roles ?? [],
      scope: input.scope,
      loginMethod: PASSKEY_LOGIN_METHOD,
      message: 'Signed up successfully.',
      amr: this.#amr(cred.userVerified),
    });
    return { ...result, ...(passkey ? { passkey } : {}) };
  }

  // ---------------------------------------------------------------- sign-in

  /**
   * `passkey_login_options`: opens a sign-in ceremony. Without an email, any
   * discoverable credential of this relying party may answer (usernameless,
   * and the browser's autofill: conditional mediation); with one, the
   * credentials of that account are listed (an address with none gets a
   * stable decoy, so the answer says nothing about accounts).
   */
  async loginOptions(input: { email?: string | undefined }): Promise<CeremonyStart> {
    const rp = this.#rp();
    const email = normalizeEmail(input.email);
    let allow: StoredCredential[] | undefined;
    let userId: string | undefined;
    if (email !== undefined) {
      const user = await this.#d.users.findByEmail(email);
      const mine = user === undefined ? [] : await this.#d.store.listByUser(user.id);
      userId = user?.id;
      allow = mine.length > 0 ? mine.map((p) => this.#stored(p)) : [this.#decoy(email)];
    }
    const { token, challenge } = await this.#open({ kind: 'login', user_id: userId, named: email !== undefined });
    return { ceremony_id: token, options: await rp.authenticationOptions({ challenge, allow }) };
  }

  /**
   * `passkey_login`: verifies the answer and opens a session. Errors: those
   * of the ceremony and of {@link #assert}; `unauthenticated` `invalid
   * credentials` for a deactivated account or an unverified address;
   * `permission_denied` (`access_revoked`); when MFA applies, an answer
   * without user verification is refused (`passkey_user_verification_required`).
   */
  async login(input: { ceremony_id: string; credential: unknown; roles?: readonly string[] | undefined; scope?: readonly string[] | undefined }, ctx: AuthCallContext = {}): Promise<AuthResult> {
    this.#rp();
    const ceremony = await this.#take(input.ceremony_id, 'login');
    // A sign-in that named an address answers with a passkey of that account only (of none, for an unknown address).
    const named = ceremony.named === true ? (ceremony.user_id ?? '') : undefined;
    let found: UserRecord | undefined;
    const { userVerified } = await this.#assert(input.credential, ceremony, named, async (passkey, verified) => {
      const user = await this.#d.users.findById(passkey.user_id);
      if (user === undefined || user.deactivated_at !== null) throw invalidCredentials('account_deactivated', passkey.user_id);
      if (user.email !== null && user.email_verified_at === null && this.#d.options.enableEmailVerification) {
        throw invalidCredentials('unverified_identifier', user.id);
      }
      if (user.revoked_timestamp !== null) throw new LatchkeyError('permission_denied', 'user access has been revoked', { reason: 'access_revoked', cause: { internal_reason: 'access_revoked', user_id: user.id } });
      if (this.#mfaApplies(user) && !verified) {
        throw ceremonyRefused('passkey_user_verification_required', 'a second factor is required: the authenticator must verify the user (PIN or biometric)', user.id);
      }
      found = user;
    });
    const user = found;
    if (user === undefined) throw unauthenticated();
    await this.#d.sessions.endPresentedSession(ctx);
    return this.#d.sessions.open(user, { roles: requestedRoles(user, input.roles), scope: input.scope, loginMethod: PASSKEY_LOGIN_METHOD, message: 'Logged in successfully', amr: this.#amr(userVerified) });
  }

  // ---------------------------------------------------------------- second factor

  /**
   * The passkey challenge of a login whose first factor is proven, when the
   * user has a passkey (and passkeys are on): the options, and a ceremony
   * whose token becomes the `mfa` cookie. Undefined otherwise (the other
   * second factors apply).
   */
  async mfaChallenge(user: UserRecord, login: { roles: string[]; scope: readonly string[] | undefined; loginMethod: string }): Promise<{ response: AuthResponse; grant: SessionGrant } | undefined> {
    const rp = this.#d.rp;
    if (rp === undefined) return undefined;
    const mine = await this.#d.store.listByUser(user.id);
    if (mine.length === 0) return undefined;
    const { token, challenge } = await this.#open({
      kind: 'mfa',
      user_id: user.id,
      roles: login.roles,
      scope: login.scope === undefined || login.scope.length === 0 ? null : [...login.scope],
      login_method: login.loginMethod,
      created_ms: this.#now(),
    });
    const options = await rp.authenticationOptions({ challenge, allow: mine.map((p) => this.#stored(p)) });
    return {
      response: { message: 'Proceed to passkey verification', should_show_passkey_screen: true, passkey_options: options },
      grant: { token, maxAgeSeconds: Math.floor(CEREMONY_TIMEOUT_MS / 1000) },
    };
  }

  /**
   * `verify_passkey`: proves the second factor of the login in the `mfa`
   * cookie with one of the user's passkeys, then opens the session (amr: the
   * first factor, `hwk`, `mfa`). Errors: those of the ceremony and of
   * {@link #assert}; `unauthenticated` (`invalid_mfa_session`) when the
   * account was deactivated or revoked, or its sessions ended, since.
   */
  async verifyMfa(input: { credential: unknown }, ctx: AuthCallContext = {}): Promise<AuthResult & { passkey: PasskeyRecord }> {
    this.#rp();
    const ceremony = await this.#take(ctx.mfaCookie, 'mfa');
    const userId = ceremony.user_id ?? '';
    const user = await this.#d.users.findById(userId);
    const stale = new LatchkeyError('unauthenticated', 'invalid or expired MFA session', { reason: 'invalid_mfa_session', cause: { internal_reason: 'invalid_mfa_session', user_id: userId } });
    if (user === undefined || user.deactivated_at !== null || user.revoked_timestamp !== null) throw stale;
    const endedAt = await this.#d.endedAllAt(user.id);
    if (endedAt !== undefined && !((ceremony.created_ms ?? 0) > endedAt)) throw stale;
    const { passkey } = await this.#assert(input.credential, ceremony, user.id);
    const loginMethod = ceremony.login_method ?? 'basic_auth';
    const result = await this.#d.sessions.openFor(
      user.id,
      { loginMethod, roles: ceremony.roles, scope: ceremony.scope ?? undefined, message: 'Passkey verified successfully.', amr: [firstFactorAmr(loginMethod), 'hwk', 'mfa'] },
      ctx,
    );
    return { ...result, passkey };
  }

  // ---------------------------------------------------------------- a signed-in user's passkeys

  async #caller(ctx: AuthCallContext): Promise<{ user: UserRecord; sessionId: string | undefined }> {
    const p = ctx.principal;
    if (p === undefined || p.kind !== 'user') throw unauthenticated();
    const user = await this.#d.users.findById(p.userId);
    if (user === undefined || user.deactivated_at !== null || user.revoked_timestamp !== null) throw unauthenticated();
    return { user, sessionId: p.sessionId };
  }

  /** `passkey_registration_options`: opens a ceremony that adds a passkey to the caller's account, bound to the caller's session. */
  async registrationOptions(ctx: AuthCallContext): Promise<CeremonyStart> {
    const rp = this.#rp();
    const { user, sessionId } = await this.#caller(ctx);
    const mine = await this.#d.store.listByUser(user.id);
    const { token, challenge } = await this.#open({ kind: 'register', user_id: user.id, session_id: sessionId });
    const name = user.email ?? user.phone_number ?? user.id;
    const display = [user.given_name, user.family_name].filter((x) => x !== null && x !== '').join(' ') || name;
    return { ceremony_id: token, options: await rp.registrationOptions({ challenge, userHandle: user.id, userName: name, displayName: display, exclude: mine.map((p) => this.#stored(p)) }) };
  }

  /**
   * `add_passkey`: verifies the new credential of a registration ceremony
   * opened by the same user and session, and stores it. Errors: those of the
   * ceremony and of `RelyingParty.verifyRegistration`; `already_exists`
   * (`passkey_already_registered`).
   */
  async register(input: { ceremony_id: string; credential: unknown; name?: string | undefined }, ctx: AuthCallContext): Promise<PasskeyRecord> {
    const rp = this.#rp();
    const { user, sessionId } = await this.#caller(ctx);
    const ceremony = await this.#take(input.ceremony_id, 'register');
    if (ceremony.user_id !== user.id || ceremony.session_id !== sessionId) throw ceremonyRefused('passkey_challenge_invalid', 'this passkey ceremony belongs to another session', user.id);
    const cred = await rp.verifyRegistration(input.credential, ceremony.challenge, user.id);
    return this.#d.store.create({
      user_id: user.id,
      credential_id: cred.credentialId,
      public_key: cred.publicKey,
      sign_count: cred.signCount,
      transports: cred.transports,
      backup_eligible: cred.backupEligible,
      backed_up: cred.backedUp,
      aaguid: cred.aaguid,
      name: input.name ?? DEFAULT_NAME,
    });
  }

  /** `passkeys`: the caller's passkeys, oldest first. */
  async list(ctx: AuthCallContext): Promise<PasskeyRecord[]> {
    const { user } = await this.#caller(ctx);
    return this.#d.store.listByUser(user.id);
  }

  /** `rename_passkey`. Errors: `not_found` (`passkey_not_found`) for a passkey that is not the caller's. */
  async rename(input: { id: string; name: string }, ctx: AuthCallContext): Promise<PasskeyRecord> {
    const { user } = await this.#caller(ctx);
    const p = await this.#d.store.rename(user.id, input.id, input.name);
    if (p === undefined) throw notFound();
    return p;
  }

  /**
   * `delete_passkey`. Errors: `not_found` (`passkey_not_found`);
   * `failed_precondition` (`last_sign_in_method`) for the only passkey of an
   * account with no other way to sign in (no password, no social or
   * magic-link login).
   */
  async remove(input: { id: string }, ctx: AuthCallContext): Promise<PasskeyRecord> {
    const { user } = await this.#caller(ctx);
    const mine = await this.#d.store.listByUser(user.id);
    const target = mine.find((p) => p.id === input.id);
    if (target === undefined) throw notFound();
    const outcome = await this.#d.store.delete(user.id, input.id, { keepOne: !this.#hasOtherSignIn(user) });
    if (outcome === 'not_found') throw notFound();
    if (outcome === 'last') throw new LatchkeyError('failed_precondition', 'this is the last way to sign in to this account; add another passkey or a password first', { reason: 'last_sign_in_method' });
    return target;
  }

  /** Whether the user can sign in without any passkey: a password, a social provider, or magic links to a verified address. */
  #hasOtherSignIn(user: UserRecord): boolean {
    if (user.password !== null && user.password !== '') return true;
    const others = user.signup_methods.split(',').filter((m) => m !== '' && m !== PASSKEY_LOGIN_METHOD && m !== 'basic_auth' && m !== 'mobile_basic_auth' && m !== 'magic_link_login');
    if (others.length > 0) return true;
    return this.#d.options.enableMagicLinkLogin && user.email !== null && user.email_verified_at !== null;
  }

  // ---------------------------------------------------------------- step-up

  /** `passkey_step_up_options`: opens a ceremony in which the caller proves again, with one of their passkeys, that the session is theirs. */
  async stepUpOptions(ctx: AuthCallContext): Promise<CeremonyStart> {
    const rp = this.#rp();
    const { user, sessionId } = await this.#caller(ctx);
    const mine = await this.#d.store.listByUser(user.id);
    if (mine.length === 0) throw notFound();
    const { token, challenge } = await this.#open({ kind: 'step_up', user_id: user.id, session_id: sessionId });
    return { ceremony_id: token, options: await rp.authenticationOptions({ challenge, allow: mine.map((p) => this.#stored(p)) }) };
  }

  /**
   * `passkey_step_up`: verifies the caller's passkey for a step-up ceremony
   * of the same session; the next sensitive operation of that session within
   * {@link STEP_UP_TTL_SECONDS} may then run (once). Errors: those of the
   * ceremony and of `RelyingParty.verifyAuthentication`.
   */
  async stepUp(input: { ceremony_id: string; credential: unknown }, ctx: AuthCallContext): Promise<PasskeyRecord> {
    this.#rp();
    const { user, sessionId } = await this.#caller(ctx);
    const ceremony = await this.#take(input.ceremony_id, 'step_up');
    if (ceremony.user_id !== user.id || ceremony.session_id !== sessionId || sessionId === undefined) {
      throw ceremonyRefused('passkey_challenge_invalid', 'this passkey ceremony belongs to another session', user.id);
    }
    const { passkey } = await this.#assert(input.credential, ceremony, user.id);
    await this.#d.memory.set(`stepup:${sha256(sessionId)}`, user.id, STEP_UP_TTL_SECONDS);
    return passkey;
  }

  /**
   * Refuses a sensitive operation (deactivating the account, changing its
   * email or phone number) of a user who has a passkey, unless this session
   * proved one within {@link STEP_UP_TTL_SECONDS} (`passkey_step_up`); the
   * proof is used up. `permission_denied` (`step_up_required`). Users
   * without a passkey, or with passkeys off, are not asked.
   */
  async requireStepUp(user: UserRecord, sessionId: string | undefined): Promise<void> {
    if (this.#d.rp === undefined) return;
    if ((await this.#d.store.listByUser(user.id)).length === 0) return;
    const refused = new LatchkeyError('permission_denied', 'confirm it is you with one of your passkeys first (passkey_step_up)', { reason: 'step_up_required' });
    if (sessionId === undefined) throw refused;
    const key = `stepup:${sha256(sessionId)}`;
    if ((await this.#d.memory.get(key)) !== user.id || (await this.#d.memory.del(key)) !== 1) throw refused;
  }

  // ---------------------------------------------------------------- administration

  /** The passkeys of any user (admin). */
  listFor(userId: string): Promise<PasskeyRecord[]> {
    return this.#d.store.listByUser(userId);
  }

  /** Revokes a user's passkey (admin; the last one too: the admin may also revoke access). `not_found` (`passkey_not_found`). */
  async revoke(userId: string, id: string): Promise<PasskeyRecord> {
    const target = (await this.#d.store.listByUser(userId)).find((p) => p.id === id);
    if (target === undefined || (await this.#d.store.delete(userId, id)) !== 'deleted') throw notFound();
    return target;
  }

  /** Removes every passkey of a user (deactivation, deletion), inside `transaction` when given. */
  deleteUserData(userId: string, transaction?: StoreTransaction): Promise<void> {
    return this.#d.store.deleteUserData(userId, transaction);
  }
}

const notFound = (): LatchkeyError => new LatchkeyError('not_found', 'passkey not found', { reason: 'passkey_not_found' });
