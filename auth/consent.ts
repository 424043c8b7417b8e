/**
 * Consent to the scopes a client that is not first-party asks for
 * (`require_consent` in the client registry).
 *
 * `/authorize` calls {@link ConsentService.gate} once the user is signed in
 * and the request is valid. The request goes on when the user has granted
 * this client the same scopes or more before (and `prompt` does not hold
 * `consent`); otherwise the request, as resolved (a pushed one included),
 * is parked under a ticket (256 random bits, stored hashed in the memory
 * store for 10 minutes, bound to the user and the browser session) and the
 * browser goes to the consent page (`/app/consent?ticket=…`). With
 * `prompt=none` the answer is `consent_required` instead.
 *
 * The page shows the client and the scopes in plain words and posts the
 * decision ({@link decide}) with the session cookie; an allowed request's
 * scopes are added to the user's grant for the client (`oauth_consents`,
 * one row per user and client). The browser then returns to `/authorize`
 * with only `client_id` and `consent_ticket`: {@link resume} takes the
 * ticket once and gives back the parked request, which is checked again
 * in full; a denial answers `access_denied` to the redirect URI there, in
 * the request's response mode. A ticket decided in another session, or
 * for another client, is refused.
 *
 * The account center lists the grants (`consented_apps`) and revokes one
 * (`revoke_consent`): the next request of that client asks again.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Transaction } from 'sequelize';
import { QueryTypes, type SqlDatabase } from '../engine/sql/sql_database.ts';
import { runMigrations, type Migration } from '../engine/sql/migrate.ts';
import type { MemoryStore } from './memory_store.ts';
import type { SessionManager } from './sessions.ts';
import { tableOptions } from './sql_charset.ts';
import { isUniqueViolation } from './sql_conflicts.ts';

/** How long a parked request waits for the user's decision, seconds. */
export const CONSENT_TICKET_TTL_SECONDS = 600;
/** How long a decided request waits for the browser's return to `/authorize`, seconds. */
const DECIDED_TTL_SECONDS = 120;

export const CONSENT_MIGRATIONS: readonly Migration[] = [
  {
    id: '0001_oauth_consents',
    async up({ sequelize, transaction, dialect }) {
      await sequelize.query(
        `CREATE TABLE oauth_consents (
          user_id VARCHAR(36) NOT NULL,
          client_id VARCHAR(128) NOT NULL,
          scopes TEXT NOT NULL,
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL,
          PRIMARY KEY (user_id, client_id))${tableOptions(dialect)}`,
        { transaction },
      );
    },
  },
];

/** A user's remembered grant to one client. */
export interface ConsentGrant {
  client_id: string;
  scopes: string[];
  /** Unix seconds: first granted, and last widened. */
  created_at: number;
  updated_at: number;
}

/** Where grants live: SQL (`oauth_consents`, component `auth_consent`), as the client registry. */
export class SqlConsentStore {
  readonly #db: SqlDatabase;
  constructor(sequelize: SqlDatabase) {
    this.#db = sequelize;
  }
  async init(): Promise<void> {
    await runMigrations(this.#db, 'auth_consent', CONSENT_MIGRATIONS);
  }
  async get(userId: string, clientId: string): Promise<ConsentGrant | undefined> {
    return (await this.#select('SELECT * FROM oauth_consents WHERE user_id = ? AND client_id = ?', [userId, clientId]))[0];
  }
  list(userId: string): Promise<ConsentGrant[]> {
    return this.#select('SELECT * FROM oauth_consents WHERE user_id = ? ORDER BY created_at, client_id', [userId]);
  }
  /** Adds `scopes` to the user's grant to the client (creating it). */
  async widen(userId: string, clientId: string, scopes: readonly string[], now: number): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.get(userId, clientId);
      const next = JSON.stringify([...new Set([...(current?.scopes ?? []), ...scopes])].sort());
      try {
        if (current === undefined) {
          await this.#db.query('INSERT INTO oauth_consents (user_id, client_id, scopes, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', { replacements: [userId, clientId, next, now, now] });
        } else {
          await this.#db.query('UPDATE oauth_consents SET scopes = ?, updated_at = ? WHERE user_id = ? AND client_id = ?', { replacements: [next, now, userId, clientId] });
        }
        return;
      } catch (err) {
        // Two tabs granted at once: the other insert won; widen its row instead.
        if (!isUniqueViolation(err) || attempt > 0) throw err;
      }
    }
  }
  async delete(userId: string, clientId: string): Promise<boolean> {
    return Number(await this.#db.query('DELETE FROM oauth_consents WHERE user_id = ? AND client_id = ?', { replacements: [userId, clientId], type: QueryTypes.BULKDELETE })) > 0;
  }
  /** Removes every grant of a user (deletion, in its SQL transaction when given; deactivation). */
  async deleteUser(userId: string, transaction?: unknown): Promise<void> {
    await this.#db.query('DELETE FROM oauth_consents WHERE user_id = ?', { replacements: [userId], ...(transaction === undefined ? {} : { transaction: transaction as Transaction }) });
  }
  async #select(sql: string, replacements: unknown[]): Promise<ConsentGrant[]> {
    const rows = await this.#db.query<Record<string, unknown>>(sql, { replacements, type: QueryTypes.SELECT });
    return rows.map((r) => ({ client_id: String(r['client_id']), scopes: JSON.parse(String(r['scopes'])) as string[], created_at: Number(r['created_at']), updated_at: Number(r['updated_at']) }));
  }
}

/** A parked authorization request. */
interface Ticket {
  user_id: string;
  sid: string;
  client_id: string;
  client_name: string;
  scope: string[];
  params: [string, string][];
  decision: 'pending' | 'allow' | 'deny';
}

/** What `/authorize` does after the consent check. */
export type ConsentOutcome =
  | { kind: 'proceed' }
  | { kind: 'redirect'; location: string }
  | { kind: 'fail'; error: 'access_denied' | 'consent_required'; description: string };

/** A decided request taken back by `/authorize`. */
export interface ResumedRequest {
  params: Map<string, string>;
  decision: 'allow' | 'deny';
  userId: string;
  sid: string;
}

export interface ConsentServiceOptions {
  store: SqlConsentStore | undefined;
  memory: MemoryStore;
  sessions: Pick<SessionManager, 'fromCookie'>;
  nowSeconds: () => number;
  /** The consent page (`<issuer>/app/consent`); undefined without the login page: consent cannot be asked. */
  pageUrl: string | undefined;
  /** `<issuer>/authorize`, where a decided request returns. */
  authorizeUrl: string;
}

const digest = (ticket: string): string => `consent:${createHash('sha256').update(ticket, 'utf8').digest('base64url')}`;
const validTicket = (t: unknown): t is string => typeof t === 'string' && t.length > 0 && t.length <= 128;

/** The consent step of `/authorize`, its page's reads and decisions, and the account center's list of grants. */
export class ConsentService {
  readonly #o: ConsentServiceOptions;
  constructor(options: ConsentServiceOptions) {
    this.#o = options;
  }

  /**
   * The consent step for a signed-in user's valid request to `client`.
   * `resumed` is the request {@link resume} gave back, when this pass is the
   * browser's return from the consent page.
   */
  async gate(input: {
    client: { client_id: string; client_name: string; require_consent: boolean } | undefined;
    userId: string;
    sid: string;
    scope: readonly string[];
    prompt: ReadonlySet<string>;
    params: Map<string, string>;
    resumed: ResumedRequest | undefined;
  }): Promise<ConsentOutcome> {
    const { client, userId, sid, scope, prompt } = input;
    // A decided request is answered as decided, before anything else: a denial stands even if the client's
    // registration changed meanwhile. Decided in this browser session by this user, or not at all.
    if (input.resumed !== undefined) {
      if (input.resumed.userId !== userId || input.resumed.sid !== sid) return { kind: 'fail', error: 'access_denied', description: 'the consent was given in another session' };
      return input.resumed.decision === 'allow' ? { kind: 'proceed' } : { kind: 'fail', error: 'access_denied', description: 'the user denied the request' };
    }
    if (client === undefined || !client.require_consent) return { kind: 'proceed' };
    if (!prompt.has('consent')) {
      const grant = await this.#o.store?.get(userId, client.client_id);
      if (grant !== undefined && scope.every((s) => grant.scopes.includes(s))) return { kind: 'proceed' };
    }
    if (prompt.has('none')) return { kind: 'fail', error: 'consent_required', description: 'the user has not allowed this client these scopes' };
    if (this.#o.pageUrl === undefined || this.#o.store === undefined) return { kind: 'fail', error: 'consent_required', description: 'consent is required and this server has no consent page (--enable-login-page)' };
    const ticket = randomBytes(32).toString('base64url');
    const params = [...input.params].filter(([k]) => k !== 'consent_ticket');
    const parked: Ticket = { user_id: userId, sid, client_id: client.client_id, client_name: client.client_name, scope: [...scope], params, decision: 'pending' };
    await this.#o.memory.set(digest(ticket), JSON.stringify(parked), CONSENT_TICKET_TTL_SECONDS);
    const page = new URL(this.#o.pageUrl);
    page.searchParams.set('ticket', ticket);
    return { kind: 'redirect', location: page.href };
  }

  /** Takes back, once, a decided request of `clientId` (the browser's return to `/authorize`); undefined when unknown, pending or another client's. */
  async resume(ticket: string, clientId: string): Promise<ResumedRequest | undefined> {
    if (!validTicket(ticket)) return undefined;
    const key = digest(ticket);
    const raw = await this.#o.memory.get(key);
    if (raw === undefined) return undefined;
    const t = JSON.parse(raw) as Ticket;
    if (t.decision === 'pending' || t.client_id !== clientId) return undefined;
    if ((await this.#o.memory.del(key)) !== 1) return undefined;
    return { params: new Map(t.params), decision: t.decision, userId: t.user_id, sid: t.sid };
  }

  /** The pending request of a ticket as the consent page shows it, when it belongs to the session of `cookie`. */
  async pending(ticket: unknown, cookie: string | undefined): Promise<{ client_id: string; client_name: string; scope: string[]; redirect_uri: string; ui_locales: string | undefined } | undefined> {
    const owned = await this.#owned(ticket, cookie);
    if (owned === undefined || owned.ticket.decision !== 'pending') return undefined;
    const t = owned.ticket;
    const params = new Map(t.params);
    return { client_id: t.client_id, client_name: t.client_name, scope: t.scope, redirect_uri: params.get('redirect_uri') ?? '', ui_locales: params.get('ui_locales') };
  }

  /**
   * Records the user's decision on a pending ticket of their session: an
   * allowed request's scopes join the remembered grant. Returns where the
   * browser goes next (`/authorize` with the ticket) with what was decided
   * (for the audit log), or undefined for an unknown, decided or foreign
   * ticket.
   */
  async decide(
    ticket: unknown,
    cookie: string | undefined,
    allow: boolean,
  ): Promise<{ location: string; user_id: string; client_id: string; scope: string[] } | undefined> {
    const owned = await this.#owned(ticket, cookie);
    if (owned === undefined || owned.ticket.decision !== 'pending') return undefined;
    const t = owned.ticket;
    // One decision per ticket, also from two tabs: the pending record is taken before the new one is written.
    if ((await this.#o.memory.del(owned.key)) !== 1) return undefined;
    if (allow) await this.#o.store?.widen(t.user_id, t.client_id, t.scope, this.#o.nowSeconds());
    await this.#o.memory.set(owned.key, JSON.stringify({ ...t, decision: allow ? 'allow' : 'deny' } satisfies Ticket), DECIDED_TTL_SECONDS);
    const back = new URL(this.#o.authorizeUrl);
    back.searchParams.set('client_id', t.client_id);
    back.searchParams.set('consent_ticket', ticket as string);
    return { location: back.href, user_id: t.user_id, client_id: t.client_id, scope: [...t.scope] };
  }

  /** The user's remembered grants. */
  async list(userId: string): Promise<ConsentGrant[]> {
    return (await this.#o.store?.list(userId)) ?? [];
  }

  /** Forgets the user's grant to a client; true when there was one. */
  async revoke(userId: string, clientId: string): Promise<boolean> {
    return (await this.#o.store?.delete(userId, clientId)) ?? false;
  }

  async #owned(ticket: unknown, cookie: string | undefined): Promise<{ key: string; ticket: Ticket } | undefined> {
    if (!validTicket(ticket) || cookie === undefined) return undefined;
    const key = digest(ticket);
    const raw = await this.#o.memory.get(key);
    if (raw === undefined) return undefined;
    const t = JSON.parse(raw) as Ticket;
    const session = await this.#o.sessions.fromCookie(cookie);
    return session !== undefined && session.sid === t.sid && session.user_id === t.user_id ? { key, ticket: t } : undefined;
  }
}
