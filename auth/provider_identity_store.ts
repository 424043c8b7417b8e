/**
 * Provider identities: which user a social or OpenID Connect account
 * belongs to, keyed by the provider and the provider's stable subject (the ID
 * token's `sub`, or the user id of the provider's API for providers without
 * ID tokens). An email address can change at the provider or be recycled;
 * the subject cannot (OpenID Connect Core §5.7: `sub` and `iss` are the only
 * claims that identify an account), so a known subject signs in its owner
 * whatever address the provider reports that day.
 *
 * (provider, subject) is unique: one provider account belongs to at most one
 * user. On SQL it is the primary key of `provider_identities` (migration
 * `0007_provider_identities` of the identity store, auth/user_store.ts); on
 * DynamoDB the item's key (partition `provider`, sort `subject`), written on
 * the condition that it is absent. The email address kept is the one the
 * provider reported when the identity was linked or last used to sign in;
 * it is shown to the account's owner and proves nothing.
 */
import type { Transaction } from 'sequelize';
import { QueryTypes, type SqlDatabase } from '../engine/sql/sql_database.ts';
import { LatchkeyError } from '../engine/errors.ts';
import type { Migration } from '../engine/sql/migrate.ts';
import type { DynamoDatabase, DynamoItem } from './dynamodb.ts';
import { sqlTransaction, type StoreTransaction } from './main_database.ts';
import { isUniqueViolation } from './sql_conflicts.ts';
import { tableOptions } from './sql_charset.ts';

/** One provider account linked to a user. Times are unix seconds. */
export interface ProviderIdentity {
  /** The provider's name (`google`, `github`, ..., `oidc`). */
  provider: string;
  /** The provider's stable id of the account. */
  subject: string;
  user_id: string;
  /** The address the provider reported last (verified or not); null when it shared none. */
  email: string | null;
  /** When the identity was linked. */
  created_at: number;
}

/** What {@link ProviderIdentityStore.link} records. */
export type NewProviderIdentity = Omit<ProviderIdentity, 'created_at'>;

/** The longest subject kept: OpenID Connect Core §2 caps `sub` at 255 ASCII characters. */
export const MAX_SUBJECT_LENGTH = 255;

/** The refusal when a provider account is already another user's. */
export const identityOwnedElsewhere = (): LatchkeyError =>
  new LatchkeyError('already_exists', 'this provider account is already linked to another account; sign in to that account and unlink it there first', {
    reason: 'identity_owned_by_another_account',
  });

/** The identity store's migration (component `auth`, after `0006_locale`). */
export const PROVIDER_IDENTITIES_MIGRATION: Migration = {
  id: '0007_provider_identities',
  async up({ sequelize, transaction, dialect }) {
    await sequelize.query(
      `CREATE TABLE provider_identities (
        provider VARCHAR(32) NOT NULL,
        subject VARCHAR(${MAX_SUBJECT_LENGTH}) NOT NULL,
        user_id VARCHAR(36) NOT NULL,
        email VARCHAR(320) NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (provider, subject))${tableOptions(dialect)}`,
      { transaction },
    );
    await sequelize.query('CREATE INDEX provider_identities_user ON provider_identities (user_id)', { transaction });
  },
};

/**
 * The provider identity store. Implementers keep (provider, subject) unique
 * across users: {@link link} of an identity another user holds throws
 * `already_exists` `identity_owned_by_another_account` and changes nothing.
 */
export interface ProviderIdentityStore {
  /** Creates the DynamoDB table when missing (the SQL table is the identity store's migration). Idempotent. */
  init(): Promise<void>;
  /** The identity, or undefined. */
  find(provider: string, subject: string): Promise<ProviderIdentity | undefined>;
  /** The user's identities, the first linked first. */
  listByUser(userId: string): Promise<ProviderIdentity[]>;
  /**
   * Links (provider, subject) to `user_id`: records it, or, when it is that
   * user's already, updates the address seen (`created: false`). Throws
   * `already_exists` `identity_owned_by_another_account` when another user
   * holds it, `invalid_argument` `invalid_provider_subject` for an empty
   * subject or one longer than {@link MAX_SUBJECT_LENGTH}.
   */
  link(identity: NewProviderIdentity): Promise<{ identity: ProviderIdentity; created: boolean }>;
  /** Removes every identity of `provider` the user holds; returns how many. */
  unlink(userId: string, provider: string): Promise<number>;
  /** Removes one identity whoever holds it (one left by a user that no longer exists). */
  remove(provider: string, subject: string): Promise<void>;
  /** Removes every identity of the user (inside `transaction` when given). */
  deleteUserData(userId: string, transaction?: StoreTransaction): Promise<void>;
}

function checkSubject(subject: string): void {
  if (subject.length === 0 || subject.length > MAX_SUBJECT_LENGTH) {
    throw new LatchkeyError('invalid_argument', `the provider's account id must have 1 to ${MAX_SUBJECT_LENGTH} characters`, { reason: 'invalid_provider_subject' });
  }
}

const clipEmail = (email: string | null): string | null => (email === null ? null : [...email].slice(0, 320).join(''));

function fromRow(r: Record<string, unknown>): ProviderIdentity {
  return {
    provider: String(r['provider']),
    subject: String(r['subject']),
    user_id: String(r['user_id']),
    email: r['email'] === null || r['email'] === undefined ? null : String(r['email']),
    created_at: Number(r['created_at']),
  };
}

/** The {@link ProviderIdentityStore} on SQL: the `provider_identities` table. */
export class SqlProviderIdentityStore implements ProviderIdentityStore {
  readonly #db: SqlDatabase;
  readonly #now: () => number;

  constructor(options: { sequelize: SqlDatabase; nowSeconds: () => number }) {
    this.#db = options.sequelize;
    this.#now = options.nowSeconds;
  }

  /** The table is created by the identity store's migrations (`0007_provider_identities`), which run first. */
  async init(): Promise<void> {}

  async find(provider: string, subject: string): Promise<ProviderIdentity | undefined> {
    const rows = await this.#db.query<Record<string, unknown>>('SELECT * FROM provider_identities WHERE provider = ? AND subject = ?', {
      replacements: [provider, subject],
      type: QueryTypes.SELECT,
    });
    return rows[0] === undefined ? undefined : fromRow(rows[0]);
  }

  async listByUser(userId: string): Promise<ProviderIdentity[]> {
    const rows = await this.#db.query<Record<string, unknown>>('SELECT * FROM provider_identities WHERE user_id = ? ORDER BY created_at, provider, subject', {
      replacements: [userId],
      type: QueryTypes.SELECT,
    });
    return rows.map(fromRow);
  }

  async link(identity: NewProviderIdentity): Promise<{ identity: ProviderIdentity; created: boolean }> {
    checkSubject(identity.subject);
    const now = this.#now();
    const email = clipEmail(identity.email);
    try {
      await this.#db.query('INSERT INTO provider_identities (provider, subject, user_id, email, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)', {
        replacements: [identity.provider, identity.subject, identity.user_id, email, now, now],
      });
      return { identity: { ...identity, email, created_at: now }, created: true };
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
    }
    // Held already: by this user (the address seen is brought up to date) or by another (refused, nothing changes).
    await this.#db.query('UPDATE provider_identities SET email = ?, updated_at = ? WHERE provider = ? AND subject = ? AND user_id = ?', {
      replacements: [email, now, identity.provider, identity.subject, identity.user_id],
      type: QueryTypes.UPDATE,
    });
    const held = await this.find(identity.provider, identity.subject);
    if (held === undefined || held.user_id !== identity.user_id) throw identityOwnedElsewhere();
    return { identity: held, created: false };
  }

  async unlink(userId: string, provider: string): Promise<number> {
    const mine = (await this.listByUser(userId)).filter((i) => i.provider === provider);
    if (mine.length === 0) return 0;
    await this.#db.query('DELETE FROM provider_identities WHERE user_id = ? AND provider = ?', { replacements: [userId, provider] });
    return mine.length;
  }

  async remove(provider: string, subject: string): Promise<void> {
    await this.#db.query('DELETE FROM provider_identities WHERE provider = ? AND subject = ?', { replacements: [provider, subject] });
  }

  async deleteUserData(userId: string, transaction?: StoreTransaction): Promise<void> {
    const t = sqlTransaction(transaction);
    await this.#db.query('DELETE FROM provider_identities WHERE user_id = ?', { replacements: [userId], ...(t === undefined ? {} : { transaction: t as Transaction }) });
  }
}

/**
 * The {@link ProviderIdentityStore} on DynamoDB: table `provider_identities`,
 * one item per identity (partition key the provider, sort key the subject;
 * a put on the condition that the key is absent makes it unique), listed per
 * user through the `provider_identities_by_user` index. The index is
 * eventually consistent, so each item it names is read again from the table.
 */
export class DynamoProviderIdentityStore implements ProviderIdentityStore {
  readonly #db: DynamoDatabase;
  readonly #now: () => number;

  constructor(options: { db: DynamoDatabase; nowSeconds: () => number }) {
    this.#db = options.db;
    this.#now = options.nowSeconds;
  }

  init(): Promise<void> {
    return this.#db.ensureTable({ name: 'provider_identities', indexes: [{ name: 'provider_identities_by_user', pk: 'user_id', sk: 'created_key' }] });
  }

  async find(provider: string, subject: string): Promise<ProviderIdentity | undefined> {
    if (subject.length === 0) return undefined;
    const item = await this.#db.get('provider_identities', provider, subject);
    return item === undefined ? undefined : fromRow(item);
  }

  async listByUser(userId: string): Promise<ProviderIdentity[]> {
    const items = await this.#db.query('provider_identities', { index: 'provider_identities_by_user', pk: ['user_id', userId] });
    const out: ProviderIdentity[] = [];
    for (const it of items) {
      const item = await this.#db.get('provider_identities', String(it['pk']), String(it['sk']));
      if (item !== undefined && item['user_id'] === userId) out.push(fromRow(item));
    }
    return out.sort((a, b) => a.created_at - b.created_at || (a.provider + a.subject < b.provider + b.subject ? -1 : 1));
  }

  async link(identity: NewProviderIdentity): Promise<{ identity: ProviderIdentity; created: boolean }> {
    checkSubject(identity.subject);
    const now = this.#now();
    const email = clipEmail(identity.email);
    const item: DynamoItem = {
      pk: identity.provider,
      sk: identity.subject,
      ...identity,
      email,
      created_key: `${String(now).padStart(12, '0')}:${identity.provider}:${identity.subject}`,
      created_at: now,
      updated_at: now,
    };
    if (await this.#db.put('provider_identities', item, { expression: 'attribute_not_exists(pk)' })) {
      return { identity: { ...identity, email, created_at: now }, created: true };
    }
    const updated = await this.#db.update(
      'provider_identities',
      identity.provider,
      identity.subject,
      { set: { email, updated_at: now } },
      { expression: 'attribute_exists(pk) AND user_id = :u', values: { ':u': identity.user_id } },
    );
    if (updated === undefined) throw identityOwnedElsewhere();
    return { identity: fromRow(updated), created: false };
  }

  async unlink(userId: string, provider: string): Promise<number> {
    let removed = 0;
    for (const i of await this.listByUser(userId)) {
      if (i.provider !== provider) continue;
      // Conditional: an identity relinked elsewhere in between is not this user's to remove.
      const gone = await this.#db.delete('provider_identities', i.provider, i.subject, { expression: 'user_id = :u', values: { ':u': userId } });
      if (gone !== undefined) removed++;
    }
    return removed;
  }

  async remove(provider: string, subject: string): Promise<void> {
    await this.#db.delete('provider_identities', provider, subject);
  }

  async deleteUserData(userId: string): Promise<void> {
    for (const i of await this.listByUser(userId)) {
      await this.#db.delete('provider_identities', i.provider, i.subject, { expression: 'user_id = :u', values: { ':u': userId } });
    }
  }
}
