/**
 * Deleting tuples in bounded batches: every tuple matching a filter
 * (`Engine.deleteTuplesByFilter`), and the expired ones
 * (`Engine.collectExpired`). Each batch is one write, so checks keep being
 * answered between batches and a failure leaves whole batches done; the
 * engine's watchers hear of each batch.
 *
 * Apart from engine/index.ts because these are loops of their own over the
 * store (read a batch, write it, yield, again), with their own input rules,
 * that need nothing of the engine but its store, clock and change signal.
 */
import { LatchkeyError } from './errors.ts';
import type { ReadFilter, TupleStore } from './store.ts';
import { tryParseObject, tryParseUser } from './tuple.ts';
import { invalid } from './check/check_path.ts';

/** What hears of each batch written: the engine's change signal, which wakes its watchers. */
interface ChangeNotifier {
  notify(): void;
}

/** The batch size (1..10,000, default 1,000) and the most batches (at least 1, default `defaultMaxBatches`); `invalid_batch_size` otherwise. */
function batchLimits(options: { batch?: number; maxBatches?: number }, defaultMaxBatches: number): { batch: number; maxBatches: number } {
  const batch = options.batch ?? 1000;
  const maxBatches = options.maxBatches ?? defaultMaxBatches;
  if (!Number.isInteger(batch) || batch < 1 || batch > 10_000) throw invalid('batch must be an integer from 1 to 10000', { reason: 'invalid_batch_size' });
  if (!Number.isInteger(maxBatches) || maxBatches < 1) throw invalid('maxBatches must be a positive integer', { reason: 'invalid_batch_size' });
  return { batch, maxBatches };
}

/** `Engine.deleteTuplesByFilter` over `store` (see there). */
export async function deleteByFilter(
  store: TupleStore,
  filter: { user?: string; relation?: string; object?: string; objectType?: string },
  options: { batch?: number; maxBatches?: number; onProgress?: (progress: { deleted: number; batches: number; revision: number }) => void },
  changes: ChangeNotifier,
): Promise<{ deleted: number; batches: number; revision: number }> {
  if (filter === null || typeof filter !== 'object') throw invalid('the filter must be an object', { reason: 'invalid_filter' });
  for (const key of ['user', 'relation', 'object', 'objectType'] as const) {
    if (filter[key] !== undefined && (typeof filter[key] !== 'string' || filter[key] === '')) throw invalid(`filter '${key}' must be a non-empty string`, { reason: 'invalid_filter' });
  }
  const { batch, maxBatches } = batchLimits(options, 1_000_000);
  const f: ReadFilter = {};
  if (filter.object !== undefined) {
    const o = tryParseObject(filter.object);
    if (o === undefined) throw invalid(`invalid object filter '${filter.object}': expected 'type:id'`, { reason: 'invalid_object' });
    if (filter.objectType !== undefined && filter.objectType !== o.type) throw invalid(`object '${filter.object}' is not of type '${filter.objectType}'`, { reason: 'invalid_filter' });
    f.objectType = o.type;
    f.objectId = o.id;
  } else if (filter.objectType !== undefined) {
    if (filter.objectType.includes(':')) throw invalid(`invalid object type '${filter.objectType}'`, { reason: 'invalid_filter' });
    f.objectType = filter.objectType;
  }
  if (filter.user !== undefined) {
    if (tryParseUser(filter.user) === undefined) throw invalid(`invalid user filter '${filter.user}'`, { reason: 'invalid_user' });
    f.user = filter.user;
  }
  if (filter.relation !== undefined) f.relation = filter.relation;
  if (f.user === undefined && f.objectType === undefined) {
    throw invalid('give a user, an object or an object type to delete by (a relation alone, or nothing, would reach across every type)', { reason: 'invalid_filter' });
  }
  let deleted = 0;
  let batches = 0;
  let revision = 0;
  let races = 0;
  while (batches < maxBatches) {
    const page = await store.readPage(f, { pageSize: batch });
    if (page.items.length === 0) break;
    try {
      revision = await store.write(page.items.map((t) => ({ object: t.object, relation: t.relation, user: t.user })), []);
    } catch (err) {
      // Another writer deleted one of them first: read the batch again (a bounded number of times in a row).
      if (err instanceof LatchkeyError && err.reason === 'tuple_not_found' && races++ < 100) continue;
      throw err;
    }
    races = 0;
    changes.notify();
    deleted += page.items.length;
    batches++;
    options.onProgress?.({ deleted, batches, revision });
    // Other work (checks) runs between batches, also on a store whose calls never wait for I/O (memory).
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return { deleted, batches, revision };
}

/** `Engine.collectExpired` over `store`, expiry decided by `now` (see there). */
export async function collectExpiredTuples(store: TupleStore, now: () => number, options: { batch?: number; maxBatches?: number }, changes: ChangeNotifier): Promise<number> {
  const { batch, maxBatches } = batchLimits(options, 100);
  if (store.deleteExpired === undefined) return 0;
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    const n = await store.deleteExpired(now(), batch);
    if (n > 0) changes.notify();
    total += n;
    if (n < batch) break;
  }
  return total;
}
