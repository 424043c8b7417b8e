/**
 * The engine's check path: model lookup, request preparation and validation,
 * Check and BatchCheck (the {@link Engine} in engine/index.ts delegates here).
 *
 * The warm path is kept thin: a request without contextual tuples whose model
 * is known without a read (the store says so through
 * {@link LatestModelHint}) is validated from caches of parsed objects and
 * users, shares one tuple reader per model version, and reaches the head of
 * the resolver chain with a single promise in between (docs/engine.md).
 */
import { LatchkeyError } from '../errors.ts';
import type { StoredAuthorizationModel } from '../model.ts';
import type { TupleKey, TupleStore } from '../store.ts';
import { TypeSystem } from '../typesystem.ts';
import { TupleReader } from '../reader.ts';
import { type CheckResolver, type Consistency, type ResolutionContext, type ResolveCheckResult, Scope } from './check_resolver.ts';
import { LocalChecker } from './local_checker.ts';
import { type CheckLimits, TopContext, mapLimit } from './top_context.ts';
import { type ParsedObject, type ParsedUser, fgaError, parseObject, show, tryParseUser } from '../tuple.ts';
import { FGA_CODES, validateTupleForWrite } from '../validation.ts';

/**
 * Optional for stores and store wrappers: the latest model id when it is known
 * without I/O and as fresh as the wrapper's own `latestModelId` would answer;
 * `undefined` when not known (the caller then awaits `latestModelId`).
 */
/** The two results of a check, shared and frozen: a caller cannot change another's answer. */
const ALLOWED: { readonly allowed: boolean } = Object.freeze({ allowed: true });
const DENIED: { readonly allowed: boolean } = Object.freeze({ allowed: false });
const answer = (allowed: boolean): { readonly allowed: boolean } => (allowed ? ALLOWED : DENIED);
const ALLOWED_SETTLED = Promise.resolve(ALLOWED);
const DENIED_SETTLED = Promise.resolve(DENIED);

/**
 * Implemented by a store wrapper that answers from memory (the check cache,
 * the graph mirror): whether it has caught up with a store revision (a
 * consistency token). False starts a catch-up; the caller reads the store.
 */
export interface FreshnessHint {
  caughtUp(revision: number): boolean;
}

export interface LatestModelHint {
  knownLatestModelId(): string | undefined;
}

/**
 * Optional for the head of the resolver chain (a cache): answers to valid
 * top-level checks without contextual tuples that are at hand without
 * resolving. The engine asks before it builds the request and the resolution
 * context, so a hit allocates neither; on `undefined` it takes the usual
 * path (which also reports every error).
 */
export interface TopLevelHits {
  /** The latest model id last read, however old (`topLevelHit` with `latest` confirms it), or `undefined`. */
  latestModelIdSeen(): string | undefined;
  /**
   * The key of the top-level check `object#relation@user` under `ts` without
   * condition context (`user` in `formatUser` form); the engine remembers it
   * per request strings and hands it back to `topLevelHit`, so the chain may
   * keep on it what speeds up the next lookup of the same check.
   */
  topLevelKey(ts: TypeSystem, object: string, relation: string, user: string): TopLevelKey;
  /**
   * The answer to the check `key` (of type `objectType`) that the chain
   * would give at once, or `undefined`. `latest`: the request named no model
   * and `ts` is the version `latestModelIdSeen` named, so an answer is given
   * only if that id is as fresh as `latestModelId` would answer it (decided
   * on the same clock reading as the answer's own freshness).
   */
  topLevelHit(ts: TypeSystem, latest: boolean, objectType: string, relation: string, key: TopLevelKey, consistency: Consistency | undefined, maxDepth: number): ResolveCheckResult | undefined;
}

/** A key made by {@link TopLevelHits.topLevelKey} (the chain that made it may keep more on it). */
export interface TopLevelKey {
  readonly text: string;
}

/** A valid top-level check under a model version: its object type and cache key. */
interface ValidCheck {
  objectType: string;
  key: TopLevelKey;
}


/** Fields of a query request that the preparation reads. */
export interface CheckQuery {
  contextualTuples?: TupleKey[];
  context?: Record<string, unknown>;
  modelId?: string;
  consistency?: Consistency;
}

/** One check request. */
export interface CheckInput extends CheckQuery {
  user: string;
  relation: string;
  object: string;
}

/** One answer of a BatchCheck. */
export interface BatchCheckOutput {
  user: string;
  relation: string;
  object: string;
  allowed: boolean;
  error?: LatchkeyError;
}

export interface Prepared {
  ts: TypeSystem;
  reader: TupleReader;
}

const MODEL_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/u;
/** Valid top-level checks remembered at most (see `CheckPath.#valid`); emptied when full. */
const VALID_MAX = 50_000;

export function invalid(message: string, options: { reason: string; code?: number }): LatchkeyError {
  return fgaError(message, { reason: options.reason, code: options.code ?? FGA_CODES.validation_error });
}

function syncUnavailable(message: string): LatchkeyError {
  return new LatchkeyError('failed_precondition', message, { reason: 'sync_unavailable' });
}

export function plainTuple(t: TupleKey): TupleKey {
  const out: TupleKey = { object: t.object, relation: t.relation, user: t.user };
  if (t.condition !== undefined) {
    out.condition = t.condition.context === undefined ? { name: t.condition.name } : { name: t.condition.name, context: t.condition.context };
  }
  if (t.expires_at !== undefined) out.expires_at = t.expires_at;
  return out;
}

/** A parsed user string with its canonical form (the cache key part). */
interface CheckUser {
  user: ParsedUser;
  text: string;
}

/** A check request's object and user, parsed and validated against a model version (see `CheckPath.#validate`). */
interface ValidCheckInput {
  object: ParsedObject;
  user: CheckUser;
}

/**
 * The parsed user of a check. Request strings are parsed on every check: the
 * parse is one scan, cheaper than a lookup in a cache of parsed strings once
 * the requests name more users or objects than such a cache holds.
 */
function checkUserOf(s: unknown): CheckUser | undefined {
  if (typeof s !== 'string') return undefined;
  const user = tryParseUser(s);
  // A valid user string is its own canonical form (`formatUser` gives it back unchanged).
  return user === undefined ? undefined : { user, text: s };
}

function isPlainObject(v: unknown): boolean {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Check, BatchCheck and the preparation the query operations share. */
export class CheckPath {
  readonly #store: TupleStore;
  readonly #hint: LatestModelHint | undefined;
  readonly #limits: CheckLimits;
  readonly #resolver: CheckResolver;
  /** Whether the resolver is the plain synchronous evaluator (see {@link CheckPath.#walk}), and the limits of its walks. */
  readonly #walks: boolean;
  readonly #walkLimits: { maxDepth: number; maxDispatches: number; context: undefined };
  readonly #hits: TopLevelHits | undefined;
  /**
   * Top-level checks without condition context found valid under the model
   * version `#validOf`, by relation, object and user string, with their cache
   * key: validity depends on nothing else (model versions are immutable), and
   * a remembered key is a string already hashed, where a fresh concatenation
   * would be hashed on every lookup.
   */
  readonly #valid = new Map<string, Map<string, Map<string, ValidCheck>>>();
  #validOf: TypeSystem | undefined;
  #validCount = 0;
  /** Model versions by id (immutable, so never stale). */
  readonly typesystems = new Map<string, TypeSystem>();
  /** One reader without contextual tuples per model version, shared by requests. */
  readonly #readers = new WeakMap<TypeSystem, TupleReader>();

  constructor(store: TupleStore, limits: CheckLimits, resolver: CheckResolver) {
    this.#store = store;
    const hint = store as Partial<LatestModelHint>;
    this.#hint = typeof hint.knownLatestModelId === 'function' ? (store as unknown as LatestModelHint) : undefined;
    this.#limits = limits;
    this.#resolver = resolver;
    this.#walkLimits = { maxDepth: limits.maxResolutionDepth, maxDispatches: limits.maxDispatchesPerCheck, context: undefined };
    this.#walks = resolver instanceof LocalChecker && resolver.synchronous;
    const hits = resolver as Partial<TopLevelHits>;
    this.#hits = typeof hits.topLevelHit === 'function' ? (resolver as unknown as TopLevelHits) : undefined;
  }

  /** The model version `modelId`, or the latest. */
  async typesystem(modelId: string | undefined): Promise<TypeSystem> {
    let id = modelId;
    if (id === undefined || id === '') {
      id = await this.#store.latestModelId();
      if (id === undefined) {
        throw new LatchkeyError('failed_precondition', 'no authorization model has been written', { reason: 'model_not_found', details: { openfga_code: 2020 } });
      }
    } else if (typeof id !== 'string' || !MODEL_ID.test(id)) {
      throw invalid(`invalid model id '${show(id)}'`, { reason: 'invalid_model_id' });
    }
    let ts = this.typesystems.get(id);
    if (ts === undefined) {
      const stored = await this.#store.readModel(id);
      if (stored === undefined) throw new LatchkeyError('not_found', `model '${id}' not found`, { reason: 'model_not_found', details: { openfga_code: 2001 } });
      ts = this.add(stored);
    }
    return ts;
  }

  /** Remembers a model version read back from the store (validated when it was written, so its conditions keep every library function). */
  add(stored: StoredAuthorizationModel): TypeSystem {
    const { id, ...model } = stored;
    const ts = new TypeSystem(model, id, { conditionCostLimit: this.#limits.conditionCostLimit, stored: true });
    if (this.typesystems.size > 1000) this.typesystems.clear();
    this.typesystems.set(id, ts);
    return ts;
  }

  /** The model version known without a read, or `undefined`. */
  #typesystemNow(modelId: string | undefined): TypeSystem | undefined {
    if (modelId === undefined || modelId === '') {
      const id = this.#hint?.knownLatestModelId();
      return id === undefined ? undefined : this.typesystems.get(id);
    }
    return typeof modelId === 'string' ? this.typesystems.get(modelId) : undefined;
  }

  #reader(ts: TypeSystem): TupleReader {
    let r = this.#readers.get(ts);
    if (r === undefined) this.#readers.set(ts, (r = new TupleReader(this.#store, ts)));
    return r;
  }

  async prepare(q: CheckQuery, contextualCode: number = FGA_CODES.invalid_tuple): Promise<Prepared> {
    if (q.context !== undefined && !isPlainObject(q.context)) throw invalid('context must be an object', { reason: 'invalid_context' });
    return this.#prepareWith(await this.typesystem(q.modelId), q, contextualCode);
  }

  /** The reader of `q` under `ts`: the shared one, or one with its validated contextual tuples. */
  #prepareWith(ts: TypeSystem, q: CheckQuery, contextualCode: number = FGA_CODES.invalid_tuple): Prepared {
    const ctx = q.contextualTuples ?? [];
    if (!Array.isArray(ctx)) throw invalid('contextual tuples must be a list', { reason: 'invalid_contextual_tuples' });
    if (ctx.length > this.#limits.maxContextualTuples) {
      throw invalid(`at most ${this.#limits.maxContextualTuples} contextual tuples are allowed`, { reason: 'too_many_contextual_tuples' });
    }
    if (ctx.length === 0) return { ts, reader: this.#reader(ts) };
    const clean = ctx.map((t) => {
      const valid = plainTuple(validateTupleForWrite(ts, t, contextualCode).tuple);
      if (valid.expires_at !== undefined) {
        throw invalid(`contextual tuple '${valid.object}#${valid.relation}@${valid.user}' cannot carry expires_at: it holds for this request only`, { reason: 'invalid_expires_at', code: contextualCode });
      }
      return valid;
    });
    return { ts, reader: new TupleReader(this.#store, ts, clean) };
  }

  context(ts: TypeSystem, reader: TupleReader, context: Record<string, unknown> | undefined, consistency?: Consistency, memo = new Map<string, ResolveCheckResult>()): ResolutionContext {
    const out: ResolutionContext = {
      ts,
      reader,
      context,
      maxDepth: this.#limits.maxResolutionDepth,
      memo,
      pathMemo: new Map(),
      maxDispatches: this.#limits.maxDispatchesPerCheck,
      resolver: this.#resolver,
      stats: { dispatches: 0 },
    };
    if (consistency !== undefined) out.consistency = consistency;
    return out;
  }

  /** The context of one top-level resolution: shares the memo, resets the budget, and picks the monotone mode. */
  topLevel(ctx: ResolutionContext, ts: TypeSystem, type: string, relation: string): ResolutionContext {
    const out: ResolutionContext = {
      ts: ctx.ts,
      reader: ctx.reader,
      context: ctx.context,
      maxDepth: ctx.maxDepth,
      memo: ctx.memo,
      pathMemo: ctx.pathMemo,
      maxDispatches: ctx.maxDispatches,
      resolver: ctx.resolver,
      stats: { dispatches: 0 },
    };
    if (ctx.consistency !== undefined) out.consistency = ctx.consistency;
    if (ts.isMonotone(type, relation)) {
      out.visited = new Map();
      out.monotone = true;
    } else {
      out.monotone = false;
      if (ts.hasCyclesThroughAndOrButNot) out.noReuse = true;
    }
    return out;
  }

  parseCheckUser(ts: TypeSystem, user: unknown, code: number): ParsedUser {
    return this.#checkUser(ts, user, code).user;
  }

  #checkUser(ts: TypeSystem, user: unknown, code: number): CheckUser {
    const c = checkUserOf(user);
    if (c === undefined) throw invalid(`invalid user '${show(user)}'`, { reason: 'invalid_user', code });
    const u = c.user;
    if (u === undefined) throw invalid(`invalid user '${show(user)}'`, { reason: 'invalid_user', code });
    if (!ts.hasType(u.type)) throw invalid(`type '${u.type}' of user '${show(user)}' not found`, { reason: 'type_not_found', code });
    if (u.kind === 'userset' && ts.rewrite(u.type, u.relation) === undefined) {
      throw invalid(`relation '${u.type}#${u.relation}' of user '${show(user)}' not found`, { reason: 'relation_not_found', code });
    }
    return c;
  }

  /**
   * The parsed object and user of a valid check under `ts`; throws the
   * validation error otherwise (the first of: request shape, object, type,
   * relation, user).
   */
  #validate(ts: TypeSystem, req: CheckInput): ValidCheckInput {
    if (req === null || typeof req !== 'object') throw invalid('check request must be an object', { reason: 'invalid_check_input' });
    const object = parseObject(req.object);
    if (object.id === '*') throw invalid('the object id cannot be a wildcard', { reason: 'invalid_object' });
    if (!ts.hasType(object.type)) throw invalid(`type '${object.type}' not found`, { reason: 'type_not_found' });
    if (typeof req.relation !== 'string' || ts.rewrite(object.type, req.relation) === undefined) {
      throw invalid(`relation '${object.type}#${show(req.relation)}' not found`, { reason: 'relation_not_found' });
    }
    return { object, user: this.#checkUser(ts, req.user, FGA_CODES.validation_error) };
  }

  /**
   * A top-level check without contextual tuples, condition context or a
   * consistency preference, of a monotone relation by a plain user, with the
   * plain synchronous evaluator as resolver: what that evaluator does first
   * (`LocalChecker.resolveCheckSync`: the store's own walk over its index), without building
   * its request and context. `valid` is the request as `#validate`
   * returned it; the caller validates once and hands the same result to the
   * general path (`#resolveOne`) when this one declines. Throws what
   * the walk throws; `undefined` when the check is not of this kind or the
   * store cannot walk it.
   */
  #walk(ts: TypeSystem, req: CheckInput, valid: ValidCheckInput): boolean | undefined {
    if (!this.#walks || req.context !== undefined || req.consistency !== undefined) return undefined;
    const { object, user } = valid;
    const u = user.user;
    if (u.kind !== 'object' || !ts.isMonotone(object.type, req.relation)) return undefined;
    const source = this.#reader(ts).sync;
    if (source?.reachSync === undefined) return undefined;
    return source.reachSync(ts, object.type, object.id, req.relation, u.type, u.id, this.#walkLimits, req.object, user.text);
  }

  /**
   * Validates one check (unless the caller has: `valid`) and hands it to the
   * head of the resolver chain. `ctx` undefined: a single check without
   * contextual tuples (its top-level context is built directly). A resolver
   * that can answer synchronously does so (the result is then not a
   * promise); `syncOnly`: `undefined` when it cannot, and nothing is started.
   */
  #resolveOne(ts: TypeSystem, ctx: ResolutionContext | undefined, req: CheckInput, syncOnly = false, valid: ValidCheckInput = this.#validate(ts, req)): Promise<ResolveCheckResult> | ResolveCheckResult | undefined {
    const { object, user } = valid;
    const request = { objectType: object.type, objectId: object.id, relation: req.relation, user: user.user, depth: 0, path: undefined, scope: new Scope(), object: req.object, userText: user.text };
    let top: ResolutionContext;
    let resolver: CheckResolver;
    if (ctx !== undefined) {
      top = this.topLevel(ctx, ts, object.type, req.relation);
      resolver = ctx.resolver;
      if (!syncOnly) return resolver.resolveCheck(request, top);
    } else {
      const monotone = ts.isMonotone(object.type, req.relation);
      const single = new TopContext(ts, this.#reader(ts), req.context, this.#limits, this.#resolver, monotone);
      if (req.consistency !== undefined) single.consistency = req.consistency;
      if (!monotone && ts.hasCyclesThroughAndOrButNot) single.noReuse = true;
      top = single;
      resolver = this.#resolver;
    }
    const r = resolver.resolveCheckSync?.(request, top);
    if (r !== undefined || syncOnly) return r;
    return resolver.resolveCheck(request, top);
  }

  async checkOne(ts: TypeSystem, ctx: ResolutionContext, req: CheckInput): Promise<boolean> {
    const result = (await this.#resolveOne(ts, ctx, req))!;
    return result.allowed && !result.cycle;
  }

  /**
   * The cached answer to a valid check without contextual tuples or
   * condition context, found without building its request or context, or
   * `undefined`. A request not yet remembered as valid is validated first;
   * an invalid one takes the usual path, which reports the error. The model
   * it validates against is only a guess until `topLevelHit` confirms it (a
   * `latest` answer is given only for the current latest model).
   */
  #cachedAnswer(hits: TopLevelHits, req: CheckInput): ResolveCheckResult | undefined {
    const modelId = req.modelId;
    const latest = modelId === undefined || modelId === '';
    const id = latest ? hits.latestModelIdSeen() : modelId;
    if (typeof id !== 'string') return undefined;
    const ts = this.typesystems.get(id);
    if (ts === undefined) return undefined;
    const { object: o, relation, user: us } = req;
    if (req.context !== undefined || typeof o !== 'string' || typeof relation !== 'string' || typeof us !== 'string') return undefined;
    if (this.#validOf !== ts || this.#validCount >= VALID_MAX) {
      this.#valid.clear();
      this.#validCount = 0;
      this.#validOf = ts;
    }
    let byObject = this.#valid.get(relation);
    let byUser = byObject?.get(o);
    let v = byUser?.get(us);
    if (v === undefined) {
      let valid: ValidCheckInput;
      try {
        valid = this.#validate(ts, req);
      } catch {
        return undefined;
      }
      v = { objectType: valid.object.type, key: hits.topLevelKey(ts, o, relation, valid.user.text) };
      if (byObject === undefined) this.#valid.set(relation, (byObject = new Map()));
      if (byUser === undefined) byObject.set(o, (byUser = new Map()));
      byUser.set(us, v);
      this.#validCount++;
    }
    return hits.topLevelHit(ts, latest, v.objectType, relation, v.key, req.consistency, this.#limits.maxResolutionDepth);
  }

  /** Whether `req` carries no contextual tuples (absent or an empty list). */
  #noContextualTuples(req: CheckInput): boolean {
    const c = req.contextualTuples;
    return c === undefined || (Array.isArray(c) && c.length === 0);
  }

  /**
   * Check without a promise, when the answer is at hand synchronously (see
   * `Engine.checkSync`); throws `failed_precondition` with reason
   * `sync_unavailable` when it is not.
   */
  checkSync(req: CheckInput): { readonly allowed: boolean } {
    if (req === null || typeof req !== 'object') throw invalid('check request must be an object', { reason: 'invalid_check_input' });
    const plain = this.#noContextualTuples(req);
    if (plain && this.#hits !== undefined) {
      const hit = this.#cachedAnswer(this.#hits, req);
      if (hit !== undefined) return answer(hit.allowed && !hit.cycle);
    }
    if (req.context !== undefined && !isPlainObject(req.context)) throw invalid('context must be an object', { reason: 'invalid_context' });
    const ts = this.#typesystemNow(req.modelId);
    if (ts === undefined) {
      if (req.modelId !== undefined && req.modelId !== '' && (typeof req.modelId !== 'string' || !MODEL_ID.test(req.modelId))) {
        throw invalid(`invalid model id '${show(req.modelId)}'`, { reason: 'invalid_model_id' });
      }
      throw syncUnavailable('the model version is not loaded in this engine yet (loadModel, or any check, loads it)');
    }
    let r: ResolveCheckResult | undefined;
    if (plain) {
      const valid = this.#validate(ts, req);
      const allowed = this.#walk(ts, req, valid);
      if (allowed !== undefined) return answer(allowed);
      r = this.#resolveOne(ts, undefined, req, true, valid) as ResolveCheckResult | undefined;
    } else {
      // Contextual tuples are validated before the request, as on the asynchronous path (prepare, then checkOne).
      const prepared = this.#prepareWith(ts, req);
      r = this.#resolveOne(ts, this.context(ts, prepared.reader, req.context, req.consistency), req, true) as ResolveCheckResult | undefined;
    }
    if (r === undefined) throw syncUnavailable('this check needs a read that is not synchronous here (a SQL store, a graph mirror catching up, or full consistency)');
    return answer(r.allowed && !r.cycle);
  }

  /**
   * Check. An answer at hand without a read (a cache hit, the direct walk)
   * is one of two settled promises shared by every call, of a frozen result:
   * no promise, result or async frame is made for it.
   */
  check(req: CheckInput): Promise<{ readonly allowed: boolean }> {
    let r: { readonly allowed: boolean } | Promise<{ readonly allowed: boolean }>;
    try {
      r = this.checkAtHand(req);
    } catch (err) {
      return Promise.reject(err);
    }
    return r === ALLOWED ? ALLOWED_SETTLED : r === DENIED ? DENIED_SETTLED : (r as Promise<{ readonly allowed: boolean }>);
  }

  /**
   * {@link check}, with the answer itself rather than a promise when it is at
   * hand (where `check` answers with a settled promise); an error of the
   * input is then thrown rather than rejected.
   */
  checkAtHand(req: CheckInput): { readonly allowed: boolean } | Promise<{ readonly allowed: boolean }> {
    if (req !== null && typeof req === 'object') {
      const warm = this.#warm(req);
      if (warm === true) return ALLOWED;
      if (warm === false) return DENIED;
      if (warm !== undefined) return warm.then(answer);
    }
    return this.#checkCold(req);
  }

  async #checkCold(req: CheckInput): Promise<{ readonly allowed: boolean }> {
    const { ts, reader } = await this.prepare(req);
    return answer(await this.checkOne(ts, this.context(ts, reader, req.context, req.consistency), req));
  }

  /**
   * The warm path of a check: no contextual tuples and the model version
   * known without a read. Answers the cached answer, the direct walk's, or the
   * general resolution's (a boolean when at hand, else a promise of it); or
   * `undefined` when the request is not warm, for the usual path. Throws what
   * validation throws.
   */
  #warm(req: CheckInput): boolean | Promise<boolean> | undefined {
    if (!this.#noContextualTuples(req)) return undefined;
    if (this.#hits !== undefined) {
      const hit = this.#cachedAnswer(this.#hits, req);
      if (hit !== undefined) return hit.allowed && !hit.cycle;
    }
    const ts = this.#typesystemNow(req.modelId);
    if (ts === undefined) return undefined;
    if (req.context !== undefined && !isPlainObject(req.context)) throw invalid('context must be an object', { reason: 'invalid_context' });
    const valid = this.#validate(ts, req);
    const allowed = this.#walk(ts, req, valid);
    if (allowed !== undefined) return allowed;
    const r = this.#resolveOne(ts, undefined, req, false, valid)!;
    return r instanceof Promise ? r.then((x) => x.allowed && !x.cycle) : r.allowed && !r.cycle;
  }


  async batchCheck(checks: CheckInput[], options: { modelId?: string } = {}): Promise<BatchCheckOutput[]> {
    if (!Array.isArray(checks) || checks.length < 1 || checks.length > this.#limits.maxChecksPerBatch) {
      throw new LatchkeyError('invalid_argument', `a batch holds 1 to ${this.#limits.maxChecksPerBatch} checks`, {
        reason: 'invalid_batch_size',
        details: { openfga_code: FGA_CODES.validation_error, limit: this.#limits.maxChecksPerBatch },
      });
    }
    const groups = new Map<string, Promise<{ ts: TypeSystem; ctx: ResolutionContext }>>();
    const one = async (c: CheckInput): Promise<BatchCheckOutput> => {
      const echo = { user: c?.user, relation: c?.relation, object: c?.object };
      try {
        const q: CheckQuery = { ...c };
        if (options.modelId !== undefined && c.modelId === undefined) q.modelId = options.modelId;
        // A warm check (no contextual tuples, its model known) is answered as Check answers it.
        if (c !== null && typeof c === 'object') {
          const warm = this.#warm(q.modelId === c.modelId ? c : { ...c, modelId: q.modelId as string });
          if (warm !== undefined) return { ...echo, allowed: typeof warm === 'boolean' ? warm : await warm };
        }
        const gk = JSON.stringify([q.modelId ?? '', q.contextualTuples ?? [], q.context ?? {}, q.consistency ?? '']);
        let g = groups.get(gk);
        if (g === undefined) {
          g = this.prepare(q).then(({ ts, reader }) => ({ ts, ctx: this.context(ts, reader, q.context, q.consistency) }));
          groups.set(gk, g);
        }
        const { ts, ctx } = await g;
        const allowed = await this.checkOne(ts, ctx, c);
        return { ...echo, allowed };
      } catch (err) {
        const error = err instanceof LatchkeyError ? err : new LatchkeyError('internal', 'internal server error', { cause: err });
        return { ...echo, allowed: false, error };
      }
    };
    // One check (the usual call from the wire) needs no worker pool.
    if (checks.length === 1) return [await one(checks[0] as CheckInput)];
    return mapLimit(checks, this.#limits.maxConcurrentChecks, (c) => one(c));
  }
}
