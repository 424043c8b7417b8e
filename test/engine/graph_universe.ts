/**
 * The model and tuple universe the random-graph properties of the engine's
 * fast paths share (cache_graph.test.ts, sql_level_checker.test.ts): groups
 * nested in groups, wildcards, a conditional membership, parent chains, an
 * exclusion; small enough that random writes keep changing answers already
 * asked.
 */
import { LatchkeyError, type Engine, type TupleKey } from '../../engine/index.ts';

export const GRAPH_MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, user:*, group#member, user with big]
type doc
  relations
    define parent: [doc]
    define blocked: [user]
    define editor: [user, group#member]
    define viewer: [user, user:*, group#member] or editor or viewer from parent
    define can_read: viewer but not blocked
condition big(x: int) {
  x > 5
}
`;

export interface GraphUniverse {
  users: string[];
  groups: string[];
  docs: string[];
  /** Every tuple the model admits over them (with `user:u0` a member under `big` of the groups `conditional` names). */
  tuples: TupleKey[];
}

/** `size` users, groups and documents, and every tuple over them. */
export function graphUniverse(size: number, conditional: (group: string) => boolean): GraphUniverse {
  const names = (type: string): string[] => Array.from({ length: size }, (_, i) => `${type}:${type[0]}${i}`);
  const users = names('user');
  const groups = names('group');
  const docs = names('doc');
  const tuples: TupleKey[] = [];
  for (const g of groups) {
    for (const u of [...users, 'user:*']) tuples.push({ object: g, relation: 'member', user: u });
    if (conditional(g)) tuples.push({ object: g, relation: 'member', user: 'user:u0', condition: { name: 'big' } });
    for (const h of groups) tuples.push({ object: g, relation: 'member', user: `${h}#member` });
  }
  for (const d of docs) {
    for (const p of docs) tuples.push({ object: d, relation: 'parent', user: p });
    for (const u of users) {
      tuples.push({ object: d, relation: 'editor', user: u });
      tuples.push({ object: d, relation: 'viewer', user: u });
      tuples.push({ object: d, relation: 'blocked', user: u });
    }
    tuples.push({ object: d, relation: 'viewer', user: 'user:*' });
    for (const g of groups) {
      tuples.push({ object: d, relation: 'viewer', user: `${g}#member` });
      tuples.push({ object: d, relation: 'editor', user: `${g}#member` });
    }
  }
  return { users, groups, docs, tuples };
}

/** A check's outcome as text: the answer, or the error's code and reason. */
export async function outcome(engine: Engine, q: { object: string; relation: string; user: string; context?: Record<string, unknown> }): Promise<string> {
  try {
    return String((await engine.check(q)).allowed);
  } catch (err) {
    return err instanceof LatchkeyError ? `error ${err.code}/${err.reason ?? ''}` : `non-latchkey ${String(err)}`;
  }
}
