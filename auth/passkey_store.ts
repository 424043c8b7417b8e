/**
 * Where users' passkeys (WebAuthn credentials) live: the `passkeys` table of
 * the main SQL database, or the `passkeys` table on DynamoDB.
 *
 * A credential id is unique across every user (W3C WebAuthn §7.1 step 26: a
 * credential id already registered is refused). Credential ids are up to
 * 1023 bytes, longer than an index key may be on MySQL, so the unique key is
 * `credential_key`, the SHA-256 of the id (hex); the id itself is kept as
 * text. The public key is the COSE key (base64url). Every use moves the sign
 * counter forward only from the value that was read (a conditional update),
 * so two sign-ins racing on one counter value cannot both be accepted.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Transaction } from 'sequelize';
import { QueryTypes, type SqlDatabase } from '../engine/sql/sql_database.ts';
import { LatchkeyError } from '../engine/errors.ts';
import { runMigrations, type Migration } from '../engine/sql/migrate.ts';
import type { DynamoDatabase, DynamoItem } from './dynamodb.ts';
import { isUniqueViolation } from './sql_conflicts.ts';
import { tableOptions } from './sql_charset.ts';
import { sqlTransaction, type StoreTransaction } from './main_database.ts';

/** A stored passkey. Times are unix seconds. */
export interface PasskeyRecord {
  id: string;
  user_id: string;
  /** base64url credential id. */
  credential_id: string;
  /** base64url COSE public key. */
  public_key: string;
  sign_count: number;
  transports: string[];
  backup_eligible: boolean;
  backed_up: boolean;
  /** The authenticator model's AAGUID (all zeros under attestation `none` for many authenticators). */
  aaguid: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

/** The fields of a new passkey (the store adds the id and times). */
export type NewPasskey = Omit<PasskeyRecord, 'id' | 'created_at' | 'last_used_at'>;

export const PASSKEY_MIGRATIONS: readonly Migration[] = [
  {
    id: '0001_passkeys',
    async up({ sequelize, transaction, dialect }) {
      await sequelize.query(
        `CREATE TABLE passkeys (
          id VARCHAR(36) NOT NULL PRIMARY KEY,
          user_id VARCHAR(36) NOT NULL,
          credential_key CHAR(64) NOT NULL,
          credential_id TEXT NOT NULL,
          public_key TEXT NOT NULL,
          sign_count BIGINT NOT NULL,
          transports VARCHAR(255) NOT NULL,
          backup_eligible BOOLEAN NOT NULL,
          backed_up BOOLEAN NOT NULL,
          aaguid VARCHAR(36) NOT NULL,
          name VARCHAR(128) NOT NULL,
          created_at BIGINT NOT NULL,
          last_used_at BIGINT NULL,
          updated_at BIGINT NOT NULL)${tableOptions(dialect)}`,
        { transaction },
      );
      await sequelize.query('CREATE UNIQUE INDEX passkeys_credential ON passkeys (credential_key)', { transaction });
      await sequelize.query('CREATE INDEX passkeys_user ON passkeys (user_id)', { transaction });
    },
  },
];

/** The unique key of a credential id. */
export function credentialKey(credentialId: string): string {
  return createHash('sha256').update(credentialId, 'utf8').digest('hex');
}

const alreadyRegistered = (): LatchkeyError => new LatchkeyError('already_exists', 'this passkey is already registered', { reason: 'passkey_already_registered' });

/**
 * The passkey store. Implementers keep credential ids unique across users
 * (`already_exists` `passkey_already_registered`) and make {@link recordUse}
 * a compare-and-set on the sign counter.
 */
export interface PasskeyStore {
  /** Creates or upgrades the schema. Idempotent. */
  init(): Promise<void>;
  /** Stores a new passkey (inside `transaction` when given). Throws `already_exists` (`passkey_already_registered`). */
  create(passkey: NewPasskey, transaction?: StoreTransaction): Promise<PasskeyRecord>;
  findByCredentialId(credentialId: string): Promise<PasskeyRecord | undefined>;
  /** The user's passkeys, oldest first. */
  listByUser(userId: string): Promise<PasskeyRecord[]>;
  /** Records a sign-in: the new counter and backup state, only if the counter still is `expectedCount`; true when this call won. */
  recordUse(id: string, expectedCount: number, use: { signCount: number; backedUp: boolean; at: number }): Promise<boolean>;
  /** Renames the user's passkey; undefined when the user has no passkey of that id. */
  rename(userId: string, id: string, name: string): Promise<PasskeyRecord | undefined>;
  /**
   * Deletes the user's passkey. With `keepOne`, refuses (answers `'last'`)
   * when it is the user's only passkey, atomically with the deletion.
   */
  delete(userId: string, id: string, options?: { keepOne?: boolean }): Promise<'deleted' | 'not_found' | 'last'>;
  /** Removes every passkey of the user (inside `transaction` when given). */
  deleteUserData(userId: string, transaction?: StoreTransaction): Promise<void>;
}

const bool = (v: unknown): boolean => v === true || v === 1 || v === '1' || v === 't' || v === 'true';
const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v));

function fromRow(r: Record<string, unknown>): PasskeyRecord {
  const transports = String(r['transports'] ?? '');
  return {
    id: String(r['id']),
    user_id: String(r['user_id']),
    credential_id: String(r['credential_id']),
    public_key: String(r['public_key']),
    sign_count: num(r['sign_count']),
    transports: transports === '' ? [] : transports.split(','),
    backup_eligible: bool(r['backup_eligible']),
    backed_up: bool(r['backed_up']),
    aaguid: String(r['aaguid']),
    name: String(r['name']),
    created_at: num(r['created_at']),
    last_used_at: r['last_used_at'] === null || r['last_used_at'] === undefined ? null : num(r['last_used_at']),
  };
}

/** The {@link PasskeyStore} on SQL: the `passkeys` table. */
export class SqlPasskeyStore implements PasskeyStore {
  readonly #db: SqlDatabase;
  readonly #now: () => number;

  constructor(options: { sequelize: SqlDatabase; nowSeconds: () => number }) {
    this.#db = options.sequelize;
    this.#now = options.nowSeconds;
  }

  /** Runs the migrations (component `auth_passkeys`). Idempotent. */
  async init(): Promise<void> {
    await runMigrations(this.#db, 'auth_passkeys', PASSKEY_MIGRATIONS);
  }

  async create(p: NewPasskey, transaction?: StoreTransaction): Promise<PasskeyRecord> {
    const now = this.#now();
    const id = randomUUID();
    const t = sqlTransaction(transaction);
    try {
      await this.#db.query(
        `INSERT INTO passkeys (id, user_id, credential_key, credential_id, public_key, sign_count, transports, backup_eligible, backed_up, aaguid, name, created_at, last_used_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)`,
        {
          replacements: [id, p.user_id, credentialKey(p.credential_id), p.credential_id, p.public_key, p.sign_count, p.transports.join(','), p.backup_eligible, p.backed_up, p.aaguid, p.name, now, now],
          ...(t === undefined ? {} : { transaction: t }),
        },
      );
    } catch (err) {
      if (isUniqueViolation(err)) throw alreadyRegistered();
      throw err;
    }
    return { ...p, id, created_at: now, last_used_at: null };
  }

  async findByCredentialId(credentialId: string): Promise<PasskeyRecord | undefined> {
    const rows = await this.#db.query<Record<string, unknown>>('SELECT * FROM passkeys WHERE credential_key = ?', { replacements: [credentialKey(credentialId)], type: QueryTypes.SELECT });
    const r = rows[0];
    return r === undefined || String(r['credential_id']) !== credentialId ? undefined : fromRow(r);
  }

  async listByUser(userId: string): Promise<PasskeyRecord[]> {
    const rows = await this.#db.query<Record<string, unknown>>('SELECT * FROM passkeys WHERE user_id = ? ORDER BY created_at, id', { replacements: [userId], type: QueryTypes.SELECT });
    return rows.map(fromRow);
  }

  async recordUse(id: string, expectedCount: number, use: { signCount: number; backedUp: boolean; at: number }): Promise<boolean> {
    const result = (await this.#db.query('UPDATE passkeys SET sign_count = ?, backed_up = ?, last_used_at = ?, updated_at = ? WHERE id = ? AND sign_count = ?', {
      replacements: [use.signCount, use.backedUp, use.at, use.at, id, expectedCount],
      type: QueryTypes.UPDATE,
    })) as unknown as [unknown, number];
    return Number(result[1]) === 1;
  }

  async rename(userId: string, id: string, name: string): Promise<PasskeyRecord | undefined> {
    const now = this.#now();
    await this.#db.query('UPDATE passkeys SET name = ?, updated_at = ? WHERE id = ? AND user_id = ?', { replacements: [name, now, id, userId], type: QueryTypes.UPDATE });
    const rows = await this.#db.query<Record<string, unknown>>('SELECT * FROM passkeys WHERE id = ? AND user_id = ?', { replacements: [id, userId], type: QueryTypes.SELECT });
    return rows[0] === undefined ? undefined : fromRow(rows[0]);
  }

  delete(userId: string, id: string, options: { keepOne?: boolean } = {}): Promise<'deleted' | 'not_found' | 'last'> {
    return this.#db.transaction(async (transaction) => {
      // The user's rows are locked (PostgreSQL, MySQL; SQLite writes one at a time), so two deletions racing for
      // the last two passkeys of a password-less user cannot both see two.
      const lock = this.#db.getDialect() === 'sqlite' ? '' : ' FOR UPDATE';
      const rows = await this.#db.query<{ id: string }>(`SELECT id FROM passkeys WHERE user_id = ?${lock}`, { replacements: [userId], type: QueryTypes.SELECT, transaction });
      if (!rows.some((r) => String(r.id) === id)) return 'not_found';
      if (options.keepOne === true && rows.length <= 1) return 'last';
      await this.#db.query('DELETE FROM passkeys WHERE id = ? AND user_id = ?', { replacements: [id, userId], transaction });
      return 'deleted';
    });
  }

  async deleteUserData(userId: string, transaction?: StoreTransaction): Promise<void> {
    const t = sqlTransaction(transaction);
    await this.#db.query('DELETE FROM passkeys WHERE user_id = ?', { replacements: [userId], ...(t === undefined ? {} : { transaction: t as Transaction }) });
  }
}

/**
 * The {@link PasskeyStore} on DynamoDB: one item per credential (partition
 * key the credential key, so a second registration of an id fails its
 * condition), listed per user through the `passkeys_by_user` index. DynamoDB
 * has no transactions (docs/storage.md): `keepOne` counts, then deletes on
 * the condition that the item still is there.
 */
export class DynamoPasskeyStore implements PasskeyStore {
  readonly #db: DynamoDatabase;
  readonly #now: () => number;

  constructor(options: { db: DynamoDatabase; nowSeconds: () => number }) {
    this.#db = options.db;
    this.#now = options.nowSeconds;
  }

  init(): Promise<void> {
    return this.#db.ensureTable({ name: 'passkeys', indexes: [{ name: 'passkeys_by_user', pk: 'user_id', sk: 'created_key' }] });
  }

  async create(p: NewPasskey): Promise<PasskeyRecord> {
    const now = this.#now();
    const id = `${credentialKey(p.credential_id)}`;
    const item: DynamoItem = {
      pk: id,
      sk: '-',
      id,
      created_key: `${String(now).padStart(12, '0')}:${id}`,
      ...p,
      transports: p.transports.join(','),
      created_at: now,
      updated_at: now,
    };
    if (!(await this.#db.put('passkeys', item, { expression: 'attribute_not_exists(pk)' }))) throw alreadyRegistered();
    return { ...p, id, created_at: now, last_used_at: null };
  }

  async findByCredentialId(credentialId: string): Promise<PasskeyRecord | undefined> {
    const item = await this.#db.get('passkeys', credentialKey(credentialId), '-');
    return item === undefined || String(item['credential_id']) !== credentialId ? undefined : fromRow(item);
  }

  async listByUser(userId: string): Promise<PasskeyRecord[]> {
    const items = await this.#db.query('passkeys', { index: 'passkeys_by_user', pk: ['user_id', userId] });
    // The index is eventually consistent: each item is read again from the table.
    const out: PasskeyRecord[] = [];
    for (const it of items) {
      const item = await this.#db.get('passkeys', String(it['pk']), '-');
      if (item !== undefined && item['user_id'] === userId) out.push(fromRow(item));
    }
    return out;
  }

  async recordUse(id: string, expectedCount: number, use: { signCount: number; backedUp: boolean; at: number }): Promise<boolean> {
    const updated = await this.#db.update(
      'passkeys',
      id,
      '-',
      { set: { sign_count: use.signCount, backed_up: use.backedUp, last_used_at: use.at, updated_at: use.at } },
      { expression: 'attribute_exists(pk) AND sign_count = :c', values: { ':c': expectedCount } },
    );
    return updated !== undefined;
  }

  async rename(userId: string, id: string, name: string): Promise<PasskeyRecord | undefined> {
    const updated = await this.#db.update('passkeys', id, '-', { set: { name, updated_at: this.#now() } }, { expression: 'attribute_exists(pk) AND user_id = :u', values: { ':u': userId } });
    return updated === undefined ? undefined : fromRow(updated);
  }

  async delete(userId: string, id: string, options: { keepOne?: boolean } = {}): Promise<'deleted' | 'not_found' | 'last'> {
    if (options.keepOne === true) {
      const mine = await this.listByUser(userId);
      if (!mine.some((p) => p.id === id)) return 'not_found';
      if (mine.length <= 1) return 'last';
    }
    const gone = await this.#db.delete('passkeys', id, '-', { expression: 'user_id = :u', values: { ':u': userId } });
    return gone === undefined ? 'not_found' : 'deleted';
  }

  async deleteUserData(userId: string): Promise<void> {
    for (const p of await this.listByUser(userId)) await this.#db.delete('passkeys', p.id, '-');
  }
}
