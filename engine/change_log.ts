/**
 * The memory store's changelog (engine/memory_store.ts), kept in growable
 * typed arrays of interned ids: the revision, object, relation, user and
 * operation of each change, with conditions, expiries and commit times
 * beside them. `readChanges` reads it in order from a revision on.
 */
import type { TupleCondition } from './store.ts';

/** The operations of a change. */
export const WRITE = 0;
export const DELETE = 1;

/** The changelog in growable typed arrays: about 15 bytes a change, conditions aside. */
export class ChangeLog {
  length = 0;
  rev = new Int32Array(1024);
  obj = new Int32Array(1024);
  rel = new Uint16Array(1024);
  user = new Int32Array(1024);
  op = new Uint8Array(1024);
  /** Conditions of written tuples, by change index. */
  conds = new Map<number, TupleCondition>();
  /** `expires_at` of written tuples that expire, by change index. */
  expiry = new Map<number, string>();
  /** Commit time by revision. */
  times: number[] = [0];

  push(rev: number, obj: number, rel: number, user: number, op: number, cond: TupleCondition | undefined): void {
    if (this.length === this.rev.length) {
      const grow = <T extends Int32Array | Uint16Array | Uint8Array>(a: T): T => {
        const b = new (a.constructor as new (n: number) => T)(a.length * 2);
        b.set(a);
        return b;
      };
      this.rev = grow(this.rev);
      this.obj = grow(this.obj);
      this.rel = grow(this.rel);
      this.user = grow(this.user);
      this.op = grow(this.op);
    }
    const i = this.length++;
    this.rev[i] = rev;
    this.obj[i] = obj;
    this.rel[i] = rel;
    this.user[i] = user;
    this.op[i] = op;
    if (cond !== undefined) this.conds.set(i, cond);
  }

  /** Index of the first change with a revision above `after`. */
  firstAfter(after: number): number {
    let lo = 0;
    let hi = this.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.rev[mid]! <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  clear(): void {
    this.length = 0;
    this.conds.clear();
    this.expiry.clear();
    this.times = [0];
  }
}
