/** Test fixtures of the identity tests: a service on a fresh database, keys, a tiny permission engine. */
import { generateKeyPairSync } from 'node:crypto';
import { QueryTypes, type SqlDatabase } from '../../engine/sql/sql_database.ts';
import { openSequelize } from '../../engine/sql/sqlite_sequelize.ts';
import { AuthService, InProcessMemoryStore, type AuthOptions, type DynamoDatabase, type MainDatabase, type MemoryStore, sqlDatabase, type OtpDelivery, type PermissionEngine, type WireTuple } from '../../auth/index.ts';
import { openTestMain, type MainBackend } from '../helpers/main_databases.ts';

export const ISSUER = 'http://127.0.0.1:8080';
export const CLIENT_ID = 'test-client';
export const STRONG_PASSWORD = 'correct horse battery';

/** A settable clock (milliseconds). */
export function manualClock(start = Date.UTC(2026, 0, 1)): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

export interface ServiceFixture {
  auth: AuthService;
  backend: MainBackend;
  /** The SQL connection (SQL backends; undefined on DynamoDB). */
  sequelize: SqlDatabase | undefined;
  /** The DynamoDB client (DynamoDB only). */
  dynamo: DynamoDatabase | undefined;
  /** The main database the service runs on. */
  database: MainDatabase;
  store: MemoryStore;
  close(): Promise<void>;
}

export async function makeService(
  options: Partial<AuthOptions> = {},
  extra: { backend?: MainBackend; store?: MemoryStore; engine?: PermissionEngine; databaseUrl?: string; otpDelivery?: OtpDelivery } = {},
): Promise<ServiceFixture> {
  const main = extra.databaseUrl === undefined ? await openTestMain(extra.backend ?? 'sqlite', { pool: { max: 25 } }) : undefined;
  const sequelize: SqlDatabase | undefined = main === undefined ? openSequelize(extra.databaseUrl!, { logging: false, pool: { max: 25 } }) : main.sequelize;
  const store = extra.store ?? new InProcessMemoryStore(options.now === undefined ? {} : { now: options.now });
  const auth = await AuthService.create(
    {
      clientId: CLIENT_ID,
      issuer: ISSUER,
      jwt: { type: 'HS256', secret: 'a-test-secret-of-enough-length-0123456789' },
      bcryptCost: 4,
      roles: ['user', 'admin', 'editor'],
      defaultRoles: ['user'],
      protectedRoles: ['admin'],
      ...options,
    },
    { ...(main === undefined ? { sequelize } : { database: main.database }), memoryStore: store, engine: extra.engine, otpDelivery: extra.otpDelivery },
  );
  return {
    auth,
    backend: main?.backend ?? 'sqlite',
    sequelize,
    dynamo: main?.dynamo,
    database: main?.database ?? sqlDatabase(sequelize!),
    store,
    async close() {
      if (main === undefined) await sequelize?.close();
      else await main.close();
      if (extra.store === undefined) await store.close();
    },
  };
}

/** PEM key pairs for the asymmetric JWT algorithms. */
export function pemPair(alg: string): { privateKey: string; publicKey: string } {
  if (alg.startsWith('RS') || alg.startsWith('PS')) {
    return generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
  }
  const curve = alg === 'ES256' ? 'P-256' : alg === 'ES384' ? 'P-384' : 'P-521';
  return generateKeyPairSync('ec', {
    namedCurve: curve,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
}

/**
 * A deliberately tiny engine for service-level tests: direct tuples only
 * (`type:id#relation@user`), plus contextual tuples per check.
 */
export class DirectTupleEngine implements PermissionEngine {
  readonly tuples = new Set<string>();
  readonly types = new Map<string, string[]>([
    ['document', ['viewer', 'editor']],
    ['folder', ['viewer']],
  ]);
  checks = 0;

  add(user: string, relation: string, object: string): void {
    this.tuples.add(`${object}#${relation}@${user}`);
  }

  async batchCheck(requests: ReadonlyArray<{ user: string; relation: string; object: string; contextualTuples?: readonly WireTuple[] }>): Promise<boolean[]> {
    return requests.map((r) => this.check(r));
  }

  /** Answered at once, as an engine answers a check it has at hand. */
  check(r: { user: string; relation: string; object: string; contextualTuples?: readonly WireTuple[] }): boolean {
    this.checks++;
    const key = `${r.object}#${r.relation}@${r.user}`;
    return this.tuples.has(key) || (r.contextualTuples ?? []).some((t) => `${t.object}#${t.relation}@${t.user}` === key);
  }

  async listObjects(request: { user: string; relation: string; type: string; limit: number }): Promise<{ objects: string[]; truncated: boolean; undecided: [] }> {
    const out: string[] = [];
    for (const t of this.tuples) {
      const [objRel, user] = t.split('@') as [string, string];
      const [object, relation] = objRel.split('#') as [string, string];
      if (user === request.user && relation === request.relation && object.startsWith(`${request.type}:`)) out.push(object);
    }
    out.sort();
    return { objects: out.slice(0, request.limit), truncated: out.length > request.limit, undecided: [] };
  }

  async listObjectsPage(request: { user: string; relation: string; type: string; pageSize: number; continuationToken: string }): Promise<{ objects: string[]; continuationToken: string; revision: number; undecided: [] }> {
    const all = (await this.listObjects({ ...request, limit: Number.MAX_SAFE_INTEGER })).objects;
    const start = request.continuationToken === '' ? 0 : all.findIndex((o) => o > request.continuationToken);
    const page = start < 0 ? [] : all.slice(start, start + request.pageSize);
    const more = start >= 0 && start + page.length < all.length;
    return { objects: page, continuationToken: more ? page[page.length - 1]! : '', revision: 0, undecided: [] };
  }

  async listRelations(request: { user: string; object: string }): Promise<{ relations: string[]; undecided: [] }> {
    const type = request.object.slice(0, request.object.indexOf(':'));
    return { relations: (this.types.get(type) ?? []).filter((relation) => this.check({ user: request.user, relation, object: request.object })), undecided: [] };
  }

  async relationsByType(): Promise<ReadonlyMap<string, readonly string[]>> {
    return this.types;
  }
}

/** `{code, reason}` of a rejection, for assertions. */
export async function errorOf(p: unknown): Promise<{ code?: string; reason?: string; message?: string; details?: Record<string, unknown> }> {
  try {
    await p;
  } catch (err) {
    return err as { code?: string; reason?: string; message?: string };
  }
  throw new Error('expected a rejection');
}

/**
 * The stored rows of a per-user table (`otps`, `authenticators`) of one user,
 * read under the stores: SQL rows, or DynamoDB items (a missing attribute
 * reads as null, as SQL's NULL).
 */
export async function userRows(f: ServiceFixture, table: 'otps' | 'authenticators', userId: string): Promise<Array<Record<string, unknown>>> {
  if (f.sequelize) {
    return f.sequelize.query<Record<string, unknown>>(`SELECT * FROM ${table} WHERE user_id = ?`, { replacements: [userId], type: QueryTypes.SELECT });
  }
  const items = await f.dynamo!.query(table, { pk: ['pk', userId] });
  return items.map((i) => ({ verified_at: null, last_time_step: null, ...i }));
}
