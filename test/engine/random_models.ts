/**
 * Random small models and tuples for the engine's property tests, and the
 * reference evaluator they are checked against: a least fixpoint over sets
 * of facts `object#relation@user` (no conditions).
 *
 * Models are generated so the fixpoint is OpenFGA's answer: every exclusion
 * subtracts a direct-only relation (`blocked`), so no cycle can reach a
 * subtracted side (where OpenFGA's "a cycle makes `but not` false" rule
 * differs from a fixpoint). Intersections, unions, tuple-to-usersets,
 * usersets and wildcards are unrestricted, including cycles through data.
 */
import fc from 'fast-check';
import type { AuthorizationModel, RelationReference, TupleKey, Userset } from '../../engine/index.ts';

export const USERS = ['user:u0', 'user:u1', 'user:u2'];
export const OBJECTS: Record<string, string[]> = {
  group: ['group:g0', 'group:g1', 'group:g2'],
  folder: ['folder:f0', 'folder:f1', 'folder:f2'],
  doc: ['doc:d0', 'doc:d1'],
};
export const RELS = ['r0', 'r1', 'r2'];

/** A random rewrite for relation `i` of a folder or doc. */
export type Expr =
  | { k: 'this' }
  | { k: 'computed'; j: number }
  | { k: 'ttu'; target: number }
  | { k: 'union' | 'and'; a: Expr; b: Expr }
  | { k: 'butnot'; a: Expr };

export function exprArb(i: number, depth: number): fc.Arbitrary<Expr> {
  const leaves: fc.Arbitrary<Expr>[] = [fc.constant({ k: 'this' } as Expr), fc.integer({ min: 0, max: 2 }).map((target) => ({ k: 'ttu', target }) as Expr)];
  if (i > 0) leaves.push(fc.integer({ min: 0, max: i - 1 }).map((j) => ({ k: 'computed', j }) as Expr));
  const leaf = fc.oneof(...leaves);
  if (depth === 0) return leaf;
  const sub = exprArb(i, depth - 1);
  return fc.oneof(
    { weight: 3, arbitrary: leaf },
    { weight: 1, arbitrary: fc.record({ a: sub, b: sub }).map(({ a, b }) => ({ k: 'union', a, b }) as Expr) },
    { weight: 1, arbitrary: fc.record({ a: sub, b: sub }).map(({ a, b }) => ({ k: 'and', a, b }) as Expr) },
    { weight: 1, arbitrary: sub.map((a) => ({ k: 'butnot', a }) as Expr) },
  );
}

export const restrictionsArb = fc
  .subarray(['user', 'user:*', 'group#member'], { minLength: 1 })
  .map((l) => l.map((s): RelationReference => (s === 'user:*' ? { type: 'user', wildcard: {} } : s === 'group#member' ? { type: 'group', relation: 'member' } : { type: 'user' })));

export interface Spec {
  folder: Expr[];
  doc: Expr[];
  restrictions: Record<string, RelationReference[]>;
}

export const specArb: fc.Arbitrary<Spec> = fc.record({
  folder: fc.tuple(exprArb(0, 2), exprArb(1, 2), exprArb(2, 2)),
  doc: fc.tuple(exprArb(0, 2), exprArb(1, 2), exprArb(2, 2)),
  restrictions: fc.record({
    'folder#r0': restrictionsArb,
    'folder#r1': restrictionsArb,
    'folder#r2': restrictionsArb,
    'doc#r0': restrictionsArb,
    'doc#r1': restrictionsArb,
    'doc#r2': restrictionsArb,
  }),
});

export function usesThis(e: Expr): boolean {
  if (e.k === 'this') return true;
  if (e.k === 'union' || e.k === 'and') return usesThis(e.a) || usesThis(e.b);
  if (e.k === 'butnot') return usesThis(e.a);
  return false;
}

export function toUserset(e: Expr): Userset {
  switch (e.k) {
    case 'this':
      return { this: {} };
    case 'computed':
      return { computedUserset: { relation: RELS[e.j]! } };
    case 'ttu':
      return { tupleToUserset: { tupleset: { relation: 'parent' }, computedUserset: { relation: RELS[e.target]! } } };
    case 'union':
      return { union: { child: [toUserset(e.a), toUserset(e.b)] } };
    case 'and':
      return { intersection: { child: [toUserset(e.a), toUserset(e.b)] } };
    case 'butnot':
      return { difference: { base: toUserset(e.a), subtract: { computedUserset: { relation: 'blocked' } } } };
  }
}

export function buildModel(spec: Spec, blockedByGroups = false): AuthorizationModel {
  const objType = (type: 'folder' | 'doc') => {
    const relations: Record<string, Userset> = { parent: { this: {} }, blocked: { this: {} } };
    const blockedTypes: RelationReference[] = [{ type: 'user' }, { type: 'user', wildcard: {} }];
    if (blockedByGroups) blockedTypes.push({ type: 'group', relation: 'member' });
    const meta: Record<string, { directly_related_user_types: RelationReference[] }> = {
      parent: { directly_related_user_types: [{ type: 'folder' }] },
      blocked: { directly_related_user_types: blockedTypes },
    };
    spec[type].forEach((e, i) => {
      relations[RELS[i]!] = toUserset(e);
      meta[RELS[i]!] = { directly_related_user_types: usesThis(e) ? spec.restrictions[`${type}#${RELS[i]}`]! : [] };
    });
    return { type, relations, metadata: { relations: meta } };
  };
  return {
    schema_version: '1.1',
    type_definitions: [
      { type: 'user' },
      {
        type: 'group',
        relations: { member: { this: {} } },
        metadata: { relations: { member: { directly_related_user_types: [{ type: 'user' }, { type: 'user', wildcard: {} }, { type: 'group', relation: 'member' }] } } },
      },
      objType('folder'),
      objType('doc'),
    ],
  };
}

/** Every tuple the model admits over the small universe. */
export function candidateTuples(spec: Spec): TupleKey[] {
  const out: TupleKey[] = [];
  const usersFor = (refs: RelationReference[]): string[] =>
    refs.flatMap((r) => (r.wildcard !== undefined ? ['user:*'] : r.relation !== undefined ? OBJECTS['group']!.map((g) => `${g}#member`) : USERS));
  for (const g of OBJECTS['group']!) {
    for (const u of [...USERS, 'user:*', ...OBJECTS['group']!.map((x) => `${x}#member`)]) out.push({ object: g, relation: 'member', user: u });
  }
  for (const type of ['folder', 'doc'] as const) {
    for (const o of OBJECTS[type]!) {
      for (const f of OBJECTS['folder']!) out.push({ object: o, relation: 'parent', user: f });
      for (const u of [...USERS, 'user:*']) out.push({ object: o, relation: 'blocked', user: u });
      spec[type].forEach((e, i) => {
        if (!usesThis(e)) return;
        for (const u of usersFor(spec.restrictions[`${type}#${RELS[i]}`]!)) out.push({ object: o, relation: RELS[i]!, user: u });
      });
    }
  }
  return out;
}

/** The reference: least fixpoint of facts `object#relation@user` for concrete users. */
export function reference(spec: Spec, tuples: TupleKey[]): Set<string> {
  const has = new Set(tuples.map((t) => `${t.object}#${t.relation}@${t.user}`));
  const facts = new Set<string>();
  const model = buildModel(spec);
  const restr = (type: string, rel: string): RelationReference[] =>
    model.type_definitions!.find((t) => t.type === type)!.metadata?.relations?.[rel]?.directly_related_user_types ?? [];
  const direct = (obj: string, rel: string, user: string): boolean => {
    const type = obj.split(':')[0]!;
    if (has.has(`${obj}#${rel}@${user}`)) return true;
    if (restr(type, rel).some((r) => r.wildcard !== undefined) && has.has(`${obj}#${rel}@user:*`)) return true;
    if (restr(type, rel).some((r) => r.relation === 'member')) {
      for (const g of OBJECTS['group']!) if (has.has(`${obj}#${rel}@${g}#member`) && facts.has(`${g}#member@${user}`)) return true;
    }
    return false;
  };
  const evalExpr = (e: Expr, obj: string, rel: string, user: string): boolean => {
    switch (e.k) {
      case 'this':
        return direct(obj, rel, user);
      case 'computed':
        return facts.has(`${obj}#${RELS[e.j]}@${user}`);
      case 'ttu':
        return OBJECTS['folder']!.some((f) => has.has(`${obj}#parent@${f}`) && facts.has(`${f}#${RELS[e.target]}@${user}`));
      case 'union':
        return evalExpr(e.a, obj, rel, user) || evalExpr(e.b, obj, rel, user);
      case 'and':
        return evalExpr(e.a, obj, rel, user) && evalExpr(e.b, obj, rel, user);
      case 'butnot':
        return evalExpr(e.a, obj, rel, user) && !(has.has(`${obj}#blocked@${user}`) || has.has(`${obj}#blocked@user:*`));
    }
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (const user of USERS) {
      for (const g of OBJECTS['group']!) {
        const k = `${g}#member@${user}`;
        if (!facts.has(k) && direct(g, 'member', user)) {
          facts.add(k);
          changed = true;
        }
      }
      for (const type of ['folder', 'doc'] as const) {
        for (const o of OBJECTS[type]!) {
          spec[type].forEach((e, i) => {
            const k = `${o}#${RELS[i]}@${user}`;
            if (!facts.has(k) && evalExpr(e, o, RELS[i]!, user)) {
              facts.add(k);
              changed = true;
            }
          });
        }
      }
    }
  }
  return facts;
}

export const QUERIES: [string, string][] = [
  ...OBJECTS['group']!.map((g): [string, string] => [g, 'member']),
  ...(['folder', 'doc'] as const).flatMap((type) => OBJECTS[type]!.flatMap((o) => RELS.map((r): [string, string] => [o, r]))),
];

export const scenarioArb = specArb.chain((spec) => {
  const candidates = candidateTuples(spec);
  return fc.record({ spec: fc.constant(spec), tuples: fc.subarray(candidates, { maxLength: 30 }), split: fc.integer({ min: 0, max: 30 }) });
});

