/**
 * Which cached check answers a written tuple can change: per model version,
 * the relations numbered with a generation each, and per tuple class
 * `type#relation` the relations whose resolution reads tuples of that class
 * (engine/check/check_cache.ts moves on exactly those generations when a
 * tuple of the class is written in this process).
 */
import type { TypeSystem } from '../typesystem.ts';
import { rewriteChildren } from '../rewrites.ts';

/**
 * The relations of one model version, numbered, with the generation of each
 * and, per tuple class `type#relation`, the relations whose answers a tuple of
 * that class can change.
 */
export class ModelDeps {
  readonly classOf = new Map<string, Map<string, number>>();
  readonly gens: number[] = [];
  readonly affected = new Map<string, number[]>();

  constructor(ts: TypeSystem) {
    const classes: [string, string][] = [];
    for (const type of ts.types()) {
      const byRel = new Map<string, number>();
      this.classOf.set(type, byRel);
      for (const relation of ts.relationsOf(type).keys()) {
        byRel.set(relation, classes.length);
        classes.push([type, relation]);
        this.gens.push(0);
      }
    }
    classes.forEach(([type, relation], i) => {
      for (const read of tupleClassesRead(ts, type, relation)) {
        let list = this.affected.get(read);
        if (list === undefined) this.affected.set(read, (list = []));
        list.push(i);
      }
    });
  }
}

/**
 * Every tuple class `type#relation` that resolving `type#relation` may read:
 * its direct part, the tupleset of each tuple-to-userset, and the same for
 * every relation it can dispatch to (computed relations, the relations of the
 * userset types its restrictions admit, tuple-to-userset targets on the
 * parent types the tupleset admits). Tuples the model does not admit are never
 * read (the tuple reader drops them), so the restrictions bound the walk.
 */
export function tupleClassesRead(ts: TypeSystem, type: string, relation: string): Set<string> {
  const out = new Set<string>();
  const seen = new Set<string>();
  const stack: [string, string][] = [[type, relation]];
  while (stack.length > 0) {
    const [t, r] = stack.pop()!;
    const k = `${t}#${r}`;
    if (seen.has(k)) continue;
    seen.add(k);
    const rw = ts.rewrite(t, r);
    if (rw === undefined) continue;
    const nodes = [rw];
    while (nodes.length > 0) {
      const n = nodes.pop()!;
      if ('this' in n) {
        out.add(k);
        for (const ref of ts.restrictions(t, r)) if (ref.relation !== undefined) stack.push([ref.type, ref.relation]);
      } else if ('computedUserset' in n) {
        stack.push([t, n.computedUserset.relation ?? '']);
      } else if ('tupleToUserset' in n) {
        const tupleset = n.tupleToUserset.tupleset.relation ?? '';
        const target = n.tupleToUserset.computedUserset.relation ?? '';
        out.add(`${t}#${tupleset}`);
        for (const ref of ts.restrictions(t, tupleset)) stack.push([ref.type, target]);
      } else {
        nodes.push(...rewriteChildren(n));
      }
    }
  }
  return out;
}
