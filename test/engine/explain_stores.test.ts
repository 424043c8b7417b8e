/**
 * Explain on every backend (memory, SQLite, and PostgreSQL and MySQL when
 * their URLs are set) and in both layouts (the plain engine, and the chain
 * the server runs: answer cache and graph mirror): for every query of a
 * model with usersets, tuple-to-usersets, intersection, exclusion,
 * conditions and a cycle, Explain's answer is Check's, its tree reaches the
 * same answer, and every tuple of a witness is stored (or contextual).
 */
import test from 'ava';
import { buildEngine, Engine, MemoryStore, type ExplainNode, type TupleKey, type TupleStore } from '../../engine/index.ts';
import { sqlBackends } from '../helpers/databases.ts';
import { disposableSqlStore } from './sql_helpers.ts';

const MODEL = `model
  schema 1.1
type user
type group
  relations
    define member: [user, group#member]
type folder
  relations
    define parent: [folder]
    define viewer: [user, group#member] or viewer from parent
type doc
  relations
    define parent: [folder]
    define blocked: [user, group#member]
    define approved: [user]
    define timed: [user with before_noon]
    define viewer: [user, group#member] or viewer from parent or timed
    define editor: viewer and approved
    define reader: viewer but not blocked
condition before_noon(hour: int) {
  hour < 12
}
`;

const TUPLES: TupleKey[] = [
  { user: 'user:a', relation: 'member', object: 'group:g1' },
  { user: 'group:g1#member', relation: 'member', object: 'group:g2' },
  { user: 'group:g2#member', relation: 'member', object: 'group:g1' },
  { user: 'group:g2#member', relation: 'viewer', object: 'folder:root' },
  { user: 'folder:root', relation: 'parent', object: 'folder:sub' },
  { user: 'folder:sub', relation: 'parent', object: 'doc:1' },
  { user: 'user:b', relation: 'viewer', object: 'doc:2' },
  { user: 'user:b', relation: 'approved', object: 'doc:2' },
  { user: 'user:a', relation: 'approved', object: 'doc:1' },
  { user: 'group:g1#member', relation: 'blocked', object: 'doc:2' },
  { user: 'user:c', relation: 'timed', object: 'doc:1', condition: { name: 'before_noon' } },
];

const USERS = ['user:a', 'user:b', 'user:c', 'user:z', 'group:g1#member'];
const QUERIES: [string, string][] = [
  ['group:g1', 'member'],
  ['group:g2', 'member'],
  ['folder:sub', 'viewer'],
  ...['doc:1', 'doc:2'].flatMap((o) => ['viewer', 'editor', 'reader', 'blocked'].map((r): [string, string] => [o, r])),
];

function nodes(n: ExplainNode): ExplainNode[] {
  return [n, ...(n.children ?? []).flatMap(nodes)];
}

const backends = ['memory', ...sqlBackends()];

for (const backend of backends) {
  for (const layout of ['plain', 'chain'] as const) {
    test(`${backend} ${layout}: Explain's answer is Check's on every query, and witnesses name stored tuples`, async (t) => {
      const store: TupleStore = backend === 'memory' ? new MemoryStore() : await disposableSqlStore(backend as 'sqlite');
      try {
        const engine = layout === 'plain' ? new Engine({ store }) : (await buildEngine({ store, revisionPollMs: 60_000 })).engine;
        await engine.writeModel({ dsl: MODEL });
        await engine.write({ writes: TUPLES });
        const stored = new Set(TUPLES.map((x) => `${x.object}#${x.relation}@${x.user}`));
        let allowed = 0;
        for (const context of [{ hour: 9 }, { hour: 15 }]) {
          for (const consistency of [undefined, 'higher_consistency'] as const) {
            for (const [object, relation] of QUERIES) {
              for (const user of USERS) {
                const req = { user, relation, object, context, ...(consistency === undefined ? {} : { consistency }) };
                const name = `${object}#${relation}@${user} ${JSON.stringify(context)} ${consistency ?? ''}`;
                const check = (await engine.check(req)).allowed;
                const ex = await engine.explain(req);
                t.is(ex.allowed, check, name);
                t.is(ex.tree.outcome, check ? 'allowed' : 'denied', name);
                if (!check) continue;
                allowed++;
                // Every hop of a witness is allowed and every tuple in it stored, but in an exclusion's subtracted branch (shown denied).
                const visit = (n: ExplainNode): void => {
                  if (n.role === 'subtract') {
                    t.is(n.outcome, 'denied', name);
                    return;
                  }
                  t.is(n.outcome, 'allowed', name);
                  if (n.kind === 'tuple') t.true(stored.has(`${n.tuple!.object}#${n.tuple!.relation}@${n.tuple!.user}`), `${name}: ${JSON.stringify(n.tuple)}`);
                  for (const c of n.children ?? []) visit(c);
                };
                visit(ex.tree);
              }
            }
          }
        }
        t.true(allowed > 10);
        // A contextual tuple shows in the witness and grants for that request only.
        const ctx = await engine.explain({ user: 'user:z', relation: 'viewer', object: 'doc:2', contextualTuples: [{ user: 'user:z', relation: 'viewer', object: 'doc:2' }] });
        t.true(ctx.allowed);
        t.true(nodes(ctx.tree).some((n) => n.kind === 'tuple' && n.tuple!.user === 'user:z'));
        t.false((await engine.explain({ user: 'user:z', relation: 'viewer', object: 'doc:2' })).allowed);
      } finally {
        await store.close();
      }
    });
  }
}
