/**
 * Named benchmark shapes beyond the reference dataset (bench/baseline):
 * intersection and exclusion, wildcards, conditions and contextual tuples.
 * Each has a seeded tuple generator and queries whose expected answers follow
 * from the construction (never from an evaluator); the runner verifies them
 * before timing.
 */
import { mulberry32, randInt } from '../baseline/prng.ts';

export interface ScenarioTuple {
  object: string;
  relation: string;
  user: string;
  condition?: { name: string; context?: Record<string, unknown> };
}

export interface ScenarioQuery {
  object: string;
  relation: string;
  user: string;
  expected: boolean;
  context?: Record<string, unknown>;
  contextualTuples?: ScenarioTuple[];
}

export interface Scenario {
  name: string;
  tags: string[];
  model: string;
  tuples: ScenarioTuple[];
  queries: ScenarioQuery[];
}

const HEADER = 'model\n  schema 1.1\n';

/** Documents with 8 viewers each, a blocked list and an approvers list. */
function exclusionIntersection(n: number, seed: number): Scenario[] {
  const rng = mulberry32(seed);
  const users = 2000;
  const docs = Math.max(100, Math.round(n / 12));
  const viewers: Set<number>[] = [];
  const blocked: Set<number>[] = [];
  const approvers: Set<number>[] = [];
  const tuples: ScenarioTuple[] = [];
  for (let d = 0; d < docs; d++) {
    const v = new Set<number>();
    while (v.size < 8) v.add(randInt(rng, users));
    const b = new Set<number>([...v].filter(() => rng() < 0.25));
    const a = new Set<number>([...v].filter(() => rng() < 0.5));
    viewers.push(v);
    blocked.push(b);
    approvers.push(a);
    for (const u of v) tuples.push({ object: `doc:${d}`, relation: 'viewer', user: `user:${u}` });
    for (const u of b) tuples.push({ object: `doc:${d}`, relation: 'blocked', user: `user:${u}` });
    for (const u of a) tuples.push({ object: `doc:${d}`, relation: 'approver', user: `user:${u}` });
  }
  const model = `${HEADER}type user
type doc
  relations
    define viewer: [user]
    define blocked: [user]
    define approver: [user]
    define can_read: viewer but not blocked
    define can_approve: viewer and approver
`;
  const ex: ScenarioQuery[] = [];
  const inter: ScenarioQuery[] = [];
  for (let i = 0; i < 2000; i++) {
    const d = randInt(rng, docs);
    const members = [...(viewers[d] as Set<number>)];
    const u = rng() < 0.7 ? (members[randInt(rng, members.length)] as number) : randInt(rng, users);
    ex.push({ object: `doc:${d}`, relation: 'can_read', user: `user:${u}`, expected: viewers[d]!.has(u) && !blocked[d]!.has(u) });
    inter.push({ object: `doc:${d}`, relation: 'can_approve', user: `user:${u}`, expected: viewers[d]!.has(u) && approvers[d]!.has(u) });
  }
  return [
    { name: 'exclusion', tags: ['exclusion'], model, tuples, queries: ex },
    { name: 'intersection', tags: ['intersection'], model, tuples, queries: inter },
  ];
}

/** Public documents (`user:*`) mixed with private ones. */
function wildcard(n: number, seed: number): Scenario {
  const rng = mulberry32(seed);
  const docs = Math.max(100, Math.round(n / 4));
  const pub: boolean[] = [];
  const owner: number[] = [];
  const tuples: ScenarioTuple[] = [];
  for (let d = 0; d < docs; d++) {
    pub.push(rng() < 0.3);
    owner.push(randInt(rng, 1000));
    if (pub[d]) tuples.push({ object: `doc:${d}`, relation: 'viewer', user: 'user:*' });
    tuples.push({ object: `doc:${d}`, relation: 'viewer', user: `user:${owner[d]}` });
  }
  const queries: ScenarioQuery[] = [];
  for (let i = 0; i < 2000; i++) {
    const d = randInt(rng, docs);
    const u = rng() < 0.3 ? (owner[d] as number) : randInt(rng, 1000);
    queries.push({ object: `doc:${d}`, relation: 'viewer', user: `user:${u}`, expected: pub[d] === true || owner[d] === u });
  }
  return { name: 'wildcard', tags: ['wildcard'], model: `${HEADER}type user\ntype doc\n  relations\n    define viewer: [user, user:*]\n`, tuples, queries };
}

/** Grants valid only during office hours, with the hour in the request context. */
function conditions(n: number, seed: number): Scenario {
  const rng = mulberry32(seed);
  const docs = Math.max(100, Math.round(n / 3));
  const grantee: number[] = [];
  const tuples: ScenarioTuple[] = [];
  for (let d = 0; d < docs; d++) {
    grantee.push(randInt(rng, 1000));
    tuples.push({ object: `doc:${d}`, relation: 'viewer', user: `user:${grantee[d]}`, condition: { name: 'office_hours', context: { start: 9, end: 17 } } });
  }
  const queries: ScenarioQuery[] = [];
  for (let i = 0; i < 2000; i++) {
    const d = randInt(rng, docs);
    const hour = randInt(rng, 24);
    queries.push({ object: `doc:${d}`, relation: 'viewer', user: `user:${grantee[d]}`, context: { hour }, expected: hour >= 9 && hour < 17 });
  }
  const model = `${HEADER}type user
type doc
  relations
    define viewer: [user with office_hours]
condition office_hours(hour: int, start: int, end: int) {
  hour >= start && hour < end
}
`;
  return { name: 'conditions', tags: ['conditions'], model, tuples, queries };
}

/** Group membership sent as a contextual tuple with each check. */
function contextual(n: number, seed: number): Scenario {
  const rng = mulberry32(seed);
  const docs = Math.max(100, Math.round(n / 2));
  const group: number[] = [];
  const tuples: ScenarioTuple[] = [];
  for (let d = 0; d < docs; d++) {
    group.push(randInt(rng, 200));
    tuples.push({ object: `doc:${d}`, relation: 'viewer', user: `group:${group[d]}#member` });
  }
  const queries: ScenarioQuery[] = [];
  for (let i = 0; i < 2000; i++) {
    const d = randInt(rng, docs);
    const g = rng() < 0.5 ? (group[d] as number) : randInt(rng, 200);
    queries.push({
      object: `doc:${d}`,
      relation: 'viewer',
      user: 'user:visitor',
      contextualTuples: [{ object: `group:${g}`, relation: 'member', user: 'user:visitor' }],
      expected: g === group[d],
    });
  }
  const model = `${HEADER}type user
type group
  relations
    define member: [user]
type doc
  relations
    define viewer: [group#member]
`;
  return { name: 'contextual_tuples', tags: ['contextual'], model, tuples, queries };
}

/** Every registered shape, at about `tuples` tuples each. */
export function scenarios(tuples = 20_000, seed = 12345): Scenario[] {
  return [...exclusionIntersection(tuples, seed), wildcard(tuples, seed + 1), conditions(tuples, seed + 2), contextual(tuples, seed + 3)];
}
