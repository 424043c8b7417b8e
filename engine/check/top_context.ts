/**
 * The resolution context of one top-level check, and the bounded worker pool
 * a batch check runs its checks in (both used by check_path.ts).
 */
import type { CheckResolver, Consistency, ResolutionContext, ResolveCheckResult } from './check_resolver.ts';
import type { TupleReader } from '../reader.ts';
import type { TypeSystem } from '../typesystem.ts';

/** The limits the check path reads (a subset of the engine's). */
export interface CheckLimits {
  maxResolutionDepth: number;
  maxChecksPerBatch: number;
  maxContextualTuples: number;
  maxConcurrentChecks: number;
  maxDispatchesPerCheck: number;
  /** cel-go runtime cost above which a condition's evaluation fails (see {@link TypeSystem}). */
  conditionCostLimit: number;
}

/** Runs `fn` over `items` with at most `limit` in flight, preserving order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * The resolution context of a single check: its memo, path memo and visited
 * set are made on first use (a cache hit or an index walk never uses them),
 * and it counts its own dispatches.
 */
export class TopContext implements ResolutionContext {
  readonly ts: TypeSystem;
  readonly reader: TupleReader;
  readonly context: Record<string, unknown> | undefined;
  readonly maxDepth: number;
  readonly maxDispatches: number;
  readonly resolver: CheckResolver;
  readonly monotone: boolean;
  consistency?: Consistency;
  noReuse?: boolean;
  dispatches = 0;
  #memo: Map<string, ResolveCheckResult> | undefined;
  #pathMemo: Map<string, { hits: readonly string[]; height: number }[]> | undefined;
  #visited: Map<string, number> | undefined;

  constructor(ts: TypeSystem, reader: TupleReader, context: Record<string, unknown> | undefined, limits: CheckLimits, resolver: CheckResolver, monotone: boolean) {
    this.ts = ts;
    this.reader = reader;
    this.context = context;
    this.maxDepth = limits.maxResolutionDepth;
    this.maxDispatches = limits.maxDispatchesPerCheck;
    this.resolver = resolver;
    this.monotone = monotone;
  }

  get memo(): Map<string, ResolveCheckResult> {
    return (this.#memo ??= new Map());
  }

  get pathMemo(): Map<string, { hits: readonly string[]; height: number }[]> {
    return (this.#pathMemo ??= new Map());
  }

  get visited(): Map<string, number> | undefined {
    return this.monotone ? (this.#visited ??= new Map()) : undefined;
  }

  get stats(): { dispatches: number } {
    return this;
  }
}
