/**
 * One statement per graph level: the point lookups (`readUserTuples`) and
 * forward lookups (`readObjectRelations`, all users and usersets only) that
 * the evaluator issues in the same tick are answered by one SQL statement,
 * a `UNION ALL` of one branch per kind, each row tagged with its branch.
 *
 * The evaluator's request reader (engine/reader.ts) already coalesces the
 * reads of one level into at most three store calls made together; this
 * turns those three calls into one round trip. Each branch keeps the shape
 * each backend plans as index lookups (see docs/storage.md, "Reads").
 * {@link answerLevel} runs the statement for the store and hands each call
 * its tuples.
 */
import type { ObjectRelationKey, StoredTuple, UserKind, UserTupleKey } from '../store.ts';
import type { SqlDialect } from './migrate.ts';
import { byUser, chunks, condition, expiryText, live } from './sql_rows.ts';

/** The names of the columns a level statement selects, in order (the tag `q`, then {@link ROW_COLUMNS}). */
export const LEVEL_COLUMNS = ['q', 'object_type', 'object_id', 'relation', '_user', 'condition_name', 'condition_context', 'revision', 'expires_at'] as const;

/** The columns every branch returns after its tag `q`. */
export const ROW_COLUMNS = 't.object_type, t.object_id, t.relation, t._user, t.condition_name, t.condition_context, t.revision, t.expires_at';

const PK = ['object_type', 'object_id', 'relation', '_user'] as const;
const OR_KEY = ['object_type', 'object_id', 'relation'] as const;

/**
 * A branch: point lookups (`q` 0), forward lookups of all users (1) or of
 * usersets only (2), or tupleset chains (3, {@link chainText}) followed at most
 * `depth` hops.
 */
export type Branch =
  | { kind: 'point'; keys: readonly UserTupleKey[] }
  | { kind: UserKind; keys: readonly ObjectRelationKey[] }
  | { kind: 'chain'; keys: readonly ObjectRelationKey[]; depth: number };

export function branchTag(b: Branch): 0 | 1 | 2 | 3 {
  return b.kind === 'point' ? 0 : b.kind === 'all' ? 1 : b.kind === 'usersets' ? 2 : 3;
}

/** Rows a chain branch returns at most; a chain that reaches it is not used (its reads go level by level). */
export const CHAIN_ROWS = 1000;

/**
 * A chain branch over `n` start keys (PostgreSQL and SQLite): every tuple on
 * each start key's object relation `type:id#R`, then on `T:i#R` for every
 * plain-object user `T:i` of a tuple already found, up to `depth` hops (a
 * recursive CTE `c`), with one row of NULL user for an object relation
 * reached that holds no tuple, so that the caller knows it is empty. A
 * `viewer from parent` chain of five folders is one statement instead of
 * five levels. Its columns are those of every branch; the recursion must be
 * the statement's `WITH` clause ({@link chainWith}).
 */
function chainWith(dialect: SqlDialect, n: number): string {
  // The start keys as one VALUES list (SQLite allows 500 terms in a compound SELECT, not in VALUES). PostgreSQL types
  // a CTE's columns from its first part: the same collation as the columns compared ("C").
  const cast = dialect === 'postgres' ? '::text COLLATE "C"' : '';
  const start = `SELECT k.column1${cast}, k.column2${cast}, k.column3${cast}, 0 FROM (VALUES ${tupleList(n, 3)}) AS k${dialect === 'postgres' ? '(column1, column2, column3)' : ''}`;
  const type = dialect === 'postgres' ? "split_part(t._user, ':', 1)" : "substr(t._user, 1, instr(t._user, ':') - 1)";
  const id = dialect === 'postgres' ? "substr(t._user, strpos(t._user, ':') + 1)" : "substr(t._user, instr(t._user, ':') + 1)";
  // SQLite: CROSS JOIN keeps the chain outermost; with a plain JOIN each step scanned the store's every tuple (12.7 s for a
  // five-folder chain at 1 M tuples) instead of looking the chain's objects up.
  const join = dialect === 'sqlite' ? 'CROSS JOIN' : 'JOIN';
  return `WITH RECURSIVE c(object_type, object_id, relation, depth) AS (${start} UNION SELECT ${type}, ${id}, c.relation, c.depth + 1 FROM c ${join} fga_tuple t ON t.store = ? AND t.object_type = c.object_type AND t.object_id = c.object_id AND t.relation = c.relation WHERE c.depth < ? AND t.user_kind = 'o') `;
}

function chainText(): string {
  return `SELECT * FROM (SELECT 3 AS q, n.object_type, n.object_id, n.relation, t._user, t.condition_name, t.condition_context, t.revision, t.expires_at FROM (SELECT DISTINCT object_type, object_id, relation FROM c) n LEFT JOIN fga_tuple t ON t.store = ? AND t.object_type = n.object_type AND t.object_id = n.object_id AND t.relation = n.relation LIMIT ${CHAIN_ROWS}) ch`;
}

function tupleList(n: number, width: number): string {
  const row = `(${new Array<string>(width).fill('?').join(', ')})`;
  return new Array<string>(n).fill(row).join(', ');
}

/** `(cols) IN (…)`, the form MySQL/MariaDB plan as lookups of each key. */
function inList(columns: readonly string[], n: number): string {
  const cols = columns.map((c) => `t.${c}`);
  if (n === 1) return cols.map((c) => `${c} = ?`).join(' AND ');
  // MariaDB plans an OR of equalities over many keys as a scan (300 ms for 100 keys at 50 k rows); a row-value IN list as range lookups (7 ms).
  return `(${cols.join(', ')}) IN (${tupleList(n, columns.length)})`;
}

/** The SQL of a branch of kind `kind` over `n` keys, selecting `q` and {@link ROW_COLUMNS}. */
function branchText(dialect: SqlDialect, kind: Branch['kind'], n: number): string {
  if (kind === 'chain') return chainText();
  const q = kind === 'point' ? 0 : kind === 'all' ? 1 : 2;
  if (dialect === 'sqlite') return sqliteBranch(q, kind, n);
  if (kind === 'point') {
    if (dialect === 'postgres') {
      // A row-value IN list is planned as a sequential scan by PostgreSQL (170 ms for 500 keys at 50 k rows); a VALUES join as a lookup per key.
      const on = PK.map((c) => `t.${c} = k.${c}`).join(' AND ');
      return `SELECT ${q} AS q, ${ROW_COLUMNS} FROM (VALUES ${tupleList(n, 4)}) AS k(${PK.join(', ')}) JOIN fga_tuple t ON ${on} AND t.store = ?`;
    }
    return `SELECT ${q} AS q, ${ROW_COLUMNS} FROM fga_tuple t WHERE ${inList(PK, n)} AND t.store = ?`;
  }
  const kindFilter = kind === 'usersets' ? " AND t.user_kind = 's'" : '';
  if (dialect === 'postgres') {
    // A lateral lookup per key: with a plain join PostgreSQL may pick a scan of the whole table (3.8 ms for one key, 190 ms for 50, at 50 k rows).
    return `SELECT ${q} AS q, ${ROW_COLUMNS} FROM (VALUES ${tupleList(n, 3)}) AS k(${OR_KEY.join(', ')}) CROSS JOIN LATERAL (SELECT * FROM fga_tuple t WHERE t.object_type = k.object_type AND t.object_id = k.object_id AND t.relation = k.relation AND t.store = ?${kindFilter}) t`;
  }
  // No ORDER BY: PostgreSQL would then walk the whole primary key in order instead of looking the keys up. Groups are sorted by the caller.
  return `SELECT ${q} AS q, ${ROW_COLUMNS} FROM fga_tuple t WHERE ${inList(OR_KEY, n)} AND t.store = ?${kindFilter}`;
}

/**
 * A SQLite branch. Several keys drive lookups from a `VALUES` list (`CROSS
 * JOIN` keeps it outermost): `IN (VALUES …)` first built a temporary index of
 * the keys, 10-15% more of a cold 5-hop check's SQL time (a repeated key
 * repeats rows here, so keys are deduplicated). Usersets: their keys from the
 * partial index fga_tuple_usersets (migration 0003), then each row by primary
 * key; testing user_kind on the primary key decodes every row of the object
 * relation (13 µs for a group of 80 members at 1 M tuples, 3 µs this way).
 * Without the index (migrations not applied) both sides use the primary key,
 * with the same rows.
 */
function sqliteBranch(q: 0 | 1 | 2, kind: Exclude<Branch['kind'], 'chain'>, n: number): string {
  const cols = kind === 'point' ? PK : OR_KEY;
  const src = kind === 'usersets' ? 'u' : 't';
  const match = cols.map((c, i) => `${src}.${c} = ${n === 1 ? '?' : `k.column${i + 1}`}`).join(' AND ');
  const keys = n === 1 ? '' : `(VALUES ${tupleList(n, cols.length)}) AS k CROSS JOIN `;
  if (kind !== 'usersets') return `SELECT ${q} AS q, ${ROW_COLUMNS} FROM ${keys}fga_tuple t WHERE ${match} AND t.store = ?`;
  const row = PK.map((c) => `t.${c} = u.${c}`).join(' AND ');
  return `SELECT ${q} AS q, ${ROW_COLUMNS} FROM ${keys}fga_tuple u CROSS JOIN fga_tuple t WHERE ${match} AND u.store = ? AND u.user_kind = 's' AND t.store = u.store AND ${row}`;
}

/**
 * Statement texts by shape (dialect, and each branch's kind and key count).
 * Building a text took about a tenth of a cold SQLite check's time, and a
 * reused string keeps its hash, so the driver's statement cache finds it at
 * once. Shapes are few: the key counts of a level are bounded by the batch size.
 */
const texts = new Map<string, string>();
const TEXTS_MAX = 2000;

/** One statement for all `branches` (each non-empty) of store `store`, and its parameters. */
export function levelSql(dialect: SqlDialect, store: string, branches: readonly Branch[]): { sql: string; params: (string | number)[] } {
  let shape: string = dialect;
  for (const b of branches) shape += ` ${b.kind} ${b.keys.length}`;
  let sql = texts.get(shape);
  const chain = branches.find((b) => b.kind === 'chain');
  if (sql === undefined) {
    sql = (chain === undefined ? '' : chainWith(dialect, chain.keys.length)) + branches.map((b) => branchText(dialect, b.kind, b.keys.length)).join(' UNION ALL ');
    if (texts.size >= TEXTS_MAX) texts.clear();
    texts.set(shape, sql);
  }
  const params: (string | number)[] = [];
  if (chain !== undefined) {
    // The WITH clause comes first: its start keys, the store and the depth.
    for (const k of chain.keys) params.push(k.objectType, k.objectId, k.relation);
    params.push(store, chain.depth);
  }
  for (const b of branches) {
    if (b.kind === 'point') for (const k of b.keys) params.push(k.objectType, k.objectId, k.relation, k.user);
    else if (b.kind !== 'chain') for (const k of b.keys) params.push(k.objectType, k.objectId, k.relation);
    // Each branch names the store once, after its keys.
    params.push(store);
  }
  return { sql, params };
}

/** A point, forward or chain read waiting for its level's statement. */
export interface LevelRead {
  branch: Branch;
  /**
   * Receives the matching tuples by key (`type\0id\0relation[\0user]`), each
   * group ordered by user; a chain read, an entry (possibly empty) for every
   * object relation reached, or `undefined` when the chain reached
   * {@link CHAIN_ROWS} rows.
   */
  resolve: (found: Map<string, StoredTuple[]> | undefined) => void;
  reject: (err: unknown) => void;
}

/**
 * Answers the reads of one level: one statement when every branch fits in
 * `batch` keys (one branch per kind), else one per branch and batch.
 * `query` runs a statement and returns its rows as arrays of
 * {@link LEVEL_COLUMNS}. Every read is settled (a failed statement rejects
 * them all); resolves to the number of statements run.
 */
export async function answerLevel(
  dialect: SqlDialect,
  batch: number,
  store: string,
  pending: readonly LevelRead[],
  query: (sql: string, params: (string | number)[]) => Promise<unknown[][]>,
  clock: () => number = Date.now,
): Promise<number> {
  // Read once, at the first expiring row: rows whose expiry has passed by then are left out.
  let now: number | undefined;
  const kinds: (Branch['kind'] | undefined)[] = [undefined, undefined, undefined, undefined];
  const keys: (UserTupleKey | ObjectRelationKey)[][] = [[], [], [], []];
  let depth = 0;
  for (const p of pending) {
    const tag = branchTag(p.branch);
    kinds[tag] = p.branch.kind;
    for (const k of p.branch.keys) keys[tag]!.push(k);
    if (p.branch.kind === 'chain') depth = Math.max(depth, p.branch.depth);
  }
  const branches: Branch[] = [];
  // A repeated key repeats rows in a VALUES join (PostgreSQL, SQLite), or in two statements when a branch is split;
  // MySQL's IN list matches each row once.
  const dedupe = (dialect !== 'mysql' && dialect !== 'mariadb') || keys.some((k) => k.length > batch);
  for (let tag = 0; tag < 4; tag++) {
    if (kinds[tag] !== undefined) branches.push({ kind: kinds[tag], keys: dedupe || tag === 3 ? distinct(keys[tag]!) : keys[tag]!, depth } as Branch);
  }
  const statements: Branch[][] = branches.every((b) => b.keys.length <= batch)
    ? [branches]
    : branches.flatMap((b) => chunks(b.keys as readonly (UserTupleKey | ObjectRelationKey)[], batch).map((keys) => [{ kind: b.kind, keys, depth } as Branch]));
  const found: Map<string, StoredTuple[]>[] = [new Map(), new Map(), new Map(), new Map()];
  let chainRows = 0;
  let chainCut = false;
  let run = 0;
  try {
    for (const st of statements) {
      const { sql, params } = levelSql(dialect, store, st);
      run++;
      chainRows = 0;
      for (const r of await query(sql, params)) {
        const tag = Number(r[0]);
        const type = r[1] as string;
        const id = r[2] as string;
        const relation = r[3] as string;
        const user = r[4] as string | null;
        const m = found[tag]!;
        const k = tag === 0 ? `${type}\u0000${id}\u0000${relation}\u0000${user}` : `${type}\u0000${id}\u0000${relation}`;
        if (tag === 3) chainRows++;
        // A chain's object relation with no tuple (or none unexpired): known to be empty.
        if (user === null || (r[8] !== null && r[8] !== undefined && !live(r[8] as number | string, now ??= clock()))) {
          if (tag === 3 && !m.has(k)) m.set(k, []);
          continue;
        }
        const t: StoredTuple = { object: `${type}:${id}`, relation, user, revision: Number(r[7]) };
        const c = condition(r[5] as string | null, r[6] as string | null);
        if (c !== undefined) t.condition = c;
        if (r[8] !== null && r[8] !== undefined) t.expires_at = expiryText(r[8] as number | string)!;
        const list = m.get(k);
        if (list === undefined) m.set(k, [t]);
        else list.push(t);
      }
      if (chainRows >= CHAIN_ROWS) chainCut = true;
    }
  } catch (err) {
    for (const p of pending) p.reject(err);
    return run;
  }
  for (const m of found) for (const list of m.values()) if (list.length > 1) list.sort(byUser);
  for (const p of pending) {
    const tag = branchTag(p.branch);
    p.resolve(tag === 3 && chainCut ? undefined : found[tag]!);
  }
  return run;
}

function distinct(keys: (UserTupleKey | ObjectRelationKey)[]): (UserTupleKey | ObjectRelationKey)[] {
  if (keys.length < 2) return keys;
  const seen = new Set<string>();
  const out: (UserTupleKey | ObjectRelationKey)[] = [];
  for (const k of keys) {
    const id = 'user' in k ? `${k.objectType}\u0000${k.objectId}\u0000${k.relation}\u0000${k.user}` : `${k.objectType}\u0000${k.objectId}\u0000${k.relation}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(k);
  }
  return out;
}
