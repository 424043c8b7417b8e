/**
 * The user store's contract, shared by its SQL (auth/user_store.ts) and
 * DynamoDB (auth/dynamo_auth_stores.ts) implementations and by the flows that
 * use it: the user record, the {@link UserStore} interface, and how email
 * addresses and phone numbers are normalised before they are stored,
 * claimed or looked up.
 */
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
  created_at: number;
  updated_at: number;
}

/** Fields that may be written on create or update. */
export type UserFields = Partial<Omit<UserRecord, 'id' | 'created_at' | 'updated_at'>>;

/**
 * Trimmed, Unicode-normalised (NFC) and lower-cased email; undefined for
 * empty input. NFC comes before case folding (and again after it, which
 * lower-casing can undo), so that an address typed with a precomposed `Ä` and
 * one typed as `A` + combining diaeresis are one address, one account.
 */
export function normalizeEmail(email: string | null | undefined): string | undefined {
  if (email === null || email === undefined) return undefined;
  const e = email.trim().normalize('NFC').toLowerCase().normalize('NFC');
  return e.length === 0 ? undefined : e;
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
  /** The user holding this email (case and surrounding whitespace ignored), or undefined. */
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
