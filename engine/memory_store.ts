/**
 * An in-memory {@link TupleStore}: the default store of the engine, of tests
 * and of the `memory` FGA store setting. Data lives in the process and is lost
 * when it exits.
 *
 * Every read is an index lookup, never a scan: a forward index keyed by
 * `object#relation` (with a separate userset-only index, so Check never walks
 * direct users to find usersets) and a reverse index keyed by
 * `object_type#relation@user`.
 */
import { LatchkeyError } from './errors.ts';
import type { StoredAuthorizationModel } from './model.ts';
import type {
  ObjectRelationKey,
  Page,
  ReadFilter,
  StoredTuple,
  TupleChange,
  TupleKey,
  TupleStore,
  UserKind,
  UserTupleKey,
} from './store.ts';

const SEP = '\u0000';
const EMPTY: readonly StoredTuple[] = [];

function objectRelationKey(objectType: string, objectId: string, relation: string): string {
  return `${objectType}:${objectId}#${relation}`;
}

function tupleId(t: TupleKey): string {
  return `${t.object}${SEP}${t.relation}${SEP}${t.user}`;
}

function splitObject(object: string): [string, string] {
  const i = object.indexOf(':');
  return [object.slice(0, i), object.slice(i + 1)];
}

function byUser(a: StoredTuple, b: StoredTuple): number {
  return a.user < b.user ? -1 : a.user > b.user ? 1 : 0;
}

/** Encodes a continuation token naming the last key returned. */
export function encodeToken(value: string): string {
  return Buffer.from(JSON.stringify({ k: value }), 'utf8').toString('base64url');
}

/** Decodes a token made by {@link encodeToken}; `invalid_argument` for anything else. */
export function decodeToken(token: string): string {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (parsed !== null && typeof parsed === 'object' && typeof (parsed as { k?: unknown }).k === 'string') {
      return (parsed as { k: string }).k;
    }
  } catch {
    // fall through to the error below
  }
  throw new LatchkeyError('invalid_argument', 'invalid continuation token', { reason: 'invalid_continuation_token' });
}

function copyTuple(t: TupleKey, revision: number): StoredTuple {
  const out: StoredTuple = { object: t.object, relation: t.relation, user: t.user, revision };
  if (t.condition !== undefined) {
    out.condition = t.condition.context === undefined
      ? { name: t.condition.name }
      : { name: t.condition.name, context: structuredClone(t.condition.context) };
  }
  return out;
}

function keyOnly(t: TupleKey): TupleKey {
  const out: TupleKey = { object: t.object, relation: t.relation, user: t.user };
  if (t.condition !== undefined) out.condition = t.condition;
  return out;
}

/** A {@link TupleStore} kept in process memory. */
export class MemoryStore implements TupleStore {
  #models: StoredAuthorizationModel[] = [];
  #tuples = new Map<string, StoredTuple>();
  #forward = new Map<string, Map<string, StoredTuple>>();
  #forwardUsersets = new Map<string, Map<string, StoredTuple>>();
  #reverse = new Map<string, Map<string, StoredTuple>>();
  #changes: TupleChange[] = [];
  #revision = 0;
  #sorted: { revision: number; ids: string[] } | undefined;
  #closed = false;
  #now: () => number;

  /** @param options.now clock for changelog timestamps (defaults to `Date.now`). */
  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  #open(): void {
    if (this.#closed) throw new LatchkeyError('unavailable', 'store is closed', { reason: 'store_closed' });
  }

  async writeModel(model: StoredAuthorizationModel): Promise<void> {
    this.#open();
    const last = this.#models.at(-1);
    if (last !== undefined && last.id >= model.id) {
      throw new LatchkeyError('internal', 'model ids must increase', { reason: 'model_id_not_increasing' });
    }
    this.#models.push(structuredClone(model));
  }

  async readModel(id: string): Promise<StoredAuthorizationModel | undefined> {
    this.#open();
    const found = this.#models.find((m) => m.id === id);
    return found === undefined ? undefined : structuredClone(found);
  }

  async readLatestModel(): Promise<StoredAuthorizationModel | undefined> {
    this.#open();
    const last = this.#models.at(-1);
    return last === undefined ? undefined : structuredClone(last);
  }

  /** The latest model id, synchronously (`LatestModelHint` in engine/engine_check.ts). */
  knownLatestModelId(): string | undefined {
    return this.#closed ? undefined : this.#models.at(-1)?.id;
  }

  async latestModelId(): Promise<string | undefined> {
    this.#open();
    return this.#models.at(-1)?.id;
  }

  async listModels(options: { pageSize: number; continuationToken?: string | undefined }): Promise<Page<StoredAuthorizationModel>> {
    this.#open();
    const before = options.continuationToken === undefined ? undefined : decodeToken(options.continuationToken);
    const newestFirst = [...this.#models].reverse().filter((m) => before === undefined || m.id < before);
    const items = newestFirst.slice(0, options.pageSize).map((m) => structuredClone(m));
    const more = newestFirst.length > options.pageSize;
    return { items, continuationToken: more ? encodeToken(items.at(-1)!.id) : undefined };
  }

  async write(deletes: readonly TupleKey[], writes: readonly TupleKey[]): Promise<number> {
    this.#open();
    // Check every precondition before touching anything: all or nothing.
    const deleted = new Set<string>();
    for (const t of deletes) {
      const id = tupleId(t);
      if (!this.#tuples.has(id) || deleted.has(id)) {
        throw new LatchkeyError('not_found', `cannot delete a tuple which does not exist: ${t.object}#${t.relation}@${t.user}`, {
          reason: 'tuple_not_found',
          details: { tuple: keyOnly(t) },
        });
      }
      deleted.add(id);
    }
    const written = new Set<string>();
    for (const t of writes) {
      const id = tupleId(t);
      if ((this.#tuples.has(id) && !deleted.has(id)) || written.has(id)) {
        throw new LatchkeyError('already_exists', `cannot write a tuple which already exists: ${t.object}#${t.relation}@${t.user}`, {
          reason: 'tuple_exists',
          details: { tuple: keyOnly(t) },
        });
      }
      written.add(id);
    }
    const revision = this.#revision + 1;
    const timestamp = this.#now();
    for (const t of deletes) {
      const stored = this.#tuples.get(tupleId(t))!;
      this.#unindex(stored);
      this.#changes.push({ revision, operation: 'delete', tuple: { object: t.object, relation: t.relation, user: t.user }, timestamp });
    }
    for (const t of writes) {
      const stored = copyTuple(t, revision);
      this.#index(stored);
      this.#changes.push({ revision, operation: 'write', tuple: keyOnly(copyTuple(t, revision)), timestamp });
    }
    this.#revision = revision;
    return revision;
  }

  #index(t: StoredTuple): void {
    this.#tuples.set(tupleId(t), t);
    const [type, id] = splitObject(t.object);
    const fk = objectRelationKey(type, id, t.relation);
    let f = this.#forward.get(fk);
    if (f === undefined) this.#forward.set(fk, (f = new Map()));
    f.set(t.user, t);
    if (t.user.includes('#')) {
      let u = this.#forwardUsersets.get(fk);
      if (u === undefined) this.#forwardUsersets.set(fk, (u = new Map()));
      u.set(t.user, t);
    }
    const rk = `${type}#${t.relation}@${t.user}`;
    let r = this.#reverse.get(rk);
    if (r === undefined) this.#reverse.set(rk, (r = new Map()));
    r.set(id, t);
  }

  #unindex(t: StoredTuple): void {
    this.#tuples.delete(tupleId(t));
    const [type, id] = splitObject(t.object);
    const fk = objectRelationKey(type, id, t.relation);
    const f = this.#forward.get(fk);
    if (f !== undefined) {
      f.delete(t.user);
      if (f.size === 0) this.#forward.delete(fk);
    }
    const u = this.#forwardUsersets.get(fk);
    if (u !== undefined) {
      u.delete(t.user);
      if (u.size === 0) this.#forwardUsersets.delete(fk);
    }
    const rk = `${type}#${t.relation}@${t.user}`;
    const r = this.#reverse.get(rk);
    if (r !== undefined) {
      r.delete(id);
      if (r.size === 0) this.#reverse.delete(rk);
    }
  }

  async readUserTuples(keys: readonly UserTupleKey[]): Promise<(StoredTuple | undefined)[]> {
    this.#open();
    return keys.map((k) => this.#forward.get(objectRelationKey(k.objectType, k.objectId, k.relation))?.get(k.user));
  }

  /** Synchronous point read (the evaluator's fast path, see `SyncTupleSource` in engine/reader.ts). */
  readUserTupleSync(objectType: string, objectId: string, relation: string, user: string): StoredTuple | undefined {
    this.#open();
    return this.#forward.get(objectRelationKey(objectType, objectId, relation))?.get(user);
  }

  /** Synchronous forward read, unordered. */
  readObjectRelationSync(objectType: string, objectId: string, relation: string, kind: UserKind): Iterable<StoredTuple> {
    this.#open();
    const m = (kind === 'usersets' ? this.#forwardUsersets : this.#forward).get(objectRelationKey(objectType, objectId, relation));
    return m === undefined ? EMPTY : m.values();
  }

  async readObjectRelations(keys: readonly ObjectRelationKey[], kind: UserKind): Promise<StoredTuple[][]> {
    this.#open();
    const index = kind === 'usersets' ? this.#forwardUsersets : this.#forward;
    return keys.map((k) => {
      const m = index.get(objectRelationKey(k.objectType, k.objectId, k.relation));
      return m === undefined ? [] : [...m.values()].sort(byUser);
    });
  }

  async readStartingWithUsers(query: {
    objectType: string;
    relation: string;
    users: readonly string[];
    objectIds?: readonly string[];
  }): Promise<StoredTuple[]> {
    this.#open();
    const out: StoredTuple[] = [];
    const only = query.objectIds === undefined ? undefined : new Set(query.objectIds);
    for (const user of new Set(query.users)) {
      const m = this.#reverse.get(`${query.objectType}#${query.relation}@${user}`);
      if (m === undefined) continue;
      if (only !== undefined && only.size < m.size) {
        for (const id of only) {
          const t = m.get(id);
          if (t !== undefined) out.push(t);
        }
      } else {
        for (const [id, t] of m) if (only === undefined || only.has(id)) out.push(t);
      }
    }
    return out.sort((a, b) => (a.object < b.object ? -1 : a.object > b.object ? 1 : byUser(a, b)));
  }

  #sortedIds(): string[] {
    if (this.#sorted === undefined || this.#sorted.revision !== this.#revision) {
      this.#sorted = { revision: this.#revision, ids: [...this.#tuples.keys()].sort() };
    }
    return this.#sorted.ids;
  }

  async readPage(filter: ReadFilter, options: { pageSize: number; continuationToken?: string | undefined }): Promise<Page<StoredTuple>> {
    this.#open();
    const after = options.continuationToken === undefined ? undefined : decodeToken(options.continuationToken);
    const matches = (t: StoredTuple): boolean => {
      if (filter.relation !== undefined && t.relation !== filter.relation) return false;
      if (filter.user !== undefined && t.user !== filter.user) return false;
      if (filter.objectType !== undefined) {
        const [type, id] = splitObject(t.object);
        if (type !== filter.objectType) return false;
        if (filter.objectId !== undefined && id !== filter.objectId) return false;
      }
      return true;
    };
    let candidates: Iterable<StoredTuple>;
    if (filter.objectType !== undefined && filter.objectId !== undefined && filter.relation !== undefined) {
      candidates = [...(this.#forward.get(objectRelationKey(filter.objectType, filter.objectId, filter.relation))?.values() ?? [])]
        .sort(byUser);
    } else {
      const ids = this.#sortedIds();
      candidates = (function* (tuples: Map<string, StoredTuple>) {
        let lo = 0;
        if (after !== undefined) {
          let hi = ids.length;
          while (lo < hi) {
            const mid = (lo + hi) >>> 1;
            if (ids[mid]! <= after) lo = mid + 1;
            else hi = mid;
          }
        }
        for (let i = lo; i < ids.length; i++) yield tuples.get(ids[i]!)!;
      })(this.#tuples);
    }
    const items: StoredTuple[] = [];
    let more = false;
    for (const t of candidates) {
      if (after !== undefined && tupleId(t) <= after) continue;
      if (!matches(t)) continue;
      if (items.length === options.pageSize) {
        more = true;
        break;
      }
      items.push(t);
    }
    return {
      items: items.map((t) => copyTuple(t, t.revision)),
      continuationToken: more ? encodeToken(tupleId(items.at(-1)!)) : undefined,
    };
  }

  async readChanges(options: { afterRevision: number; limit: number; objectType?: string }): Promise<TupleChange[]> {
    this.#open();
    const out: TupleChange[] = [];
    for (const c of this.#changes) {
      if (c.revision <= options.afterRevision) continue;
      if (options.objectType !== undefined && splitObject(c.tuple.object)[0] !== options.objectType) continue;
      out.push(structuredClone(c));
      if (out.length >= options.limit) break;
    }
    return out;
  }

  async revision(): Promise<number> {
    this.#open();
    return this.#revision;
  }

  async hasTuples(): Promise<boolean> {
    this.#open();
    return this.#tuples.size > 0;
  }

  async reset(): Promise<void> {
    this.#open();
    if (this.#tuples.size > 0) {
      throw new LatchkeyError('failed_precondition', 'remove all relationship tuples before resetting the authorization model', {
        reason: 'tuples_exist',
      });
    }
    this.#models = [];
    this.#changes = [];
  }

  async close(): Promise<void> {
    this.#closed = true;
  }
}
