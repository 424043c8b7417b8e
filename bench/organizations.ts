/**
 * Organizations benchmark (docs/performance.md, "Organizations"): Check and
 * ListObjects latency for one member while the server holds 1, 100, 1,000
 * and 10,000 organizations, and for one member of an organization of 10,000
 * members. The question: does the cost of an organization question grow
 * with the number of tenants? (Realm-per-tenant designs grow with it; a
 * relationship graph should not.)
 *
 * The data is what the organization service writes, on a SQLite file
 * behind the server's engine chain (`buildEngine`: the graph mirror on, the
 * answer cache off, so every check is evaluated): the model fragment plus a
 * `document` type, and per organization `O` an owner, a member, a team with
 * the member in it, and a document shared with the team and owned by the
 * organization (`editor: admin from org`). Every timed question's answer is
 * checked first; a wrong one fails the run.
 *
 * Standalone: `node bench/organizations.ts [--quick]`; `run({ quick })` is the
 * `npm run bench` entry point.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildEngine, type Engine, type TupleKey } from '../engine/index.ts';
import { SqlStore, sqliteSequelize } from '../engine/sql/index.ts';
import { orgModelFragmentDsl } from '../auth/index.ts';

const MODEL = `model\n  schema 1.1\n${orgModelFragmentDsl([])}type document\n  relations\n    define org: [organization]\n    define editor: [user, team#member] or admin from org\n    define viewer: [user, team#member] or editor or member from org\n`;

const round = (x: number, d = 3): number => Math.round(x * 10 ** d) / 10 ** d;
function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}
const log = (msg: string): void => void process.stderr.write(`[organizations bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

function tuplesOf(o: number): TupleKey[] {
  return [
    { object: `organization:o${o}`, relation: 'owner', user: `user:owner${o}` },
    { object: `organization:o${o}`, relation: 'member', user: `user:member${o}` },
    { object: `team:t${o}`, relation: 'organization', user: `organization:o${o}` },
    { object: `team:t${o}`, relation: 'member', user: `user:member${o}` },
    { object: `document:d${o}`, relation: 'viewer', user: `team:t${o}#member` },
    { object: `document:d${o}`, relation: 'org', user: `organization:o${o}` },
  ];
}

async function open(): Promise<{ engine: Engine; store: SqlStore; close: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'lk-org-bench-'));
  const sequelize = sqliteSequelize(join(dir, 'bench.sqlite'), { logging: false });
  const store = await SqlStore.open({ sequelize });
  const built = await buildEngine({ store, mirror: true, cacheSize: 0 });
  await built.engine.writeModel({ dsl: MODEL });
  return {
    engine: built.engine,
    store,
    close: async () => {
      await store.close();
      await sequelize.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function writeAll(engine: Engine, tuples: readonly TupleKey[]): Promise<void> {
  for (let i = 0; i < tuples.length; i += 100) await engine.write({ writes: tuples.slice(i, i + 100) });
}

/** p50/p99 (ms) of `fn` over `n` runs after `warm` unmeasured ones. */
async function time(fn: () => Promise<void>, n: number, warm: number): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < warm; i++) await fn();
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    xs.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return { p50: round(percentile(xs, 50)), p99: round(percentile(xs, 99)) };
}

async function expect(engine: Engine, user: string, relation: string, object: string, allowed: boolean): Promise<void> {
  const r = await engine.check({ user, relation, object });
  if (r.allowed !== allowed) throw new Error(`wrong answer: ${user} ${relation} ${object} = ${r.allowed}, expected ${allowed}`);
}

export async function run(options: { quick: boolean }): Promise<Record<string, unknown>> {
  const scales = options.quick ? [1, 100, 1000] : [1, 100, 1000, 10_000];
  const runs = options.quick ? 300 : 2000;
  const out: Record<string, unknown> = { load_average: loadavg().map((x) => round(x, 2)) };
  const rows: Record<string, unknown>[] = [];
  const { engine, close } = await open();
  try {
    let written = 0;
    for (const n of scales) {
      const fresh: TupleKey[] = [];
      for (let o = written; o < n; o++) fresh.push(...tuplesOf(o));
      await writeAll(engine, fresh);
      written = n;
      // The member asked about is in organization 0 (and its team); the last organization is another tenant.
      const member = 'user:member0';
      await expect(engine, member, 'viewer', 'document:d0', true);
      await expect(engine, member, 'editor', 'document:d0', false);
      await expect(engine, 'user:owner0', 'editor', 'document:d0', true);
      if (n > 1) await expect(engine, member, 'viewer', `document:d${n - 1}`, false);
      const listed = await engine.listObjects({ user: member, relation: 'viewer', type: 'document' });
      if (listed.objects.length !== 1 || listed.objects[0] !== 'document:d0') throw new Error(`wrong ListObjects answer at ${n}: ${listed.objects.join(',')}`);
      const check = await time(async () => void (await engine.check({ user: member, relation: 'viewer', object: 'document:d0' })), runs, 100);
      const denied = await time(async () => void (await engine.check({ user: member, relation: 'viewer', object: `document:d${n - 1}` })), runs, 100);
      const list = await time(async () => void (await engine.listObjects({ user: member, relation: 'viewer', type: 'document' })), Math.max(100, runs / 10), 20);
      const row = { organizations: n, tuples: n * 6, check_allowed_ms: check, check_denied_ms: denied, list_objects_ms: list };
      log(JSON.stringify(row));
      rows.push(row);
    }
    out['by_organizations'] = rows;
    const first = rows[0] as { check_allowed_ms: { p99: number }; list_objects_ms: { p99: number } };
    const last = rows.at(-1) as { check_allowed_ms: { p99: number }; list_objects_ms: { p99: number } };
    out['check_p99_ratio_largest_to_one'] = round(last.check_allowed_ms.p99 / first.check_allowed_ms.p99, 2);
    out['list_p99_ratio_largest_to_one'] = round(last.list_objects_ms.p99 / first.list_objects_ms.p99, 2);
  } finally {
    await close();
  }

  // One organization of many members: the member's check does not grow with its organization.
  const members = options.quick ? 1000 : 10_000;
  const big = await open();
  try {
    const tuples: TupleKey[] = [{ object: 'team:big', relation: 'organization', user: 'organization:big' }, { object: 'document:big', relation: 'viewer', user: 'team:big#member' }, { object: 'document:big', relation: 'org', user: 'organization:big' }];
    for (let i = 0; i < members; i++) tuples.push({ object: 'organization:big', relation: 'member', user: `user:m${i}` }, { object: 'team:big', relation: 'member', user: `user:m${i}` });
    await writeAll(big.engine, tuples);
    await expect(big.engine, `user:m${members - 1}`, 'viewer', 'document:big', true);
    await expect(big.engine, 'user:stranger', 'viewer', 'document:big', false);
    const check = await time(async () => void (await big.engine.check({ user: `user:m${members - 1}`, relation: 'viewer', object: 'document:big' })), runs, 100);
    const denied = await time(async () => void (await big.engine.check({ user: 'user:stranger', relation: 'viewer', object: 'document:big' })), runs, 100);
    out['one_organization'] = { members, check_allowed_ms: check, check_denied_ms: denied };
    log(JSON.stringify(out['one_organization']));
  } finally {
    await big.close();
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await run({ quick: process.argv.includes('--quick') });
  process.stdout.write(`${JSON.stringify({ suite: 'organizations', ...figures })}\n`);
}
