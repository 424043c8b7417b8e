/**
 * The second factor of a login: email OTP, SMS OTP and TOTP (RFC 6238).
 *
 * A password login that needs MFA gets no tokens; it gets an MFA challenge
 * session instead (the `mfa` cookie: 256 random bits, stored only hashed in
 * the memory store for 3 minutes, bound to the user, the requested roles and
 * scope, and the one method it was issued for). `verify_otp` proves the
 * second factor against that session and only then opens the real session.
 *
 * - Email/SMS OTP: 6 digits from `crypto.randomInt`, stored as
 *   HMAC-SHA256(key, user id ":" code) with a 1-minute expiry (authorizer
 *   contract §1.1), compared in constant time, deleted when used (one use,
 *   also under concurrency). `resend_otp` replaces the code (the old one
 *   stops working) and rotates the challenge session.
 * - TOTP (otplib, confined to this module): the first challenge of a user
 *   without a confirmed enrolment returns the secret, its otpauth URI, that
 *   URI as a QR code image (qrcode-generator, also confined here) and 10
 *   recovery codes (shown once, stored as digests); the secret is stored
 *   AES-256-GCM encrypted. A code is accepted once (the last accepted time
 *   step is recorded); ±1 step of clock drift is tolerated. A recovery code
 *   works once instead of a TOTP code.
 * - Lockout: 5 failed codes per user within 15 minutes refuse further
 *   attempts until the window ends (`resource_exhausted`), counted in the
 *   memory store (shared through Redis when configured) before comparing.
 *
 * The keys of the digests and of the secret encryption are derived with HKDF
 * from the configured MFA secret (the server's client secret).
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import type * as Otplib from 'otplib';
import type QrCode from 'qrcode-generator';
import { LatchkeyError } from '../engine/errors.ts';
import { reserveAttempt } from './attempts.ts';
import type { MemoryStore } from './memory_store.ts';
import type { MfaStore } from './mfa_store.ts';
import type { SessionManager } from './sessions.ts';
import type { ResolvedAuthOptions } from './options.ts';
import type { AuthResponse, SessionGrant } from './public_user.ts';
import { normalizeEmail, normalizePhone, type UserRecord, type UserStore } from './user_store_types.ts';

/** Name of the MFA challenge cookie (spec: Cookies). */
export const MFA_COOKIE = 'mfa';
/** Lifetime of an email or SMS code, seconds (authorizer contract: 1 minute). */
export const OTP_TTL_SECONDS = 60;
/** Lifetime of an MFA challenge session, seconds (authorizer contract: 3 minutes). */
export const MFA_SESSION_TTL_SECONDS = 180;
/** Failed codes allowed per user and window, and the window in seconds (authorizer contract: 5 / 15 min). */
export const MAX_OTP_ATTEMPTS = 5;
export const OTP_ATTEMPT_WINDOW_SECONDS = 900;
/** Recovery codes handed out at TOTP enrolment. */
export const RECOVERY_CODE_COUNT = 10;

/** The second factors. */
export type MfaMethod = 'email_otp' | 'sms_otp' | 'totp';

/** How codes reach the user; each is given by the composition root when its channel is configured. */
export interface OtpDelivery {
  email?: ((user: UserRecord, code: string) => Promise<void>) | undefined;
  /** `user`: whom the code is for (its saved language picks the text's). */
  sms?: ((phoneNumber: string, code: string, user?: UserRecord) => Promise<void>) | undefined;
}

/** What a challenge session remembers. */
interface MfaSession {
  user_id: string;
  method: MfaMethod;
  roles: string[];
  scope: string[] | null;
  login_method: string;
  /** When the login proved its first factor, milliseconds since the epoch (kept by resend_otp). */
  created_ms: number;
  /** Set when the code verifies the user's phone number (sign-up or login under phone verification), not a second factor. */
  purpose?: 'verify_phone';
}

/** The outcome of a proven second factor. */
export interface MfaProof {
  user: UserRecord;
  method: MfaMethod;
  roles: string[];
  scope: string[] | undefined;
  loginMethod: string;
  /** The TOTP enrolment was confirmed by this code. */
  enrolled: boolean;
  /** A recovery code was used (and is gone). */
  recoveryCodeUsed: boolean;
  /** The code verified the phone number (see {@link MfaFlows.phoneVerification}). */
  verifiedPhone: boolean;
}

const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('base64url');

/**
 * HMAC-SHA256 digest (hex) of a one-time code for a user. Exported for the
 * digest property test.
 */
export function otpDigest(key: Buffer, userId: string, code: string): string {
  return createHmac('sha256', key).update(`${userId}:${code}`, 'utf8').digest('hex');
}

/** Constant-time comparison of two hex digests (false for a malformed one). */
export function digestsEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === 32 && y.length === 32 && timingSafeEqual(x, y);
}

const invalidSession = (userId?: string): LatchkeyError =>
  new LatchkeyError('unauthenticated', 'invalid or expired MFA session', { reason: 'invalid_mfa_session', cause: { internal_reason: 'invalid_mfa_session', user_id: userId } });
const invalidOtp = (userId: string, internal = 'invalid_otp'): LatchkeyError =>
  new LatchkeyError('unauthenticated', 'invalid otp', { reason: 'invalid_otp', cause: { internal_reason: internal, user_id: userId } });

const totpNotEnrolled = (): LatchkeyError => new LatchkeyError('failed_precondition', 'no authenticator app is enrolled on this account', { reason: 'totp_not_enrolled' });

/** Recovery codes: 10 characters of an unambiguous alphabet, shown as `xxxxx-xxxxx`. */
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
function newRecoveryCode(): string {
  let s = '';
  for (let i = 0; i < 10; i++) s += RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)];
  return `${s.slice(0, 5)}-${s.slice(5)}`;
}
const normalizeRecoveryCode = (code: string): string => code.toLowerCase().replace(/[\s-]/g, '');

/**
 * otplib and qrcode-generator, loaded by the first TOTP enrolment or TOTP code: a server whose users
 * never use an authenticator app never holds them (docs/performance.md, "Server footprint").
 */
let totpLibraries: Promise<{ otp: typeof Otplib; qrcode: typeof QrCode }> | undefined;
const totp = (): Promise<{ otp: typeof Otplib; qrcode: typeof QrCode }> =>
  (totpLibraries ??= Promise.all([import('otplib'), import('qrcode-generator')]).then(([otp, qr]) => ({ otp, qrcode: qr.default })));

/** The QR code of an otpauth URI as a `data:image/gif;base64` URL (error correction M, 4-pixel modules, quiet zone). */
function scannerImage(qrcode: typeof QrCode, uri: string): string {
  const qr = qrcode(0, 'M');
  qr.addData(uri);
  qr.make();
  return qr.createDataURL(4, 16);
}

export interface MfaFlowsDeps {
  store: MfaStore;
  memory: MemoryStore;
  users: UserStore;
  options: ResolvedAuthOptions;
  delivery: OtpDelivery;
  nowSeconds: () => number;
  /** When every session of a user was last ended at once (see `SessionManager.endedAllAt`). */
  sessions: Pick<SessionManager, 'endedAllAt'>;
}

/** The challenge, verification and resend of a second factor. */
export class MfaFlows {
  readonly #d: MfaFlowsDeps;
  readonly #digestKey: Buffer;
  readonly #secretKey: Buffer;

  constructor(deps: MfaFlowsDeps) {
    this.#d = deps;
    const ikm = Buffer.from(deps.options.mfaSecret, 'utf8');
    this.#digestKey = Buffer.from(hkdfSync('sha256', ikm, 'latchkey', 'otp digest', 32));
    this.#secretKey = Buffer.from(hkdfSync('sha256', ikm, 'latchkey', 'totp secret', 32));
  }

  /**
   * The method a login of `user` must prove, or undefined when MFA does not
   * apply to it (neither enforced nor enabled by the user, or MFA is off for
   * the instance). Fails closed (priority 1 over availability): when MFA
   * applies but no enabled channel can reach the user (say a phone-only user
   * where only email codes are on, or email codes without mail), it throws
   * `failed_precondition` `mfa_method_unavailable` rather than let the first
   * factor alone log in. TOTP reaches everyone (enrolment happens at the
   * first challenge). Pinned by test/features/mfa/mfa_unavailable.test.ts.
   */
  methodFor(user: UserRecord): MfaMethod | undefined {
    const o = this.#d.options;
    if (!(o.enforceMfa || (o.enableMfa && user.is_multi_factor_auth_enabled === true))) return undefined;
    if (o.enableTotpLogin) return 'totp';
    if (o.enableEmailOtp && user.email !== null && this.#d.delivery.email) return 'email_otp';
    if (o.enableSmsOtp && user.phone_number !== null && this.#d.delivery.sms) return 'sms_otp';
    throw new LatchkeyError('failed_precondition', 'a second factor is required for this account but none of the enabled methods can reach it; contact an administrator', {
      reason: 'mfa_method_unavailable',
      cause: { internal_reason: 'mfa_method_unavailable', user_id: user.id },
    });
  }

  /**
   * Starts the challenge of a login whose password was proven: sends the
   * code (email/SMS) or prepares the TOTP enrolment, and opens the challenge
   * session. Throws `unavailable` (reason `sms_not_sent`) when the code
   * cannot be sent.
   */
  async challenge(user: UserRecord, method: MfaMethod, login: { roles: string[]; scope: readonly string[] | undefined; loginMethod: string }): Promise<{ response: AuthResponse; grant: SessionGrant }> {
    let response: AuthResponse;
    if (method === 'totp') {
      response = { message: 'Proceed to totp verification screen', should_show_totp_screen: true, ...(await this.#enrolment(user)) };
    } else {
      await this.#sendCode(user, method);
      response =
        method === 'email_otp'
          ? { message: 'Please check email inbox for the OTP', should_show_email_otp_screen: true }
          : { message: 'Please check text message for the OTP', should_show_mobile_otp_screen: true };
    }
    const session: MfaSession = {
      user_id: user.id,
      method,
      roles: login.roles,
      scope: login.scope === undefined || login.scope.length === 0 ? null : [...login.scope],
      login_method: login.loginMethod,
      created_ms: this.#d.options.now(),
    };
    return { response, grant: await this.#openSession(session) };
  }

  /** Texts a password-reset code to the user's phone (`forgot_password` by phone number). */
  async sendResetCode(user: UserRecord): Promise<void> {
    if (user.phone_number === null) return;
    await this.#sendCode(user, 'sms_otp', 'reset:');
  }

  /**
   * Proves a texted password-reset code of `user` and uses it up, under the
   * same attempt budget as second factors: `unauthenticated` (`invalid_otp`,
   * or `expired_token` for an expired code), `resource_exhausted`
   * (`too_many_attempts`) after 5 failures in 15 minutes.
   */
  async checkResetCode(user: UserRecord, code: string): Promise<void> {
    const attemptsKey = `otp_attempts:${user.id}`;
    await reserveAttempt(this.#d.memory, attemptsKey, { max: MAX_OTP_ATTEMPTS, windowSeconds: OTP_ATTEMPT_WINDOW_SECONDS, message: 'too many otp attempts, try again later', userId: user.id });
    await this.#checkCode(user, code, 'reset:');
    await this.#d.memory.del(attemptsKey);
  }

  /** True when texted codes can be sent (the SMS vendor is configured). */
  canSendSms(): boolean {
    return this.#d.delivery.sms !== undefined;
  }

  /**
   * Starts the verification of a user's phone number by a texted code
   * (`--enable-phone-verification`): at a phone sign-up, and at a login
   * whose password was proven for a number not verified yet, so that an
   * unverified account is never shut out. `verify_otp` with the code (and
   * the `mfa` cookie) marks the number verified; `resend_otp` sends another.
   * Throws `failed_precondition` (`sms_unavailable`) without the SMS vendor,
   * `unavailable` (`sms_not_sent`) when the vendor fails.
   */
  async phoneVerification(user: UserRecord, login: { roles: string[]; scope: readonly string[] | undefined; loginMethod: string }): Promise<{ response: AuthResponse; grant: SessionGrant }> {
    if (user.phone_number === null || !this.canSendSms()) {
      throw new LatchkeyError('failed_precondition', 'phone verification needs the SMS vendor, which is not configured', { reason: 'sms_unavailable' });
    }
    await this.#sendCode(user, 'sms_otp');
    const session: MfaSession = {
      user_id: user.id,
      method: 'sms_otp',
      roles: login.roles,
      scope: login.scope === undefined || login.scope.length === 0 ? null : [...login.scope],
      login_method: login.loginMethod,
      created_ms: this.#d.options.now(),
      purpose: 'verify_phone',
    };
    return { response: { message: 'Please check text message for the OTP', should_show_mobile_otp_screen: true }, grant: await this.#openSession(session) };
  }

  async #openSession(session: MfaSession): Promise<SessionGrant> {
    const token = randomBytes(32).toString('base64url');
    await this.#d.memory.set(`mfa:${sha256(token)}`, JSON.stringify(session), MFA_SESSION_TTL_SECONDS);
    return { token, maxAgeSeconds: MFA_SESSION_TTL_SECONDS };
  }

  /** The live challenge session of a cookie and its user, checked against the identifier the caller names. */
  async #session(token: string | undefined, input: { email?: string | undefined; phone_number?: string | undefined }): Promise<{ key: string; session: MfaSession; user: UserRecord }> {
    const email = normalizeEmail(input.email);
    const phone = normalizePhone(input.phone_number);
    if (email === undefined && phone === undefined) throw new LatchkeyError('invalid_argument', 'email or phone_number is required', { reason: 'missing_identifier' });
    if (token === undefined || token.length === 0 || token.length > 256) throw invalidSession();
    const key = `mfa:${sha256(token)}`;
    const raw = await this.#d.memory.get(key);
    if (raw === undefined) throw invalidSession();
    const session = JSON.parse(raw) as MfaSession;
    const user = await this.#d.users.findById(session.user_id);
    // A challenge outlives neither deactivation nor revoked access (spec: a revoked user cannot log in),
    // nor the end of every session of its user (password reset, revocation): its first factor may be stale.
    if (user === undefined || user.deactivated_at !== null || user.revoked_timestamp !== null) throw invalidSession(session.user_id);
    const endedAt = await this.#d.sessions.endedAllAt(user.id);
    if (endedAt !== undefined && !(session.created_ms > endedAt)) throw invalidSession(user.id);
    // #711: the session proves a password for one user only.
    if ((email !== undefined && email !== user.email) || (phone !== undefined && phone !== user.phone_number)) throw invalidSession(user.id);
    return { key, session, user };
  }

  /**
   * Sends a code. `purpose` is part of what is digested, so that a code
   * texted for a password reset is never taken as a login's second factor,
   * nor the reverse.
   */
  async #sendCode(user: UserRecord, method: 'email_otp' | 'sms_otp', purpose: '' | 'reset:' = ''): Promise<void> {
    const code = randomInt(0, 1_000_000).toString().padStart(6, '0');
    await this.#d.store.putOtp({
      userId: user.id,
      email: user.email,
      phoneNumber: user.phone_number,
      digest: otpDigest(this.#digestKey, user.id, `${purpose}${code}`),
      ttlSeconds: OTP_TTL_SECONDS,
    });
    const { email, sms } = this.#d.delivery;
    if (method === 'email_otp' && email && user.email !== null) await email(user, code);
    else if (method === 'sms_otp' && sms && user.phone_number !== null) await sms(user.phone_number, code, user);
    else throw new LatchkeyError('failed_precondition', 'this second factor is not available', { reason: 'mfa_method_unavailable' });
  }

  /** The TOTP enrolment data for a user without a confirmed enrolment; nothing for an enrolled one. */
  async #enrolment(user: UserRecord): Promise<Partial<AuthResponse>> {
    const existing = await this.#d.store.getAuthenticator(user.id, 'totp');
    if (existing?.verified_at !== null && existing !== undefined) return {};
    const { otp, qrcode } = await totp();
    const secret = otp.generateSecret();
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    const digests = codes.map((c) => otpDigest(this.#digestKey, user.id, `recovery:${normalizeRecoveryCode(c)}`));
    const stored = await this.#d.store.putPendingAuthenticator({ userId: user.id, method: 'totp', secret: this.#encrypt(secret), recoveryCodes: JSON.stringify(digests) });
    // A concurrent login recorded (or confirmed) an enrolment in between: this one asks for a code only.
    if (!stored) return {};
    const label = user.email ?? user.phone_number ?? user.id;
    const uri = otp.generateURI({ issuer: this.#d.options.totpIssuer, label, secret });
    return { authenticator_secret: secret, authenticator_uri: uri, authenticator_scanner_image: scannerImage(qrcode, uri), authenticator_recovery_codes: codes };
  }

  #encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#secretKey, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `v1.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
  }

  #decrypt(stored: string): string {
    const raw = Buffer.from(stored.slice(3), 'base64url');
    if (!stored.startsWith('v1.') || raw.length < 29) throw new LatchkeyError('data_loss', 'a stored TOTP secret is unreadable', { reason: 'totp_secret_unreadable' });
    const decipher = createDecipheriv('aes-256-gcm', this.#secretKey, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    try {
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    } catch (err) {
      throw new LatchkeyError('data_loss', 'a stored TOTP secret is unreadable (was the MFA secret changed?)', { reason: 'totp_secret_unreadable', cause: err });
    }
  }

  /**
   * `verify_otp`: proves the second factor of the challenge session
   * `token`. Errors: `invalid_argument` (`missing_identifier`,
   * `mfa_method_mismatch` when `is_totp` does not match the challenge);
   * `unauthenticated` (`invalid_mfa_session`: no, expired or foreign
   * challenge; `invalid_otp`: wrong, used or unknown code, or a TOTP code
   * accepted before; `expired_token`: an expired email/SMS code, which is
   * removed); `resource_exhausted`
   * (`too_many_attempts`) after 5 failures in 15 minutes. The challenge
   * session ends on success.
   */
  async verify(input: { email?: string | undefined; phone_number?: string | undefined; otp: string; is_totp?: boolean | undefined }, token: string | undefined): Promise<MfaProof> {
    const d = this.#d;
    const { key, session, user } = await this.#session(token, input);
    if ((input.is_totp === true) !== (session.method === 'totp')) {
      throw new LatchkeyError('invalid_argument', session.method === 'totp' ? 'this login needs a TOTP code (is_totp: true)' : 'this login needs the code that was sent (is_totp: false)', {
        reason: 'mfa_method_mismatch',
      });
    }
    const attemptsKey = `otp_attempts:${user.id}`;
    await reserveAttempt(d.memory, attemptsKey, { max: MAX_OTP_ATTEMPTS, windowSeconds: OTP_ATTEMPT_WINDOW_SECONDS, message: 'too many otp attempts, try again later', userId: user.id });
    let enrolled = false;
    let recoveryCodeUsed = false;
    if (session.method === 'totp') ({ enrolled, recoveryCodeUsed } = await this.#checkTotp(user, input.otp));
    else await this.#checkCode(user, input.otp);
    await d.memory.del(attemptsKey);
    // Of two concurrent verifications of one challenge, one opens a session.
    if ((await d.memory.del(key)) !== 1) throw invalidSession(user.id);
    return {
      user,
      method: session.method,
      roles: session.roles,
      scope: session.scope ?? undefined,
      loginMethod: session.login_method,
      enrolled,
      recoveryCodeUsed,
      verifiedPhone: session.purpose === 'verify_phone',
    };
  }

  async #checkCode(user: UserRecord, code: string, purpose: '' | 'reset:' = ''): Promise<void> {
    const row = await this.#d.store.getOtp(user.id);
    if (row === undefined || !digestsEqual(otpDigest(this.#digestKey, user.id, `${purpose}${code}`), row.otp)) throw invalidOtp(user.id);
    if (row.expires_at <= this.#d.nowSeconds()) {
      // Security matrix A4: an expired code answers expired_token and its row is gone.
      await this.#d.store.deleteOtp(row.id);
      throw new LatchkeyError('unauthenticated', 'otp expired', { reason: 'expired_token', cause: { internal_reason: 'otp_expired', user_id: user.id } });
    }
    if (!(await this.#d.store.deleteOtp(row.id))) throw invalidOtp(user.id, 'otp_used_concurrently');
  }

  async #checkTotp(user: UserRecord, code: string): Promise<{ enrolled: boolean; recoveryCodeUsed: boolean }> {
    const store = this.#d.store;
    const auth = await store.getAuthenticator(user.id, 'totp');
    if (auth === undefined) throw invalidOtp(user.id, 'no_authenticator');
    if (/^[0-9]{6}$/.test(code)) {
      const { otp } = await totp();
      const result = otp.verifySync({ secret: this.#decrypt(auth.secret), token: code, epoch: this.#d.nowSeconds(), epochTolerance: 30 });
      // The TOTP strategy reports the matched time step (RFC 6238 T), recorded for single use.
      const step = result.valid ? (result as { timeStep?: number }).timeStep : undefined;
      if (step === undefined) throw invalidOtp(user.id);
      // Security matrix A4: a code (or an older one) presented again is refused as invalid_otp; the audit row says why.
      if (auth.last_time_step !== null && step <= auth.last_time_step) throw invalidOtp(user.id, 'totp_replayed');
      if (!(await store.acceptTimeStep(auth.id, step))) throw invalidOtp(user.id, 'totp_replayed');
      return { enrolled: auth.verified_at === null, recoveryCodeUsed: false };
    }
    // A recovery code stands in for a TOTP code of a confirmed enrolment only.
    if (auth.verified_at === null) throw invalidOtp(user.id, 'recovery_before_enrolment');
    const digests = JSON.parse(auth.recovery_codes) as string[];
    const wanted = otpDigest(this.#digestKey, user.id, `recovery:${normalizeRecoveryCode(code)}`);
    let index = -1;
    digests.forEach((dg, i) => {
      if (digestsEqual(wanted, dg)) index = i;
    });
    if (index < 0) throw invalidOtp(user.id);
    const rest = digests.filter((_, i) => i !== index);
    if (!(await store.replaceRecoveryCodes(auth.id, auth.recovery_codes, JSON.stringify(rest)))) throw invalidOtp(user.id, 'recovery_used_concurrently');
    return { enrolled: false, recoveryCodeUsed: true };
  }

  /**
   * `resend_otp`: a new email or SMS code for the challenge session `token`
   * (the old code stops working) and a new challenge session (the old
   * cookie stops working). Errors: those of {@link verify} for the session,
   * `failed_precondition` (`otp_not_resendable`) for a TOTP challenge,
   * `resource_exhausted` (`too_many_attempts`) after 5 resends in 15 minutes.
   */
  async resend(input: { email?: string | undefined; phone_number?: string | undefined }, token: string | undefined): Promise<{ user: UserRecord; method: MfaMethod; grant: SessionGrant }> {
    const { key, session, user } = await this.#session(token, input);
    if (session.method === 'totp') throw new LatchkeyError('failed_precondition', 'a TOTP code is not sent; use the authenticator app', { reason: 'otp_not_resendable' });
    await reserveAttempt(this.#d.memory, `otp_resends:${user.id}`, { max: MAX_OTP_ATTEMPTS, windowSeconds: OTP_ATTEMPT_WINDOW_SECONDS, message: 'too many otp requests, try again later', userId: user.id });
    if ((await this.#d.memory.del(key)) !== 1) throw invalidSession(user.id);
    await this.#sendCode(user, session.method);
    return { user, method: session.method, grant: await this.#openSession(session) };
  }

  // ---------------------------------------------------------------- the account's own settings

  /** Whether the user has a TOTP enrolment, and whether it is confirmed. */
  async totpStatus(userId: string): Promise<'none' | 'pending' | 'confirmed'> {
    const auth = await this.#d.store.getAuthenticator(userId, 'totp');
    return auth === undefined ? 'none' : auth.verified_at === null ? 'pending' : 'confirmed';
  }

  /**
   * Proves a TOTP or recovery code of the user's confirmed enrolment outside
   * a login (re-authentication of an account without a password), under the
   * login's attempt budget: `unauthenticated` (`invalid_otp`),
   * `resource_exhausted` (`too_many_attempts`). A recovery code is used up.
   */
  async proveCode(user: UserRecord, code: string): Promise<void> {
    if ((await this.totpStatus(user.id)) !== 'confirmed') throw invalidOtp(user.id, 'no_authenticator');
    const attemptsKey = `otp_attempts:${user.id}`;
    await reserveAttempt(this.#d.memory, attemptsKey, { max: MAX_OTP_ATTEMPTS, windowSeconds: OTP_ATTEMPT_WINDOW_SECONDS, message: 'too many otp attempts, try again later', userId: user.id });
    await this.#checkTotp(user, code);
    await this.#d.memory.del(attemptsKey);
  }

  /**
   * `reset_totp`: removes the user's TOTP enrolment (confirmed or pending)
   * and its recovery codes; every code of the old key stops working at once,
   * and the next TOTP challenge enrols a new key. `failed_precondition`
   * (`totp_not_enrolled`) without an enrolment.
   */
  async resetTotp(userId: string): Promise<void> {
    const auth = await this.#d.store.getAuthenticator(userId, 'totp');
    if (auth === undefined || !(await this.#d.store.deleteAuthenticator(auth.id))) throw totpNotEnrolled();
  }

  /**
   * `regenerate_recovery_codes`: replaces the recovery codes of the user's
   * confirmed enrolment with {@link RECOVERY_CODE_COUNT} new ones (returned
   * once; the old ones stop working at once). `failed_precondition`
   * (`totp_not_enrolled`) without a confirmed enrolment; `aborted`
   * (`concurrent_change`) when a recovery code was used at the same moment.
   */
  async regenerateRecoveryCodes(userId: string): Promise<string[]> {
    const auth = await this.#d.store.getAuthenticator(userId, 'totp');
    if (auth === undefined || auth.verified_at === null) throw totpNotEnrolled();
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    const digests = codes.map((c) => otpDigest(this.#digestKey, userId, `recovery:${normalizeRecoveryCode(c)}`));
    if (!(await this.#d.store.replaceRecoveryCodes(auth.id, auth.recovery_codes, JSON.stringify(digests)))) {
      throw new LatchkeyError('aborted', 'the recovery codes changed meanwhile; try again', { reason: 'concurrent_change' });
    }
    return codes;
  }

  /** Removes the user's pending codes and enrolments (deactivation, deletion), inside `transaction` when given. */
  deleteUserData(userId: string, transaction?: Parameters<MfaStore['deleteUserData']>[1]): Promise<void> {
    return this.#d.store.deleteUserData(userId, transaction);
  }
}
