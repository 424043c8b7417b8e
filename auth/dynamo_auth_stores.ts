/**
 * The identity stores on a DynamoDB main database (docs/storage.md,
 * "DynamoDB main database"): users with their address claims, verification
 * requests, one-time codes and TOTP enrolments. One table per entity, every
 * item keyed `pk`/`sk`:
 *
 * | table | pk | sk | holds |
 * |---|---|---|---|
 * | `users` | user id | `-` | the user (the SQL columns as attributes) |
 * | `user_identifiers` | `email#<address>` or `phone#<number>`; `migration#0005_email_key` | `-` | the claim: which user holds the address; the stored emails were rewritten to their key |
 * | `verification_requests` | `req#<token digest>`, `id#<id>`, `kind#<identifier>#<email>` | `-` | the request; pointers to it by id and by (identifier, email) |
 * | `otps` | user id | `-` | the user's one pending code |
 * | `authenticators` | user id | method | the user's TOTP enrolment |
 *
 * Multi-item changes are ordered single-item conditional writes (no
 * TransactWriteItems); the comments on each say which write decides.
 */
import { randomUUID } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { DynamoDatabase, DynamoItem } from './dynamodb.ts';
import { DynamoTransaction, type StoreTransaction } from './main_database.ts';
import type { AuthenticatorRow, MfaStore, OtpRow } from './mfa_store.ts';
import { COLUMN_NAMES } from './user_migrations.ts';
import { rowToRecord, toColumn } from './user_store.ts';
import { USER_EXISTS_MESSAGE, emailKey, normalizeEmail, normalizePhone, type UserFields, type UserPage, type UserRecord, type UserStore } from './user_store_types.ts';
import {
  digest,
  expiredVerificationToken,
  invalidVerificationToken,
  issueVerification,
  toRecord,
  type IssuedVerification,
  type VerificationIdentifier,
  type VerificationRecord,
  type VerificationStore,
} from './verification.ts';

/**
 * A create whose user item exists without its claims for longer than this
 * was cut short (a crash between the writes): its claims may be taken over.
 */
const STALE_PENDING_SECONDS = 60;

const exists = (): LatchkeyError => new LatchkeyError('already_exists', USER_EXISTS_MESSAGE, { reason: 'user_already_exists' });
const claimKey = (kind: 'email' | 'phone', value: string): string => `${kind}#${value}`;
/** The marker item (in `user_identifiers`) of the stored emails' rewrite to their key: `#rekeyEmails` has run. */
const EMAIL_KEY_MARK = 'migration#0005_email_key';

function toItem(record: Record<string, unknown>): DynamoItem {
  const item: DynamoItem = {};
  for (const c of COLUMN_NAMES) if (c in record) item[c] = toColumn(c, record[c]);
  return item;
}

/**
 * Users on DynamoDB. Uniqueness of an address is its claim item, written
 * with a put conditional on the claim being free: of any number of racing
 * sign-ups for one address exactly one writes the claim.
 *
 * - create: the user item first, marked `pending` (invisible to every read),
 *   then each claim, then `within`, then the mark is removed. A lost claim
 *   or a failing `within` removes what was written. A claim whose user item
 *   is gone, or is still `pending` after {@link STALE_PENDING_SECONDS} (a
 *   create cut short by a crash), is taken over with a put conditional on
 *   its old holder.
 * - update: a new address is claimed before the user item changes, and the
 *   old claim is released after (conditional on still being this user's).
 * - delete: the user item, then its claims.
 */
export class DynamoUserStore implements UserStore {
  readonly #db: DynamoDatabase;
  readonly #now: () => number;

  constructor(options: { db: DynamoDatabase; nowSeconds?: (() => number) | undefined }) {
    this.#db = options.db;
    this.#now = options.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  }

  async init(): Promise<void> {
    await Promise.all([this.#db.ensureTable({ name: 'users' }), this.#db.ensureTable({ name: 'user_identifiers' })]);
    await this.#rekeyEmails();
  }

  /**
   * The SQL stores' migrations 0003 and 0005 (auth/user_store.ts,
   * `rekeyEmails`) on DynamoDB, once per database (a marker item in
   * `user_identifiers` records that it ran): every stored email that
   * {@link emailKey} changes is rewritten to its key and claimed under it,
   * in creation order. Of two users whose addresses now have one key, the
   * one already holding the key's claim keeps it, or else the first created;
   * the other keeps its stored address and everything else, without a claim
   * on the key. Every write is conditional, so two processes starting
   * together cannot hand one key to two users.
   */
  async #rekeyEmails(): Promise<void> {
    if ((await this.#db.get('user_identifiers', EMAIL_KEY_MARK, '-')) !== undefined) return;
    const items = await this.#db.scan('users', { expression: 'attribute_not_exists(#p)', names: { '#p': 'pending' } });
    items.sort((a, b) => Number(a['created_at']) - Number(b['created_at']) || (String(a['id']) < String(b['id']) ? -1 : 1));
    for (const item of items) {
      const id = String(item['id']);
      const stored = typeof item['email'] === 'string' ? item['email'] : undefined;
      const key = emailKey(stored);
      if (stored === undefined || key === undefined || key === stored || key.length > 320) continue;
      const claim = { pk: claimKey('email', key), sk: '-', kind: 'email', value: key, user_id: id, created_at: this.#now() };
      const held = await this.#db.get('user_identifiers', claim.pk, '-');
      if (held !== undefined && String(held['user_id']) !== id) {
        const owner = await this.#db.get('users', String(held['user_id']), '-');
        if (owner !== undefined && owner['email'] === key) continue;
        if (!(await this.#db.put('user_identifiers', claim, { expression: 'user_id = :old', values: { ':old': String(held['user_id']) } }))) continue;
      } else if (!(await this.#db.put('user_identifiers', claim, { expression: 'attribute_not_exists(pk) OR user_id = :me', values: { ':me': id } }))) {
        continue;
      }
      await this.#db.update('users', id, '-', { set: { email: key } }, { expression: 'attribute_exists(pk)' });
      await this.#release('email', stored, id);
    }
    await this.#db.put('user_identifiers', { pk: EMAIL_KEY_MARK, sk: '-', created_at: this.#now() });
  }

  async #item(id: string): Promise<DynamoItem | undefined> {
    if (typeof id !== 'string' || id.length === 0 || id.length > 36) return undefined;
    return this.#db.get('users', id, '-');
  }

  async findById(id: string): Promise<UserRecord | undefined> {
    const item = await this.#item(id);
    return item === undefined || item['pending'] !== undefined ? undefined : rowToRecord(item);
  }

  async #findByClaim(kind: 'email' | 'phone', value: string, attribute: 'email' | 'phone_number'): Promise<UserRecord | undefined> {
    const claim = await this.#db.get('user_identifiers', claimKey(kind, value), '-');
    if (claim === undefined) return undefined;
    const user = await this.findById(String(claim['user_id']));
    // A stale claim (its user changed address) finds nobody.
    return user !== undefined && user[attribute] === value ? user : undefined;
  }

  findByEmail(email: string): Promise<UserRecord | undefined> {
    const e = normalizeEmail(email);
    return e === undefined ? Promise.resolve(undefined) : this.#findByClaim('email', e, 'email');
  }

  findByPhone(phone: string): Promise<UserRecord | undefined> {
    const p = normalizePhone(phone);
    return p === undefined ? Promise.resolve(undefined) : this.#findByClaim('phone', p, 'phone_number');
  }

  draft(fields: UserFields): UserRecord {
    const now = this.#now();
    const email = normalizeEmail(fields.email);
    const phone = normalizePhone(fields.phone_number);
    const record: Record<string, unknown> = { ...fields, email: email ?? null, phone_number: phone ?? null, id: randomUUID(), created_at: now, updated_at: now };
    return rowToRecord(Object.fromEntries(COLUMN_NAMES.map((c) => [c, toColumn(c, record[c])])));
  }

  /** Claims an address for `userId`; throws `already_exists` when another live user holds it. */
  async #claim(kind: 'email' | 'phone', value: string, userId: string): Promise<void> {
    const pk = claimKey(kind, value);
    for (let attempt = 0; attempt < 5; attempt++) {
      const claim = { pk, sk: '-', kind, value, user_id: userId, created_at: this.#now() };
      if (await this.#db.put('user_identifiers', claim, { expression: 'attribute_not_exists(pk) OR user_id = :me', values: { ':me': userId } })) return;
      const held = await this.#db.get('user_identifiers', pk, '-');
      if (held === undefined) continue;
      const holder = String(held['user_id']);
      const owner = await this.#db.get('users', holder, '-');
      const attribute = kind === 'email' ? 'email' : 'phone_number';
      const live = owner !== undefined && owner[attribute] === value && !(owner['pending'] !== undefined && Number(owner['created_at']) < this.#now() - STALE_PENDING_SECONDS);
      if (live) throw exists();
      // Its holder is gone, holds another address now, or never finished: take it over, unless someone else does first.
      if (await this.#db.put('user_identifiers', claim, { expression: 'user_id = :old', values: { ':old': holder } })) return;
    }
    throw exists();
  }

  async #release(kind: 'email' | 'phone', value: string, userId: string): Promise<void> {
    await this.#db.delete('user_identifiers', claimKey(kind, value), '-', { expression: 'user_id = :me', values: { ':me': userId } });
  }

  /** How long a create that succeeded took (ms), smoothed; 0 before the first. */
  #createMs = 0;

  /**
   * Creates the user. A create refused because the address is taken makes
   * several requests fewer than one that succeeds, and the service then skips
   * the new user's audit row and webhook (a few requests more on this
   * backend), so a refusal is held until a quarter longer than successful
   * creates take (at most 2 s): a taken address must not be told apart by
   * its timing (security matrix A6). On SQL both end in one transaction and
   * cost about the same without this.
   */
  async create(fields: UserFields, options: { id?: string; within?: (user: UserRecord, transaction: StoreTransaction) => Promise<void> } = {}): Promise<UserRecord> {
    const started = performance.now();
    try {
      const user = await this.#create(fields, options);
      const ms = performance.now() - started;
      this.#createMs = this.#createMs === 0 ? ms : 0.8 * this.#createMs + 0.2 * ms;
      return user;
    } catch (err) {
      if (err instanceof LatchkeyError && err.code === 'already_exists') {
        const wait = Math.min(2000, 1.25 * this.#createMs) - (performance.now() - started);
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      }
      throw err;
    }
  }

  async #create(fields: UserFields, options: { id?: string; within?: (user: UserRecord, transaction: StoreTransaction) => Promise<void> }): Promise<UserRecord> {
    const id = options.id ?? randomUUID();
    const now = this.#now();
    const email = normalizeEmail(fields.email);
    const phone = normalizePhone(fields.phone_number);
    const record: Record<string, unknown> = { ...fields, email: email ?? null, phone_number: phone ?? null, id, created_at: now, updated_at: now };
    const item = { ...toItem(record), pk: id, sk: '-' };
    if (!(await this.#db.put('users', { ...item, pending: 1 }, { expression: 'attribute_not_exists(pk)' }))) throw exists();
    const claimed: Array<['email' | 'phone', string]> = [];
    try {
      if (email !== undefined) {
        await this.#claim('email', email, id);
        claimed.push(['email', email]);
      }
      if (phone !== undefined) {
        await this.#claim('phone', phone, id);
        claimed.push(['phone', phone]);
      }
      if (options.within !== undefined) {
        const tx = new DynamoTransaction();
        await options.within(rowToRecord(item), tx);
        await this.#db.update('users', id, '-', { remove: ['pending'] });
        tx.committed();
      } else {
        await this.#db.update('users', id, '-', { remove: ['pending'] });
      }
    } catch (err) {
      for (const [kind, value] of claimed) await this.#release(kind, value, id).catch(() => undefined);
      await this.#db.delete('users', id, '-').catch(() => undefined);
      throw err;
    }
    return rowToRecord(item);
  }

  async update(id: string, fields: UserFields): Promise<UserRecord> {
    const current = await this.findById(id);
    if (current === undefined) throw new LatchkeyError('not_found', 'user not found', { reason: 'user_not_found' });
    const patch: Record<string, unknown> = { ...fields };
    const released: Array<['email' | 'phone', string]> = [];
    const claimed: Array<['email' | 'phone', string]> = [];
    try {
      for (const [kind, attribute, normalize, stored] of [
        ['email', 'email', normalizeEmail, emailKey],
        ['phone', 'phone_number', normalizePhone, normalizePhone],
      ] as const) {
        if (!(attribute in fields)) continue;
        const next = normalize(fields[attribute]);
        patch[attribute] = next ?? null;
        const old = stored(current[attribute]);
        if (next === old) continue;
        if (next !== undefined) {
          await this.#claim(kind, next, id);
          claimed.push([kind, next]);
        }
        if (old !== undefined) released.push([kind, old]);
      }
    } catch (err) {
      for (const [kind, value] of claimed) await this.#release(kind, value, id).catch(() => undefined);
      throw err;
    }
    patch['updated_at'] = this.#now();
    const set: DynamoItem = {};
    for (const c of COLUMN_NAMES) if (c !== 'id' && c !== 'created_at' && c in patch) set[c] = toColumn(c, patch[c]);
    const updated = await this.#db.update('users', id, '-', { set }, { expression: 'attribute_exists(pk)' });
    if (updated === undefined) {
      for (const [kind, value] of claimed) await this.#release(kind, value, id).catch(() => undefined);
      throw new LatchkeyError('not_found', 'user not found', { reason: 'user_not_found' });
    }
    for (const [kind, value] of released) await this.#release(kind, value, id);
    return rowToRecord(updated);
  }

  async delete(id: string): Promise<boolean> {
    const old = await this.#db.delete('users', id, '-');
    if (old === undefined) return false;
    const email = emailKey(old['email'] as string | null);
    const phone = normalizePhone(old['phone_number'] as string | null);
    if (email !== undefined) await this.#release('email', email, id);
    if (phone !== undefined) await this.#release('phone', phone, id);
    return old['pending'] === undefined;
  }

  async #all(): Promise<UserRecord[]> {
    const items = await this.#db.scan('users', { expression: 'attribute_not_exists(#p)', names: { '#p': 'pending' } });
    return items.map(rowToRecord).sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  async list(page: UserPage): Promise<{ users: UserRecord[]; total: number }> {
    const limit = Math.max(0, Math.floor(page.limit));
    const offset = Math.max(0, Math.floor(page.offset));
    const all = await this.#all();
    return { users: all.slice(offset, offset + limit), total: all.length };
  }

  async countByEmail(email: string): Promise<number> {
    const e = normalizeEmail(email) ?? '';
    return (await this.#all()).filter((u) => u.email === e).length;
  }
}

/**
 * Verification requests on DynamoDB. The request item is keyed by its token's
 * digest (a link is checked with one strongly consistent read); two pointer
 * items find it by id and by (identifier, email). Replacing the pending
 * request of an (identifier, email) swaps its pointer and deletes the request
 * the pointer named, so of racing requests one stays. Using a request is a
 * delete conditional on it being live: exactly one of concurrent uses wins.
 */
export class DynamoVerificationStore implements VerificationStore {
  readonly #db: DynamoDatabase;
  readonly #now: () => number;

  constructor(options: { db: DynamoDatabase; nowSeconds: () => number }) {
    this.#db = options.db;
    this.#now = options.nowSeconds;
  }

  async init(): Promise<void> {
    await this.#db.ensureTable({ name: 'verification_requests' });
  }

  async create(input: { identifier: VerificationIdentifier; email: string; redirectUri: string; ttlSeconds?: number }): Promise<{ token: string; record: VerificationRecord }> {
    const issued = this.issue(input);
    await this.insert(issued);
    return { token: issued.token, record: issued.record };
  }

  issue(input: { identifier: VerificationIdentifier; email: string; redirectUri: string; ttlSeconds?: number }): IssuedVerification {
    return issueVerification(this.#now(), input);
  }

  async #remove(tokenHash: string, id: string): Promise<void> {
    await this.#db.delete('verification_requests', `req#${tokenHash}`, '-');
    await this.#db.delete('verification_requests', `id#${id}`, '-');
  }

  async insert(issued: IssuedVerification): Promise<void> {
    const { row } = issued;
    await this.#db.put('verification_requests', { pk: `req#${row.token_hash}`, sk: '-', ...row });
    await this.#db.put('verification_requests', { pk: `id#${row.id}`, sk: '-', token_hash: row.token_hash });
    const old = await this.#db.replace('verification_requests', { pk: `kind#${row.identifier}#${row.email}`, sk: '-', token_hash: row.token_hash, id: row.id });
    if (old !== undefined && old['token_hash'] !== row.token_hash) await this.#remove(String(old['token_hash']), String(old['id']));
  }

  async peek(token: string, identifiers: readonly VerificationIdentifier[]): Promise<VerificationRecord> {
    if (typeof token !== 'string' || token.length === 0 || token.length > 512) throw invalidVerificationToken();
    const item = await this.#db.get('verification_requests', `req#${digest(token)}`, '-');
    if (item === undefined || !(identifiers as readonly string[]).includes(String(item['identifier']))) throw invalidVerificationToken();
    if (Number(item['expires_at']) <= this.#now()) {
      await this.#remove(String(item['token_hash']), String(item['id']));
      throw expiredVerificationToken();
    }
    return toRecord(item);
  }

  async pending(identifier: VerificationIdentifier, email: string): Promise<VerificationRecord | undefined> {
    const pointer = await this.#db.get('verification_requests', `kind#${identifier}#${email}`, '-');
    if (pointer === undefined) return undefined;
    const item = await this.#db.get('verification_requests', `req#${String(pointer['token_hash'])}`, '-');
    return item !== undefined && Number(item['expires_at']) > this.#now() ? toRecord(item) : undefined;
  }

  async consume(record: VerificationRecord): Promise<void> {
    const pointer = await this.#db.get('verification_requests', `id#${record.id}`, '-');
    if (pointer === undefined) throw invalidVerificationToken();
    const tokenHash = String(pointer['token_hash']);
    const used = await this.#db.delete('verification_requests', `req#${tokenHash}`, '-', {
      expression: 'attribute_exists(pk) AND #x > :now',
      names: { '#x': 'expires_at' },
      values: { ':now': this.#now() },
    });
    if (used === undefined) throw invalidVerificationToken();
    await this.#db.delete('verification_requests', `id#${record.id}`, '-');
    await this.#db.delete('verification_requests', `kind#${record.identifier}#${record.email}`, '-', { expression: 'token_hash = :t', values: { ':t': tokenHash } });
  }

  async #live(): Promise<DynamoItem[]> {
    return this.#db.scan('verification_requests', {
      expression: 'begins_with(pk, :req) AND #x > :now',
      names: { '#x': 'expires_at' },
      values: { ':req': 'req#', ':now': this.#now() },
    });
  }

  async list(page: { offset: number; limit: number }): Promise<{ verification_requests: VerificationRecord[]; total: number }> {
    const limit = Math.max(0, Math.floor(page.limit));
    const offset = Math.max(0, Math.floor(page.offset));
    const all = (await this.#live()).map(toRecord).sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return { verification_requests: all.slice(offset, offset + limit), total: all.length };
  }

  async deleteByEmail(email: string): Promise<void> {
    const items = await this.#db.scan('verification_requests', { expression: 'begins_with(pk, :req) AND email = :e', values: { ':req': 'req#', ':e': email } });
    for (const item of items) {
      await this.#remove(String(item['token_hash']), String(item['id']));
      await this.#db.delete('verification_requests', `kind#${String(item['identifier'])}#${email}`, '-', { expression: 'token_hash = :t', values: { ':t': item['token_hash'] } });
    }
  }
}

/**
 * One-time codes and TOTP enrolments on DynamoDB. A row's id names its item
 * (`<user id>:<uuid>` for a code, `<user id>:<method>:<uuid>` for an
 * enrolment), and every change is conditional on that id, so a code or an
 * enrolment replaced meanwhile is never touched by a write meant for the old
 * one.
 */
export class DynamoMfaStore implements MfaStore {
  readonly #db: DynamoDatabase;
  readonly #now: () => number;

  constructor(options: { db: DynamoDatabase; nowSeconds: () => number }) {
    this.#db = options.db;
    this.#now = options.nowSeconds;
  }

  async init(): Promise<void> {
    await Promise.all([this.#db.ensureTable({ name: 'otps' }), this.#db.ensureTable({ name: 'authenticators' })]);
  }

  async putOtp(input: { userId: string; email: string | null; phoneNumber: string | null; digest: string; ttlSeconds: number }): Promise<void> {
    const now = this.#now();
    await this.#db.put('otps', {
      pk: input.userId,
      sk: '-',
      id: `${input.userId}:${randomUUID()}`,
      user_id: input.userId,
      email: input.email,
      phone_number: input.phoneNumber,
      otp: input.digest,
      expires_at: now + input.ttlSeconds,
      created_at: now,
      updated_at: now,
    });
  }

  async getOtp(userId: string): Promise<OtpRow | undefined> {
    const item = await this.#db.get('otps', userId, '-');
    return item === undefined ? undefined : { id: String(item['id']), user_id: String(item['user_id']), otp: String(item['otp']), expires_at: Number(item['expires_at']) };
  }

  async deleteOtp(id: string): Promise<boolean> {
    const userId = id.slice(0, id.indexOf(':'));
    if (!userId) return false;
    return (await this.#db.delete('otps', userId, '-', { expression: '#i = :id', names: { '#i': 'id' }, values: { ':id': id } })) !== undefined;
  }

  async getAuthenticator(userId: string, method: string): Promise<AuthenticatorRow | undefined> {
    const r = await this.#db.get('authenticators', userId, method);
    if (r === undefined) return undefined;
    return {
      id: String(r['id']),
      user_id: String(r['user_id']),
      method: String(r['method']),
      secret: String(r['secret']),
      recovery_codes: String(r['recovery_codes']),
      last_time_step: r['last_time_step'] === undefined ? null : Number(r['last_time_step']),
      verified_at: r['verified_at'] === undefined ? null : Number(r['verified_at']),
    };
  }

  async putPendingAuthenticator(input: { userId: string; method: string; secret: string; recoveryCodes: string }): Promise<boolean> {
    // An unconfirmed enrolment is replaced; a confirmed one (it has verified_at) never is.
    await this.#db.delete('authenticators', input.userId, input.method, { expression: 'attribute_not_exists(verified_at)' });
    const now = this.#now();
    return this.#db.put(
      'authenticators',
      {
        pk: input.userId,
        sk: input.method,
        id: `${input.userId}:${input.method}:${randomUUID()}`,
        user_id: input.userId,
        method: input.method,
        secret: input.secret,
        recovery_codes: input.recoveryCodes,
        created_at: now,
        updated_at: now,
      },
      { expression: 'attribute_not_exists(pk)' },
    );
  }

  #key(id: string): [string, string] | undefined {
    const [userId, method] = id.split(':');
    return userId && method ? [userId, method] : undefined;
  }

  async acceptTimeStep(id: string, timeStep: number): Promise<boolean> {
    const key = this.#key(id);
    if (key === undefined) return false;
    const current = await this.#db.get('authenticators', key[0], key[1]);
    if (current === undefined || current['id'] !== id) return false;
    const now = this.#now();
    const updated = await this.#db.update(
      'authenticators',
      key[0],
      key[1],
      { set: { last_time_step: timeStep, verified_at: current['verified_at'] ?? now, updated_at: now } },
      {
        expression: '#i = :id AND (attribute_not_exists(last_time_step) OR last_time_step < :step)',
        names: { '#i': 'id' },
        values: { ':id': id, ':step': timeStep },
      },
    );
    return updated !== undefined;
  }

  async replaceRecoveryCodes(id: string, expected: string, next: string): Promise<boolean> {
    const key = this.#key(id);
    if (key === undefined) return false;
    const updated = await this.#db.update(
      'authenticators',
      key[0],
      key[1],
      { set: { recovery_codes: next, updated_at: this.#now() } },
      { expression: '#i = :id AND recovery_codes = :expected', names: { '#i': 'id' }, values: { ':id': id, ':expected': expected } },
    );
    return updated !== undefined;
  }

  async deleteAuthenticator(id: string): Promise<boolean> {
    const key = this.#key(id);
    if (key === undefined) return false;
    return (await this.#db.delete('authenticators', key[0], key[1], { expression: '#i = :id', names: { '#i': 'id' }, values: { ':id': id } })) !== undefined;
  }

  async deleteUserData(userId: string): Promise<void> {
    await this.#db.delete('otps', userId, '-');
    for (const a of await this.#db.query('authenticators', { pk: ['pk', userId] })) await this.#db.delete('authenticators', userId, String(a['sk']));
  }
}
