/**
 * The paged listings' machinery (Engine.listObjectsPage, Engine.listUsersPage):
 * a page is served either by the candidate scan (engine/list_scan.ts) at the
 * page's revision, or from the complete answer of a walk at that revision,
 * computed once by an uncapped engine over a {@link SnapshotStore} with the
 * plain evaluator and kept for the pages after it.
 */
import { LatchkeyError } from './errors.ts';
import type { TupleStore } from './store.ts';
import type { Limits, ListPageOptions, UndecidedObject } from './engine_types.ts';
import { invalid } from './check/check_path.ts';
import { SnapshotStore } from './snapshot_store.ts';
import { byCodeUnits, decodeListPosition, encodeListPosition, indexAfter, listPageSize, questionDigest } from './list_pages.ts';
import type { ScanPage } from './list_scan.ts';

/** Candidates a scanned page may examine before it gives way to the whole walk: at least this many, */
const SCAN_MIN_BUDGET = 1000;
/** and this many per result of the page (the scan goes on while at least one candidate in this many is a result). */
const SCAN_BUDGET_PER_RESULT = 10;

/** How many candidates a scanned page of `size` results may examine. */
export function scanBudget(size: number): number {
  return Math.max(SCAN_MIN_BUDGET, SCAN_BUDGET_PER_RESULT * size);
}

/** A page of a candidate scan over `snapshot` checked by `view` (see engine/list_scan.ts). */
export type PageScan<V> = (view: V, snapshot: TupleStore, modelId: string, after: string | undefined, size: number, deadlineAt: number | undefined) => Promise<ScanPage | 'walk'>;

/** The complete, uncapped answer of the question, computed by `view` with model version `modelId`. */
export type PageRun<V> = (view: V, modelId: string) => Promise<{ items: string[]; truncated: boolean; undecided: UndecidedObject[] | undefined }>;

/** One page, as the engine's page methods shape it. */
export interface PagedAnswer {
  items: string[];
  continuationToken: string;
  revision: number;
  total?: number;
  deadlineExceeded?: boolean;
  undecided: UndecidedObject[] | undefined;
}

/** What the pager needs of its engine (`V` is the engine type, kept abstract so that this module does not import it). */
export interface PagerHost<V> {
  store(): TupleStore;
  storeId(): string;
  /** The id of the model version `modelId` names (the latest when undefined). */
  modelId(modelId: string | undefined): Promise<string>;
  /** An engine with the plain evaluator over `store`, with `limits` over the host's own. */
  viewOver(store: TupleStore, limits?: Partial<Limits>): V;
  /** The engine that checks a scanned page at the store's current revision. */
  liveView(): V;
  now(): number;
}

type Walk = { items: string[]; undecided: UndecidedObject[] | undefined };

/** Walks kept per engine (complete answers are immutable, since a revision's data is). */
const KEPT_WALKS = 16;

export class ListPager<V> {
  readonly #host: PagerHost<V>;
  /** Complete answers of paged listings, by store, model, revision and question. */
  readonly #walks = new Map<string, Walk>();
  /** Walks being computed, by the same key: a page that stopped for its deadline, and the next one, share one computation. */
  readonly #computing = new Map<string, Promise<Walk>>();

  constructor(host: PagerHost<V>) {
    this.#host = host;
  }

  /**
   * One page of a walk: the complete answer at the walk's revision (from
   * the walk cache, or computed by an uncapped engine over a
   * {@link SnapshotStore} at that revision with the plain evaluator, so that
   * no cache or mirror of the current data answers), then the page after the
   * token's position. With `scan`, a page is first tried by the candidate
   * scan, which gives way to the walk when too few candidates are results.
   */
  async page(question: unknown[], modelId: string | undefined, page: ListPageOptions, run: PageRun<V>, scan?: PageScan<V>): Promise<PagedAnswer> {
    const started = performance.now();
    if (page === null || typeof page !== 'object') throw invalid('page options must be an object', { reason: 'invalid_page_size' });
    const size = listPageSize(page.pageSize);
    const deadline = page.deadlineMs;
    if (deadline !== undefined && (!Number.isInteger(deadline) || deadline < 1 || deadline > 600_000)) throw invalid('deadlineMs must be an integer from 1 to 600000', { reason: 'invalid_option' });
    const digest = questionDigest(question);
    const token = page.continuationToken === undefined || page.continuationToken === '' ? undefined : decodeListPosition(page.continuationToken, digest);
    const store = this.#host.store();
    let revision: number;
    let model: string;
    if (token !== undefined) {
      revision = token.r;
      model = token.m;
    } else {
      if (page.atRevision !== undefined && (!Number.isSafeInteger(page.atRevision) || page.atRevision < 0)) throw invalid('atRevision must be a store revision', { reason: 'invalid_consistency_token' });
      revision = page.atRevision ?? (await store.revision());
      model = await this.#host.modelId(modelId);
    }
    const key = `${this.#host.storeId()}\u0000${model}\u0000${revision}\u0000${digest}`;
    let walk = this.#walks.get(key);
    // The whole walk's pages carry `w`, so that a later page (from any engine) does not try the scan again.
    let whole = token?.w === true;
    if (walk === undefined && scan !== undefined && !whole && store.readObjectIds !== undefined) {
      const after = token === undefined || token.a === '' ? undefined : token.a;
      const out = await this.#scanPage(revision, model, scan, after, size, deadline === undefined ? undefined : started + deadline);
      if (out !== 'walk') {
        const position = out.last ?? after ?? '';
        const result: PagedAnswer = {
          items: out.items,
          continuationToken: out.more ? encodeListPosition({ r: revision, m: model, q: digest, a: position }) : '',
          revision,
          undecided: undefined,
        };
        // A first page that holds the whole answer knows its size; other scanned pages do not.
        if (token === undefined && !out.more) result.total = out.items.length;
        if (out.deadlineExceeded) result.deadlineExceeded = true;
        return result;
      }
      whole = true;
    }
    if (walk === undefined) {
      let computing = this.#computing.get(key);
      if (computing === undefined) {
        computing = this.#walk(revision, model, run);
        this.#computing.set(key, computing);
        computing.then(
          (w) => {
            this.#computing.delete(key);
            if (this.#walks.size >= KEPT_WALKS) this.#walks.delete(this.#walks.keys().next().value as string);
            this.#walks.set(key, w);
          },
          () => this.#computing.delete(key),
        );
      }
      if (deadline === undefined) walk = await computing;
      else {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, Math.max(0, started + deadline - performance.now()), undefined)));
        try {
          walk = await Promise.race([computing, late]);
        } finally {
          clearTimeout(timer);
        }
        if (walk === undefined) {
          // Stopped for the deadline: nothing returned, the token resumes at the same place (the computation goes on).
          return {
            items: [],
            continuationToken: encodeListPosition({ r: revision, m: model, q: digest, a: token?.a ?? '', w: whole }),
            revision,
            deadlineExceeded: true,
            undecided: [],
          };
        }
      }
    }
    const start = token === undefined ? 0 : indexAfter(walk.items, token.a);
    const items = walk.items.slice(start, start + size);
    const more = start + items.length < walk.items.length;
    return {
      items,
      continuationToken: more ? encodeListPosition({ r: revision, m: model, q: digest, a: items[items.length - 1]!, w: whole }) : '',
      revision,
      total: walk.items.length,
      undecided: token === undefined ? walk.undecided : [],
    };
  }

  /**
   * One page of the candidate scan at `revision` (engine/list_scan.ts): over
   * a {@link SnapshotStore}, with the plain evaluator, read again when a
   * delete committed meanwhile may have hidden a tuple of the revision.
   */
  async #scanPage(revision: number, model: string, scan: PageScan<V>, after: string | undefined, size: number, deadlineAt: number | undefined): Promise<ScanPage | 'walk'> {
    const store = this.#host.store();
    // While the store is still at the revision (a first page, or nothing written since), the engine's own checks
    // (at full consistency, so no cache or mirror answers from an older revision) read the revision itself; the
    // revision unchanged once the page is done says that every read saw it. Otherwise the page reads a snapshot.
    if ((await store.revision()) === revision) {
      const out = await scan(this.#host.liveView(), store, model, after, size, deadlineAt);
      if ((await store.revision()) === revision) return out;
    }
    for (let attempt = 0; attempt < 3; attempt++) {
      const snapshot = await SnapshotStore.at(store, revision, () => this.#host.now());
      const out = await scan(this.#host.viewOver(snapshot), snapshot, model, after, size, deadlineAt);
      if (!(await snapshot.settled())) continue;
      return out;
    }
    throw new LatchkeyError('aborted', 'the store changed during the listing; retry', { reason: 'listing_conflict' });
  }

  /** The complete answer of a walk at `revision` (see {@link page}). */
  async #walk(revision: number, model: string, run: PageRun<V>): Promise<Walk> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const snapshot = await SnapshotStore.at(this.#host.store(), revision, () => this.#host.now());
      const r = await run(this.#host.viewOver(snapshot, { listObjectsMaxResults: 100_000, listUsersMaxResults: 100_000 }), model);
      // A delete committed while the snapshot was read may have hidden a tuple of the revision: read again.
      if (!(await snapshot.settled())) continue;
      if (r.truncated) throw new LatchkeyError('failed_precondition', 'the answer has more than 100,000 results; narrow the question', { reason: 'listing_too_large' });
      return { items: [...r.items].sort(byCodeUnits), undecided: r.undecided };
    }
    throw new LatchkeyError('aborted', 'the store changed during the listing; retry', { reason: 'listing_conflict' });
  }
}
