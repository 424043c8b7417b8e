/**
 * The candidate scan of paged ListObjects (docs/list-objects.md, "Pages"):
 * the objects of the listed type, read from the store in ascending id order
 * in batches ({@link TupleStore.readObjectIds}), each confirmed with Check at
 * the walk's revision, so that a page stops as soon as it holds its results
 * and one more (which says a next page exists), instead of computing the
 * whole answer first.
 *
 * An object can hold a relation only if some tuple names it as its object
 * (every rewrite bottoms out in a direct tuple, a tupleset tuple or another
 * relation of the same object), so the objects with a stored tuple at the
 * revision, with those of the request's contextual tuples, hold every
 * answer; each is kept only if Check allows it. The scan gives the page back
 * to the whole walk (reverse expansion, then the page cut from it) when:
 *
 * - it examined `budget` candidates without filling the page (the answer is
 *   sparse among the type's objects, and the reverse expansion, whose cost
 *   follows the user's tuples, is cheaper);
 * - a Check failed (a condition's missing parameter, the depth limit): the
 *   walk decides whether that is an error of the listing, as ListObjects
 *   does (it only meets the paths it follows from the user);
 * - an id holds a character from U+D800 on, where a SQL store's byte order
 *   and the listing's code-unit order may differ.
 *
 * Both answer the same question at the same revision in the same order, so a
 * walk may change from one to the other between pages (or within one)
 * without a result twice or missed.
 */
import type { TupleStore } from './store.ts';

/** One page of a candidate scan. */
export interface ScanPage {
  /** Results (`type:id`), ascending, at most the page size. */
  items: string[];
  /** Where the next page starts after (`type:id`); `undefined` when nothing was examined. */
  last: string | undefined;
  /** False when every candidate was examined. */
  more: boolean;
  /** True when the page stopped for its deadline. */
  deadlineExceeded: boolean;
  /** Candidates examined (what the page cost). */
  examined: number;
}

/** What the scan asks of the caller for a batch of objects: Check's answer, or `'error'` when Check failed. */
export type BatchConfirm = (objects: string[]) => Promise<(boolean | 'error')[]>;

/** Checks per confirming batch (the engine's `maxChecksPerBatch` bounds it). */
const CONFIRM_CHUNK = 100;
/** Largest read of candidate ids. */
const MAX_READ = 1000;

/**
 * One page of the scan after `after` (`type:id`, or `undefined` for the
 * first page). Answers `'walk'` when the page must come from the whole walk
 * (see the module's doc).
 */
export async function scanObjectsPage(q: {
  store: Pick<TupleStore, 'readObjectIds'>;
  type: string;
  after: string | undefined;
  size: number;
  /** Ids (not `type:id`) of the type's objects named by contextual tuples, ascending. */
  extra: readonly string[];
  confirm: BatchConfirm;
  budget: number;
  chunk?: number;
  /** `performance.now()` past which the page answers what it has. */
  deadlineAt?: number | undefined;
}): Promise<ScanPage | 'walk'> {
  const read = q.store.readObjectIds;
  if (read === undefined) return 'walk';
  const prefix = `${q.type}:`;
  if (q.after !== undefined && !q.after.startsWith(prefix)) return 'walk';
  let cursor = q.after === undefined ? undefined : q.after.slice(prefix.length);
  const items: string[] = [];
  let last = q.after;
  let examined = 0;
  let want = Math.min(MAX_READ, q.size + 1);
  const chunk = Math.max(1, Math.min(q.chunk ?? CONFIRM_CHUNK, CONFIRM_CHUNK));
  const late = (): boolean => q.deadlineAt !== undefined && performance.now() >= q.deadlineAt;
  for (;;) {
    const ids = await read.call(q.store, { objectType: q.type, after: cursor, limit: want });
    const storeDone = ids.length < want;
    const top = storeDone ? undefined : ids[ids.length - 1];
    const candidates = mergeExtra(ids, q.extra, cursor, top);
    for (const id of candidates) if (hasHighChar(id)) return 'walk';
    if (candidates.length === 0) return { items, last, more: false, deadlineExceeded: false, examined };
    for (let i = 0; i < candidates.length; i += chunk) {
      const part = candidates.slice(i, i + chunk).map((id) => prefix + id);
      const answers = await q.confirm(part);
      for (let j = 0; j < part.length; j++) {
        const a = answers[j];
        if (a === 'error' || a === undefined) return 'walk';
        examined++;
        if (a) {
          // One result past the page: a next page exists, and starts after the page's last result.
          if (items.length === q.size) return { items, last: items[items.length - 1], more: true, deadlineExceeded: false, examined };
          items.push(part[j]!);
        }
        last = part[j];
      }
      if (examined >= q.budget) {
        if (items.length < q.size) return 'walk';
        return { items, last: items[items.length - 1], more: true, deadlineExceeded: false, examined };
      }
      if (late()) return { items, last, more: true, deadlineExceeded: true, examined };
    }
    if (storeDone) return { items, last, more: false, deadlineExceeded: false, examined };
    cursor = top;
    want = Math.min(MAX_READ, want * 2);
  }
}

/** `ids` with the `extra` ids in (`after`, `top`] (all after `after` when `top` is undefined), ascending, once each. */
function mergeExtra(ids: readonly string[], extra: readonly string[], after: string | undefined, top: string | undefined): string[] {
  if (extra.length === 0) return ids as string[];
  const add = extra.filter((id) => (after === undefined || id > after) && (top === undefined || id <= top));
  if (add.length === 0) return ids as string[];
  return [...new Set([...ids, ...add])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** True when `s` holds a UTF-16 code unit from U+D800 on (surrogates and U+E000–U+FFFF). */
function hasHighChar(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0xd800) return true;
  return false;
}
