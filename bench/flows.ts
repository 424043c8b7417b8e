/**
 * The server's flows for the benchmark page (`npm run bench -- flows`, and
 * `npm run bench -- page`, which writes docs/benchmarks.md from it and from
 * bench/peers.ts): the real bin in its own process on a SQLite file (HS256
 * access tokens, the in-process session store, every guard on, the rate limit
 * raised by flag), autocannon on loopback at 50 connections, beside a bare
 * `node:http` server answering a fixed JSON (bench/server_path.ts's reference
 * process) measured in the same rounds.
 *
 * - `refresh`: `POST /v1/session` with a refresh token, rotated on every call
 *   (a request takes a session from a pool and puts it back with its new
 *   tokens, so no session is in two requests at once; fresh sessions for
 *   every run, so that a rotation lost when a run stops mid-request never
 *   reuses a spent token);
 * - `validate_jwt`: `POST /v1/validate_jwt_token` of an access token;
 * - `check`: `POST /v1/check_permissions`, one check with a bearer token, 20
 *   documents in turn, half of them allowed through a group;
 * - `list`: `POST /v1/list_permissions`, the user's viewable documents (100
 *   of 200);
 * - `client_credentials`: `POST /oauth/token` of a service account with
 *   `client_secret_basic`;
 * - `switch_organization`: `POST /v1/switch_organization` into an
 *   organization the user owns (new tokens with its claims each time);
 * - `bare_node_http`: the fixed JSON, the check's request.
 *
 * Every flow's answer is checked before timing (a denied check is denied, a
 * wrong client secret refused, the listed documents exactly the viewable
 * ones). Rounds interleave the flows (the order reversed every round); each
 * figure is the median over the rounds, with the server's CPU time per
 * request from /proc, and each flow's requests per second as a share of the
 * bare server's in the same round (median of the rounds' ratios).
 *
 * Standalone: `node bench/flows.ts [--quick]`.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Options } from 'autocannon';
import { autocannonRun, startServerProcess } from './transport.ts';
import { startReferences } from './server_path.ts';
import { stopChild } from '../test/helpers/instances.ts';

const ADMIN = 'bench-admin-secret';
const PASSWORD = 'correct horse battery staple';
const COST = 10;
const CONNECTIONS = 50;
const DOCS = 200;
const DSL = 'model\n  schema 1.1\ntype user\ntype group\n  relations\n    define member: [user]\ntype doc\n  relations\n    define viewer: [user, group#member]\n';

export const FLOWS = ['refresh', 'validate_jwt', 'check', 'list', 'client_credentials', 'switch_organization', 'bare_node_http'] as const;
export type Flow = (typeof FLOWS)[number];

/** What each flow sends (the page's "script" column). */
export const FLOW_REQUESTS: Record<Flow, string> = {
  refresh: 'POST /v1/session (refresh token, rotated)',
  validate_jwt: 'POST /v1/validate_jwt_token',
  check: 'POST /v1/check_permissions (one check, bearer token)',
  list: 'POST /v1/list_permissions (100 of 200 documents)',
  client_credentials: 'POST /oauth/token (client_secret_basic)',
  switch_organization: 'POST /v1/switch_organization',
  bare_node_http: 'bare node:http, fixed JSON',
};

export interface FlowFigures {
  requests_per_second: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  server_cpu_us_per_request: number;
  non_2xx: number;
}

const round2 = (x: number): number => Math.round(x * 100) / 100;
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const log = (m: string): void => void process.stderr.write(`[flows bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', origin: new URL(url).origin, ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

async function ok(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const r = await post(url, body, headers);
  if (r.status !== 200) throw new Error(`${new URL(url).pathname}: ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
  return r.json;
}

interface Account {
  email: string;
  id: string;
  token: string;
  org: string;
}

interface Session {
  token: string;
  refresh: string;
}

export async function run(options: { quick: boolean }): Promise<Record<string, unknown>> {
  const rounds = options.quick ? 1 : 3;
  const seconds = options.quick ? 3 : 8;
  const dir = await mkdtemp(join(tmpdir(), 'lk-bench-flows-'));
  const server = await startServerProcess(dir, [`--bcrypt-cost=${COST}`]);
  const refs = await startReferences();
  const base = server.http;
  const pid = server.child.pid as number;
  const admin = { 'x-service-admin-secret': ADMIN };
  try {
    // Seed: one account per connection, each a member of g0..g4 and the owner of an organization;
    // document i viewable by the members of g(i mod 10).
    await ok(`${base}/v1/admin/fga/model`, { dsl: DSL }, admin);
    const accounts: Account[] = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      const email = `flows${i}@example.com`;
      const up = await ok(`${base}/v1/signup`, { email, password: PASSWORD });
      const id = String((up['user'] as { id: string }).id);
      const token = String(up['access_token']);
      const org = String((await ok(`${base}/v1/create_organization`, { name: `Org ${i}` }, { authorization: `Bearer ${token}` }))['id']);
      accounts.push({ email, id, token, org });
    }
    const tuples = [
      ...accounts.flatMap((a) => [0, 1, 2, 3, 4].map((g) => ({ user: `user:${a.id}`, relation: 'member', object: `group:g${g}` }))),
      ...Array.from({ length: DOCS }, (_, i) => ({ user: `group:g${i % 10}#member`, relation: 'viewer', object: `doc:${i}` })),
    ];
    for (let i = 0; i < tuples.length; i += 100) await ok(`${base}/v1/admin/fga/tuples`, { tuples: tuples.slice(i, i + 100) }, admin);
    const viewable = JSON.stringify(Array.from({ length: DOCS }, (_, i) => i).filter((i) => i % 10 < 5).map((i) => `doc:${i}`).sort());
    const bot = await ok(`${base}/v1/admin/add_client`, { client_id: 'flows-bot', kind: 'service_account' }, admin);
    const basic = `Basic ${Buffer.from(`flows-bot:${String(bot['client_secret'])}`).toString('base64')}`;

    const bearer = (a: { token: string }): Record<string, string> => ({ 'content-type': 'application/json', origin: base, authorization: `Bearer ${a.token}` });
    const listed = (b: Record<string, unknown>): string =>
      JSON.stringify(((b['objects'] ?? b['permissions'] ?? []) as unknown[]).map((o) => (typeof o === 'string' ? o : String((o as { object?: string }).object))).sort());
    const fresh = async (): Promise<Session[]> =>
      Promise.all(accounts.map(async (a) => {
        const b = await ok(`${base}/v1/login`, { email: a.email, password: PASSWORD });
        return { token: String(b['access_token']), refresh: String(b['refresh_token']) };
      }));

    // Verify every answer before timing.
    const a0 = accounts[0]!;
    const [s0] = await fresh();
    const rotated = await ok(`${base}/v1/session`, { refresh_token: s0!.refresh }, { authorization: `Bearer ${s0!.token}` });
    if (typeof rotated['refresh_token'] !== 'string' || rotated['refresh_token'] === s0!.refresh) throw new Error('refresh did not rotate the refresh token');
    if ((await ok(`${base}/v1/validate_jwt_token`, { token_type: 'access_token', token: a0.token }))['is_valid'] !== true) throw new Error('validate_jwt_token refused a valid token');
    if ((await post(`${base}/v1/validate_jwt_token`, { token_type: 'access_token', token: `${a0.token.slice(0, -2)}AA` })).status === 200 && a0.token.slice(-2) !== 'AA') throw new Error('validate_jwt_token accepted a tampered token');
    for (const [doc, want] of [[0, true], [5, false]] as const) {
      const r = await ok(`${base}/v1/check_permissions`, { checks: [{ relation: 'viewer', object: `doc:${doc}` }] }, { authorization: `Bearer ${a0.token}` });
      if ((r['results'] as { allowed: boolean }[])[0]?.allowed !== want) throw new Error(`check of doc:${doc} answered ${JSON.stringify(r)}`);
    }
    if (listed(await ok(`${base}/v1/list_permissions`, { relation: 'viewer', object_type: 'doc' }, { authorization: `Bearer ${a0.token}` })) !== viewable) throw new Error('list_permissions answered other documents');
    const grant = await fetch(`${base}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic }, body: 'grant_type=client_credentials' });
    if (grant.status !== 200) throw new Error(`client_credentials answered ${grant.status}`);
    const wrong = await fetch(`${base}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from('flows-bot:wrong').toString('base64')}` }, body: 'grant_type=client_credentials' });
    if (wrong.status !== 401) throw new Error(`a wrong client secret answered ${wrong.status}`);
    for (let k = 0; k < 2; k++) {
      const sw = await ok(`${base}/v1/switch_organization`, { organization_id: a0.org }, { authorization: `Bearer ${a0.token}` });
      if (typeof sw['access_token'] !== 'string') throw new Error(`switch_organization answered ${JSON.stringify(sw)}`);
    }
    if ((await post(`${refs.http}/v1/check_permissions`, {})).status !== 200) throw new Error('the bare node:http server did not answer 200');
    log('answers verified');

    // The load of each flow: each request takes the next account (autocannon clears a connection's context between
    // requests, so "keeps" would not hold; the flows but refresh do not need it).
    const perConnection = <T>(items: readonly T[]) => {
      let next = 0;
      return (ctx: Record<string, unknown>): T => (ctx['item'] ??= items[next++ % items.length]) as T;
    };
    const optionsOf = async (flow: Flow): Promise<Options> => {
      const url = base;
      switch (flow) {
        case 'refresh': {
          // autocannon clears a connection's context whenever it starts its list of requests again (here, after
          // every answer), so a session is taken from a pool for one request and put back with its rotated
          // tokens: no two requests in flight ever hold one session. Two sessions per connection, so that a
          // request lost to a timeout (its session never put back) leaves the pool enough.
          const pool: Session[] = [...(await fresh()), ...(await fresh())];
          return {
            url,
            requests: [{
              method: 'POST',
              path: '/v1/session',
              setupRequest: (req, ctx) => {
                const s = pool.shift()!;
                ctx['session'] = s;
                return { ...req, headers: bearer(s), body: JSON.stringify({ refresh_token: s.refresh }) };
              },
              onResponse: (status, body, ctx) => {
                const s = ctx['session'] as Session;
                if (status === 200) {
                  const b = JSON.parse(body) as { access_token?: string; refresh_token?: string };
                  if (typeof b.refresh_token === 'string' && typeof b.access_token === 'string') Object.assign(s, { refresh: b.refresh_token, token: b.access_token });
                }
                pool.push(s);
              },
            }],
          };
        }
        case 'validate_jwt': {
          const take = perConnection(accounts);
          return { url, requests: [{ method: 'POST', path: '/v1/validate_jwt_token', setupRequest: (req, ctx) => ({ ...req, headers: { 'content-type': 'application/json', origin: base }, body: JSON.stringify({ token_type: 'access_token', token: take(ctx).token }) }) }] };
        }
        case 'check': {
          const take = perConnection(accounts);
          let i = 0;
          return { url, requests: [{ method: 'POST', path: '/v1/check_permissions', setupRequest: (req, ctx) => ({ ...req, headers: bearer(take(ctx)), body: JSON.stringify({ checks: [{ relation: 'viewer', object: `doc:${((i++ % 20) * 37) % DOCS}` }] }) }) }] };
        }
        case 'list': {
          const take = perConnection(accounts);
          return { url, requests: [{ method: 'POST', path: '/v1/list_permissions', setupRequest: (req, ctx) => ({ ...req, headers: bearer(take(ctx)), body: JSON.stringify({ relation: 'viewer', object_type: 'doc' }) }) }] };
        }
        case 'client_credentials':
          return { url: `${base}/oauth/token`, method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic }, body: 'grant_type=client_credentials' };
        case 'switch_organization': {
          const take = perConnection(accounts);
          return { url, requests: [{ method: 'POST', path: '/v1/switch_organization', setupRequest: (req, ctx) => ({ ...req, headers: bearer(take(ctx)), body: JSON.stringify({ organization_id: take(ctx).org }) }) }] };
        }
        case 'bare_node_http':
          return { url: `${refs.http}/v1/check_permissions`, method: 'POST', headers: bearer(a0), body: JSON.stringify({ checks: [{ relation: 'viewer', object: 'doc:0' }] }) };
      }
    };
    const measure = async (flow: Flow): Promise<FlowFigures> => {
      const p = flow === 'bare_node_http' ? (refs.pid as number) : pid;
      const opts = await optionsOf(flow);
      const c0 = cpuSeconds(p);
      const r = await autocannonRun({ ...opts, connections: CONNECTIONS, duration: seconds });
      const cpu = cpuSeconds(p) - c0;
      const answered = r.requests.total;
      if (r.non2xx > 0) log(`${flow}: answers by status ${JSON.stringify((r as unknown as { statusCodeStats?: unknown }).statusCodeStats)}`);
      return {
        requests_per_second: Math.round(answered / Math.max(r.duration, 1e-3)),
        p50_ms: r.latency.p50,
        p95_ms: r.p95_ms,
        p99_ms: r.latency.p99,
        server_cpu_us_per_request: answered > 0 ? Math.round((cpu / answered) * 1e6) : 0,
        non_2xx: r.non2xx + r.errors + r.timeouts,
      };
    };

    for (const flow of FLOWS) await autocannonRun({ ...(await optionsOf(flow)), connections: CONNECTIONS, duration: 1 });
    const runs = new Map<Flow, FlowFigures[]>(FLOWS.map((f) => [f, []]));
    const loadBefore = loadavg().map(round2);
    for (let r = 0; r < rounds; r++) {
      for (const flow of r % 2 === 0 ? FLOWS : [...FLOWS].reverse()) {
        const f = await measure(flow);
        runs.get(flow)!.push(f);
        log(`round ${r + 1} ${flow}: ${JSON.stringify(f)}`);
      }
    }
    const out: Record<string, unknown> = {
      connections: CONNECTIONS,
      seconds_per_run: seconds,
      rounds,
      bcrypt_cost: COST,
      database: 'SQLite (a file, WAL)',
      sessions: 'in process',
      load_average_before: loadBefore,
      load_average_after: loadavg().map(round2),
    };
    const bare = runs.get('bare_node_http')!;
    for (const flow of FLOWS) {
      const list = runs.get(flow)!;
      const pick = (k: keyof FlowFigures): number => median(list.map((x) => x[k]));
      out[flow] = {
        requests_per_second: pick('requests_per_second'),
        p50_ms: pick('p50_ms'),
        p95_ms: pick('p95_ms'),
        p99_ms: pick('p99_ms'),
        server_cpu_us_per_request: pick('server_cpu_us_per_request'),
        non_2xx: Math.max(...list.map((x) => x.non_2xx)),
        to_bare_node_http: round2(median(list.map((x, i) => x.requests_per_second / Math.max(1, bare[i]!.requests_per_second)))),
      };
    }
    return out;
  } finally {
    refs.stop();
    await stopChild(server.child);
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  process.stdout.write(`${JSON.stringify(await run({ quick: process.argv.includes('--quick') }), null, 2)}\n`);
}
