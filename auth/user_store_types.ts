/**
 * The user store's contract, shared by its SQL (auth/user_store.ts) and
 * DynamoDB (auth/dynamo_auth_stores.ts) implementations and by the flows that
 * use it: the user record, the {@link UserStore} interface, and how email
 * addresses and phone numbers are normalised before they are stored,
 * claimed or looked up.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { StoreTransaction } from './main_database.ts';

/** The message the spec gives for a taken email or phone number (Errors, rule 1). */
export const USER_EXISTS_MESSAGE = 'user with given email already exists';

/** A user row as stored (times are unix seconds). */
export interface UserRecord {
  id: string;
  email: string | null;
  email_verified_at: number | null;
  password: string | null;
  signup_methods: string;
  given_name: string | null;
  family_name: string | null;
  middle_name: string | null;
  nickname: string | null;
  gender: string | null;
  birthdate: string | null;
  phone_number: string | null;
  phone_number_verified_at: number | null;
  picture: string | null;
  roles: string[];
  revoked_timestamp: number | null;
  is_multi_factor_auth_enabled: boolean | null;
  app_data: Record<string, unknown> | null;
  deactivated_at: number | null;
  /** The preferred language, a BCP 47 tag (OIDC Core §5.1 `locale`), or null for none saved. */
  locale: string | null;
  created_at: number;
  updated_at: number;
}

/** Fields that may be written on create or update. */
export type UserFields = Partial<Omit<UserRecord, 'id' | 'created_at' | 'updated_at'>>;

/**
 * Characters that do not show: format controls (General Category Cf: zero-width
 * space, joiners, word joiner, soft hyphen, bidi controls, BOM, tag
 * characters) and the other default-ignorable code points (variation
 * selectors, combining grapheme joiner, Hangul fillers). Two addresses that
 * differ only by them render identically in the dashboard, the audit log and
 * mails. One use shows and is kept ({@link isVisibleJoin}): a zero-width
 * joiner inside an emoji sequence (`🧑‍💻`, one glyph where `🧑💻` is two).
 * A variation selector is not kept even after a pictograph: `❤️` and `❤`
 * differ only in presentation.
 */
const INVISIBLE = /[\p{Cf}\p{Default_Ignorable_Code_Point}]/u;
const PICTOGRAPH = /\p{Extended_Pictographic}/u;
/** What may stand before the joiner of an emoji ZWJ sequence: a pictograph or a skin tone. */
const JOINS_AFTER = /[\p{Extended_Pictographic}\p{Emoji_Modifier}]/u;

/** Whether the invisible character at `i` of `cps` is one that shows (see {@link INVISIBLE}). */
function isVisibleJoin(cps: readonly string[], i: number): boolean {
  const c = cps[i]!;
  const before = cps[i - 1];
  return before !== undefined && c === '\u200D' && JOINS_AFTER.test(before) && cps[i + 1] !== undefined && PICTOGRAPH.test(cps[i + 1]!);
}

/** `s` without its invisible characters (those that show kept). */
function withoutInvisible(s: string): string {
  if (!INVISIBLE.test(s)) return s;
  const cps = [...s];
  return cps.filter((c, i) => !INVISIBLE.test(c) || isVisibleJoin(cps, i)).join('');
}

/** The refusal of an email address that holds an invisible character. */
const invisibleInEmail = (): LatchkeyError => new LatchkeyError('invalid_argument', 'invalid email address', { reason: 'invalid_email' });

/**
 * The comparison key of an email address, total over any string: trimmed,
 * stripped of invisible characters ({@link INVISIBLE}), NFKC-normalised and
 * lower-cased, repeated until stable (lower-casing can leave a string that
 * NFKC changes again, and NFKC can leave a space at either end).
 * Undefined for empty input.
 *
 * NFKC + lower-case rather than the PRECIS UsernameCaseMapped profile
 * (RFC 8265, on the RFC 8264 framework): PRECIS's width mapping is a subset of
 * NFKC's compatibility mapping (fullwidth and halfwidth forms, but not
 * ligatures, superscripts or circled letters, which look alike as well), and
 * its disallowed-code-point tables depend on a Unicode derived-property
 * table that the runtime does not carry, so addresses accepted today (RFC 6531
 * local parts) would start to be refused depending on the table's version.
 * NFKC and case mapping come with the runtime, and the invisible characters
 * PRECIS would disallow are refused here as well ({@link normalizeEmail}).
 * Lower-casing is Unicode's `toLowerCase`, as in RFC 8265's case mapping rule
 * and in the addresses stored so far.
 *
 * Stored values go through this function (migrations, releasing the old
 * address of an update); what a caller sends goes through
 * {@link normalizeEmail}, which refuses invisible characters instead of
 * dropping them.
 */
export function emailKey(email: string | null | undefined): string | undefined {
  if (email === null || email === undefined) return undefined;
  let e = email.trim();
  for (let i = 0; i < 4; i++) {
    const next = withoutInvisible(e).normalize('NFKC').toLowerCase().normalize('NFKC').trim();
    if (next === e) break;
    e = next;
  }
  return e.length === 0 ? undefined : e;
}

/**
 * An email address as it is stored, claimed and looked up: its
 * {@link emailKey}. Undefined for empty input. Throws `invalid_argument`
 * (reason `invalid_email`) when the address holds an invisible character
 * ({@link INVISIBLE}): `ka\u200bte@example.com` is refused, not taken for
 * `kate@example.com` (nor stored as a second account that looks like it), so
 * that nobody is signed in, mailed or linked under an address other than the
 * one they typed. Fullwidth and other compatibility forms
 * (`ｋａｔｅ@ｅｘａｍｐｌｅ.com`) are the same address as their plain form,
 * and an address typed with a precomposed `Ä` and one typed as `A` +
 * combining diaeresis are one address, one account.
 */
export function normalizeEmail(email: string | null | undefined): string | undefined {
  if (email === null || email === undefined) return undefined;
  const trimmed = email.trim();
  if (withoutInvisible(trimmed) !== trimmed) throw invisibleInEmail();
  return emailKey(email);
}

/** Phone number without spaces, dashes, dots or parentheses; undefined for empty input. */
export function normalizePhone(phone: string | null | undefined): string | undefined {
  if (phone === null || phone === undefined) return undefined;
  const p = phone.trim().replace(/[\s\-().]/g, '');
  return p.length === 0 ? undefined : p;
}

/**
 * Where users live, with service-enforced uniqueness of email and phone
 * number. Errors: `already_exists` (reason `user_already_exists`, the spec's
 * message) when an address is held by another user, however many sign-ups
 * race for it, across processes; `not_found` (reason `user_not_found`) when
 * updating a missing user.
 */
export interface UserStore {
  /** Creates or upgrades the schema. Idempotent. */
  init(): Promise<void>;
  findById(id: string): Promise<UserRecord | undefined>;
  /**
   * {@link findById} without a promise, for a store that can read the user at
   * once (SQLite's connection is open and nothing waits on it): the user, or
   * undefined when it is not at hand, a missing user included (then ask
   * `findById`).
   */
  findByIdNow?(id: string): UserRecord | undefined;
  /** The user holding this email (compared by {@link emailKey}), or undefined. Throws as {@link normalizeEmail}. */
  findByEmail(email: string): Promise<UserRecord | undefined>;
  findByPhone(phone: string): Promise<UserRecord | undefined>;
  /** The record {@link create} would store for `fields`, without storing anything. */
  draft(fields: UserFields): UserRecord;
  /**
   * Creates a user, its addresses normalised and claimed atomically. `within`
   * runs after the user is stored and before it counts as created (sign-up:
   * its verification request and mail); when it throws, nothing of the user
   * is left. `id`: the id of a {@link draft}.
   */
  create(fields: UserFields, options?: { id?: string; within?: (user: UserRecord, transaction: StoreTransaction) => Promise<void> }): Promise<UserRecord>;
  /** Updates fields; a changed address is claimed and the old one released. Returns the updated user. */
  update(id: string, fields: UserFields, options?: { transaction?: StoreTransaction }): Promise<UserRecord>;
  /** Deletes a user and releases its claims; true when it existed. */
  delete(id: string, options?: { transaction?: StoreTransaction }): Promise<boolean>;
  /** A page of users ordered by creation time (then id), with the total count. */
  list(page: UserPage): Promise<{ users: UserRecord[]; total: number }>;
  /** How many users hold this email (tests use it to prove uniqueness under races). */
  countByEmail(email: string): Promise<number>;
}

/** A page request: `offset`/`limit` rows ordered by creation time. */
export interface UserPage {
  offset: number;
  limit: number;
}
