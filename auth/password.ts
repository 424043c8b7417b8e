/**
 * Password hashing and policy. bcrypt lives here and nowhere else
 * (conventions §10), so the hasher stays swappable behind this module.
 *
 * Length rule: bcrypt ignores every byte after the 72nd. Instead of silently
 * truncating (two passwords sharing a 72-byte prefix would be equal) we
 * **refuse** passwords longer than 72 UTF-8 bytes, at sign-up, at password
 * change, and at login (where a longer password can never match and goes
 * through the same constant-time failure path as a wrong one). Refusing
 * keeps stored hashes plain bcrypt, so hashes from a v1 database keep working.
 */
import { hash as bcryptHash, verify as bcryptVerify } from '@node-rs/bcrypt';
import { LatchkeyError } from '../engine/errors.ts';
import { COMMON_PASSWORDS } from './common_passwords.ts';

/** bcrypt reads at most this many bytes of a password. */
export const BCRYPT_MAX_BYTES = 72;
/** Minimum length (characters) with `--enable-strong-password` (ASVS v5 6.2.1). */
export const STRONG_MIN_LENGTH = 8;
/** Minimum length (characters) without it. */
export const WEAK_MIN_LENGTH = 6;

export interface PasswordPolicyOptions {
  /** ASVS-style strength: at least 8 characters and not a common password. No composition rules (ASVS 6.2.5). */
  strong: boolean;
}

/**
 * Checks a new password against the policy; throws `invalid_argument`
 * (reason `invalid_password`) with a precise message otherwise.
 */
export function assertPasswordAcceptable(password: string, options: PasswordPolicyOptions, context: { email?: string | null } = {}): void {
  const fail = (message: string): never => {
    throw new LatchkeyError('invalid_argument', message, { reason: 'invalid_password' });
  };
  if (typeof password !== 'string' || password.length === 0) fail('password is required');
  const chars = [...password].length;
  const min = options.strong ? STRONG_MIN_LENGTH : WEAK_MIN_LENGTH;
  if (chars < min) fail(`password must be at least ${min} characters`);
  if (Buffer.byteLength(password, 'utf8') > BCRYPT_MAX_BYTES) fail(`password must be at most ${BCRYPT_MAX_BYTES} bytes`);
  if (options.strong) {
    const lower = password.toLowerCase();
    if (COMMON_PASSWORDS.has(lower)) fail('password is too common');
    const local = context.email?.split('@')[0]?.toLowerCase();
    if (local !== undefined && local.length >= 3 && lower === local) fail('password must not be the email address');
  }
}

/** Options of {@link PasswordHasher}. */
export interface PasswordHasherOptions {
  /** bcrypt cost (log2 rounds). Default 10; at least 4 (only tests go below 10). */
  cost?: number;
}

/**
 * bcrypt on the libuv thread pool (never on the event loop), with a dummy
 * hash of the same cost so that a login for an unknown account costs the same
 * as one with a wrong password (ASVS v5 6.3.8).
 */
export class PasswordHasher {
  readonly cost: number;
  #dummy: Promise<string> | undefined;

  constructor(options: PasswordHasherOptions = {}) {
    const cost = options.cost ?? 10;
    if (!Number.isInteger(cost) || cost < 4 || cost > 15) {
      throw new LatchkeyError('invalid_argument', 'bcrypt cost must be an integer from 4 to 15', { reason: 'invalid_option' });
    }
    this.cost = cost;
  }

  /** Hashes an (already policy-checked) password. */
  hash(password: string): Promise<string> {
    return bcryptHash(password, { cost: this.cost });
  }

  /**
   * Compares `password` with `hash`. With no hash (unknown account, no
   * password set) or an over-long password it still spends one full bcrypt
   * compare against a dummy hash and answers false.
   */
  async verify(password: string, hash: string | null | undefined): Promise<boolean> {
    const tooLong = Buffer.byteLength(password, 'utf8') > BCRYPT_MAX_BYTES;
    if (hash === null || hash === undefined || hash === '' || tooLong) {
      await bcryptVerify(password, await this.#dummyHash());
      return false;
    }
    return bcryptVerify(password, hash);
  }

  /** Computes the dummy hash ahead of the first login. */
  warmUp(): Promise<void> {
    return this.#dummyHash().then(() => undefined);
  }

  #dummyHash(): Promise<string> {
    this.#dummy ??= bcryptHash(`dummy-${Math.random()}`, { cost: this.cost });
    return this.#dummy;
  }
}
