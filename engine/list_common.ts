/**
 * Pieces shared by ListObjects and ListUsers: tuple conditions evaluated
 * during an expansion, and the bounded confirmation of candidates by Check.
 */
import type { TupleKey } from './store.ts';
import type { TypeSystem } from './typesystem.ts';

/** The outcome of a tuple's condition: the tuple counts, does not count, or its evaluation failed. */
export type ConditionOutcome = 'true' | 'false' | 'error';

/**
 * Evaluates the condition of `t` as Check does (a tuple without a condition
 * counts; an unknown condition does not; a failing evaluation, for example a
 * missing parameter, is an error of the branch through this tuple).
 * `onError` receives the error of a failing evaluation.
 */
export function conditionOutcome(ts: TypeSystem, t: TupleKey, context: Record<string, unknown> | undefined, onError?: (err: unknown) => void): ConditionOutcome {
  const c = t.condition;
  if (c === undefined || c.name === '') return 'true';
  const compiled = ts.condition(c.name);
  if (compiled === undefined) return 'false';
  try {
    return compiled.evaluate(c.context, context) ? 'true' : 'false';
  } catch (err) {
    onError?.(err);
    return 'error';
  }
}

/**
 * Confirms `candidates` with `check`, at most `concurrency` at a time, and
 * stops starting new checks once more than `max` results are known
 * (`known` of them already, found without a check). Returns the confirmed
 * candidates (unsorted) and the first error a check raised that `absorb`
 * (when given) did not take.
 */
export async function confirmCandidates<T>(
  candidates: readonly T[],
  check: (candidate: T) => Promise<boolean>,
  options: { concurrency: number; max: number; known: number; absorb?: ((candidate: T, err: unknown) => boolean) | undefined },
): Promise<{ confirmed: T[]; error: unknown }> {
  const confirmed: T[] = [];
  let error: unknown;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < candidates.length && options.known + confirmed.length <= options.max) {
      const c = candidates[next++]!;
      try {
        if (await check(c)) confirmed.push(c);
      } catch (err) {
        if (options.absorb?.(c, err) !== true) error ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, candidates.length) }, worker));
  return { confirmed, error };
}
