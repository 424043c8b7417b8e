/**
 * The AuthZEN Authorization API 1.0 over HTTP on the real server.
 *
 * The store is set up with the AuthZEN Todo interoperability scenario: its
 * five users, its four roles (viewer, editor, admin, evil_genius) and its
 * five actions, transcribed from the scenario's published role table
 * (authzen-interop.net, "Todo Application") into an FGA model and tuples of
 * our own; the interop suite's data files are not available here. Every
 * expected decision below is derived from that role table:
 * - can_read_user, can_read_todos: every user;
 * - can_create_todo: editors, admins, evil geniuses;
 * - can_update_todo: the todo's owner when an editor, and evil geniuses;
 * - can_delete_todo: the todo's owner when an editor, and admins.
 *
 * Covered: every evaluation of the scenario (single and boxcarred, with
 * defaults merged), the three evaluation semantics, the three searches
 * against the expected sets and paged with `limit: 1` reassembled equal to
 * the unpaged answer, properties reaching conditions, the decision's reason
 * when asked, metadata, `X-Request-ID`, authentication (preshared key,
 * client token, admin secret; 401/403), the browser CSRF rule not applied,
 * errors (400, 404) and the per-store paths of the OpenFGA API's stores.
 */
import test from 'ava';
import { transformDslToModel } from '../../dsl/index.ts';
import { TEST_ADMIN_SECRET, TEST_CLIENT_ID, TEST_CLIENT_SECRET, startTestServer, type TestServer } from '../helpers/server.ts';

const KEY = 'authzen-test-key-0123456789';
const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

const MODEL = `model
  schema 1.1
type user
  relations
    define can_read_user: [user:*]
type app
  relations
    define viewer: [user]
    define editor: [user]
    define admin: [user]
    define evil_genius: [user]
type todo
  relations
    define app: [app]
    define owner: [user]
    define can_read_todos: viewer from app or editor from app or admin from app or evil_genius from app
    define can_create_todo: editor from app or admin from app or evil_genius from app
    define can_update_todo: (owner and can_create_todo) or evil_genius from app
    define can_delete_todo: (owner and can_create_todo) or admin from app
type report
  relations
    define reader: [user with same_department]
condition same_department(subject_department: string, resource_department: string) {
  subject_department == resource_department
}
`;

const RICK = 'rick@the-citadel.com';
const MORTY = 'morty@the-citadel.com';
const SUMMER = 'summer@the-smiths.com';
const BETH = 'beth@the-smiths.com';
const JERRY = 'jerry@the-smiths.com';
const USERS = [RICK, MORTY, SUMMER, BETH, JERRY];
const ROLES: Record<string, string[]> = { [RICK]: ['admin', 'evil_genius'], [MORTY]: ['editor'], [SUMMER]: ['editor'], [BETH]: ['viewer'], [JERRY]: ['viewer'] };
/** Todos and their owners. */
const TODOS: Record<string, string> = { 't-rick': RICK, 't-morty': MORTY, 't-summer': SUMMER, 't-beth': BETH };
const ACTIONS = ['can_read_user', 'can_read_todos', 'can_create_todo', 'can_update_todo', 'can_delete_todo'];

function tuples(): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const u of USERS) {
    out.push({ user: 'user:*', relation: 'can_read_user', object: `user:${u}` });
    for (const r of ROLES[u]!) out.push({ user: `user:${u}`, relation: r, object: 'app:todo' });
  }
  for (const [t, owner] of Object.entries(TODOS)) {
    out.push({ user: 'app:todo', relation: 'app', object: `todo:${t}` });
    out.push({ user: `user:${owner}`, relation: 'owner', object: `todo:${t}` });
  }
  out.push({ user: `user:${BETH}`, relation: 'reader', object: 'report:q1', condition: { name: 'same_department' } });
  return out;
}

/** The scenario's expected decision, from its role table. */
function expected(subject: string, actionName: string, resource: { type: string; id: string }): boolean {
  const roles = ROLES[subject] ?? [];
  const editorish = roles.some((r) => r === 'editor' || r === 'admin' || r === 'evil_genius');
  const owns = resource.type === 'todo' && TODOS[resource.id] === subject;
  switch (actionName) {
    case 'can_read_user':
      return resource.type === 'user' && USERS.includes(resource.id);
    case 'can_read_todos':
      return resource.type === 'todo' && roles.length > 0;
    case 'can_create_todo':
      return resource.type === 'todo' && editorish;
    case 'can_update_todo':
      return resource.type === 'todo' && ((owns && editorish) || roles.includes('evil_genius'));
    case 'can_delete_todo':
      return resource.type === 'todo' && ((owns && editorish) || roles.includes('admin'));
    default:
      return false;
  }
}

/** The resource every action of the scenario is asked about. */
const resourcesOf = (actionName: string): Array<{ type: string; id: string }> =>
  actionName === 'can_read_user' ? USERS.map((id) => ({ type: 'user', id })) : Object.keys(TODOS).map((id) => ({ type: 'todo', id }));

let srv: TestServer;
let storeId: string;

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

async function post(path: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${KEY}` }): Promise<Answer> {
  const res = await fetch(`${srv.httpUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>), headers: res.headers };
}

async function openfga(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${srv.httpUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

test.before(async () => {
  srv = await startTestServer({ 'openfga-preshared-keys': KEY });
  const m = await srv.call('fga_write_model', { dsl: MODEL }, { protocol: 'rest', headers: ADMIN });
  if (m.status !== 200) throw new Error(JSON.stringify(m.error));
  const w = await srv.call('fga_write_tuples', { tuples: tuples() }, { protocol: 'rest', headers: ADMIN });
  if (w.status !== 200) throw new Error(JSON.stringify(w.error));
  // A second store through the OpenFGA API, with the same model and tuples, for the per-store paths.
  const store = await openfga('POST', '/stores', { name: 'authzen-interop' });
  storeId = store['id'] as string;
  const json = transformDslToModel(MODEL);
  await openfga('POST', `/stores/${storeId}/authorization-models`, { schema_version: json.schema_version, type_definitions: json.type_definitions, conditions: json.conditions });
  await openfga('POST', `/stores/${storeId}/write`, { writes: { tuple_keys: tuples() } });
});
test.after.always(async () => {
  await srv?.close();
});

const PREFIXES = (): string[] => ['', `/stores/${storeId}`];

test('evaluation: every request of the Todo interop scenario answers its expected decision, on the server store and on an OpenFGA store', async (t) => {
  for (const prefix of PREFIXES()) {
    for (const subject of USERS) {
      for (const actionName of ACTIONS) {
        for (const resource of resourcesOf(actionName)) {
          const r = await post(`${prefix}/access/v1/evaluation`, { subject: { type: 'user', id: subject }, action: { name: actionName }, resource });
          t.is(r.status, 200, JSON.stringify(r.body));
          t.deepEqual(r.body, { decision: expected(subject, actionName, resource) }, `${prefix} ${subject} ${actionName} ${resource.type}:${resource.id}`);
        }
      }
    }
  }
});

test('evaluations: defaults merge into each item (an item replaces a default whole), answers in request order, equal to single evaluations', async (t) => {
  for (const prefix of PREFIXES()) {
    for (const subject of USERS) {
      const items: Array<Record<string, unknown>> = [];
      const want: boolean[] = [];
      for (const actionName of ACTIONS) {
        for (const resource of resourcesOf(actionName)) {
          // The default action is can_read_todos; other actions override it.
          items.push(actionName === 'can_read_todos' ? { resource } : { action: { name: actionName }, resource });
          want.push(expected(subject, actionName, resource));
        }
      }
      const r = await post(`${prefix}/access/v1/evaluations`, { subject: { type: 'user', id: subject }, action: { name: 'can_read_todos' }, evaluations: items });
      t.is(r.status, 200, JSON.stringify(r.body));
      t.deepEqual((r.body['evaluations'] as Array<{ decision: boolean }>).map((d) => d.decision), want, `${prefix} ${subject}`);
    }
  }
  // An item's own subject replaces the default subject.
  const mixed = await post('/access/v1/evaluations', {
    subject: { type: 'user', id: BETH },
    action: { name: 'can_create_todo' },
    resource: { type: 'todo', id: 't-beth' },
    evaluations: [{}, { subject: { type: 'user', id: MORTY } }],
  });
  t.deepEqual(mixed.body, { evaluations: [{ decision: false }, { decision: true }] });
  // No items: the request is one evaluation, answered as such.
  const none = await post('/access/v1/evaluations', { subject: { type: 'user', id: MORTY }, action: { name: 'can_create_todo' }, resource: { type: 'todo', id: 't-rick' } });
  t.deepEqual(none.body, { decision: true });
  const empty = await post('/access/v1/evaluations', { subject: { type: 'user', id: BETH }, action: { name: 'can_create_todo' }, resource: { type: 'todo', id: 't-rick' }, evaluations: [] });
  t.deepEqual(empty.body, { decision: false });
});

test('evaluations: the three semantics (execute_all, deny_on_first_deny, permit_on_first_permit); an undecidable item is a denial with its error', async (t) => {
  // Morty: update t-morty (permit), update t-rick (deny), update t-summer (deny), create (permit).
  const base = { subject: { type: 'user', id: MORTY }, action: { name: 'can_update_todo' } };
  const items = [{ resource: { type: 'todo', id: 't-morty' } }, { resource: { type: 'todo', id: 't-rick' } }, { resource: { type: 'todo', id: 't-summer' } }, { action: { name: 'can_create_todo' }, resource: { type: 'todo', id: 't-rick' } }];
  const run = async (semantic?: string): Promise<Answer> => post('/access/v1/evaluations', { ...base, ...(semantic === undefined ? {} : { options: { evaluations_semantic: semantic } }), evaluations: items });
  const decisions = (a: Answer): boolean[] => (a.body['evaluations'] as Array<{ decision: boolean }>).map((d) => d.decision);
  t.deepEqual(decisions(await run()), [true, false, false, true]);
  t.deepEqual(decisions(await run('execute_all')), [true, false, false, true]);
  t.deepEqual(decisions(await run('deny_on_first_deny')), [true, false]);
  t.deepEqual(decisions(await run('permit_on_first_permit')), [true]);
  // Starting with the denials: permit_on_first_permit runs to the first permit.
  const reversed = await post('/access/v1/evaluations', { ...base, options: { evaluations_semantic: 'permit_on_first_permit' }, evaluations: [items[1], items[2], items[0], items[3]] });
  t.deepEqual(decisions(reversed), [false, false, true]);
  // Everything permitted: deny_on_first_deny answers every item.
  const allPermit = await post('/access/v1/evaluations', { subject: { type: 'user', id: RICK }, action: { name: 'can_delete_todo' }, options: { evaluations_semantic: 'deny_on_first_deny' }, evaluations: Object.keys(TODOS).map((id) => ({ resource: { type: 'todo', id } })) });
  t.deepEqual(decisions(allPermit), [true, true, true, true]);

  // An item with an unknown action, or without a resource, is denied with its error; the others are answered.
  const errs = await post('/access/v1/evaluations', { ...base, evaluations: [items[0], { action: { name: 'can_fly' }, resource: { type: 'todo', id: 't-morty' } }, { action: { name: 'can_create_todo' } }, items[3]] });
  t.is(errs.status, 200);
  const out = errs.body['evaluations'] as Array<{ decision: boolean; context?: { error?: { status: number; message: string } } }>;
  t.deepEqual(out.map((d) => d.decision), [true, false, false, true]);
  t.is(out[1]!.context?.error?.status, 400);
  t.is(out[2]!.context?.error?.status, 400);
  t.is(out[0]!.context, undefined);
  // deny_on_first_deny stops at an undecidable item.
  const stop = await post('/access/v1/evaluations', { ...base, options: { evaluations_semantic: 'deny_on_first_deny' }, evaluations: [items[0], { action: { name: 'can_fly' }, resource: { type: 'todo', id: 't-morty' } }, items[3]] });
  t.deepEqual(decisions(stop), [true, false]);

  // An unknown semantic, and a list that is not a list, are malformed requests.
  t.is((await run('first_come')).status, 400);
  t.is((await post('/access/v1/evaluations', { ...base, evaluations: { resource: {} } })).status, 400);
  t.is((await post('/access/v1/evaluations', { ...base, evaluations: Array.from({ length: 101 }, () => items[0]) })).status, 400);
});

/** Every page of a search, `limit` results at a time; the pages' results joined. */
async function walk(path: string, body: Record<string, unknown>, limit: number): Promise<{ results: unknown[]; pages: number }> {
  const results: unknown[] = [];
  let token = '';
  let pages = 0;
  do {
    const r = await post(path, { ...body, page: { limit, ...(token === '' ? {} : { token }) } });
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
    const page = r.body['page'] as { next_token: string; count: number; total?: number };
    const got = r.body['results'] as unknown[];
    if (page.count !== got.length || got.length > limit) throw new Error(`page count ${page.count} for ${got.length} results`);
    results.push(...got);
    token = page.next_token;
    pages++;
    if (pages > 1000) throw new Error('endless walk');
  } while (token !== '');
  return { results, pages };
}

test('search: resource, subject and action searches answer the expected sets; paged with limit 1 and reassembled they equal the unpaged answer', async (t) => {
  for (const prefix of PREFIXES()) {
    for (const actionName of ACTIONS) {
      const type = actionName === 'can_read_user' ? 'user' : 'todo';
      // Resource search, per subject.
      for (const subject of USERS) {
        const body = { subject: { type: 'user', id: subject }, action: { name: actionName }, resource: { type } };
        const unpaged = await post(`${prefix}/access/v1/search/resource`, body);
        t.is(unpaged.status, 200, JSON.stringify(unpaged.body));
        const want = resourcesOf(actionName).filter((r) => expected(subject, actionName, r)).map((r) => ({ type, id: r.id })).sort((a, b) => (a.id < b.id ? -1 : 1));
        t.deepEqual(unpaged.body['results'], want, `${prefix} resource ${subject} ${actionName}`);
        t.deepEqual(unpaged.body['page'], { next_token: '', count: want.length, total: want.length });
        const paged = await walk(`${prefix}/access/v1/search/resource`, body, 1);
        t.deepEqual(paged.results, unpaged.body['results']);
      }
      // Subject search, per resource: users only (the wildcard of can_read_user is answered as `user:*`).
      for (const resource of resourcesOf(actionName)) {
        const body = { subject: { type: 'user' }, action: { name: actionName }, resource };
        const unpaged = await post(`${prefix}/access/v1/search/subject`, body);
        t.is(unpaged.status, 200, JSON.stringify(unpaged.body));
        const want = actionName === 'can_read_user' ? [{ type: 'user', id: '*' }] : USERS.filter((u) => expected(u, actionName, resource)).sort().map((id) => ({ type: 'user', id }));
        t.deepEqual(unpaged.body['results'], want, `${prefix} subject ${actionName} ${resource.id}`);
        const paged = await walk(`${prefix}/access/v1/search/subject`, body, 1);
        t.deepEqual(paged.results, unpaged.body['results']);
      }
    }
    // Action search, per subject and todo: the scenario's actions held (the role relations are on app, not todo).
    for (const subject of USERS) {
      for (const resource of resourcesOf('can_update_todo')) {
        const body = { subject: { type: 'user', id: subject }, resource };
        const unpaged = await post(`${prefix}/access/v1/search/action`, body);
        t.is(unpaged.status, 200, JSON.stringify(unpaged.body));
        const held = ACTIONS.filter((a) => a !== 'can_read_user' && expected(subject, a, resource));
        if (TODOS[resource.id] === subject) held.push('owner');
        t.deepEqual(unpaged.body['results'], held.sort().map((name) => ({ name })), `${prefix} action ${subject} ${resource.id}`);
        const paged = await walk(`${prefix}/access/v1/search/action`, body, 1);
        t.deepEqual(paged.results, unpaged.body['results']);
        t.is(paged.pages, Math.max(1, held.length));
      }
    }
  }
});

test.serial('search: pages of any size reassemble the answer; a token is bound to its search; malformed pages are refused', async (t) => {
  const body = { subject: { type: 'user', id: RICK }, action: { name: 'can_update_todo' }, resource: { type: 'todo' } };
  const all = (await post('/access/v1/search/resource', body)).body['results'];
  for (const limit of [1, 2, 3, 4, 5, 1000, 5000]) t.deepEqual((await walk('/access/v1/search/resource', body, limit)).results, all, `limit ${limit}`);
  const first = await post('/access/v1/search/resource', { ...body, page: { limit: 2 } });
  const token = (first.body['page'] as { next_token: string }).next_token;
  t.not(token, '');
  // `total` where known: a first page that stopped early (the engine's candidate scan) does not know it; one that holds the whole answer does.
  t.is((first.body['page'] as { total?: number }).total, undefined);
  const whole = await post('/access/v1/search/resource', { ...body, page: { limit: 10 } });
  t.is((whole.body['page'] as { total: number }).total, 4);
  // The draft's request field `next_token` is accepted for `token`.
  const second = await post('/access/v1/search/resource', { ...body, page: { limit: 2, next_token: token } });
  t.deepEqual(second.body['results'], (all as unknown[]).slice(2, 4));
  // The same token for another search, a forged token, a bad limit.
  const other = await post('/access/v1/search/resource', { ...body, subject: { type: 'user', id: MORTY }, page: { token } });
  t.is(other.status, 400);
  t.is(other.body['reason'], 'invalid_page_token');
  // Tuples written and deleted between pages do not change a walk: it answers at its first page's revision.
  const summerBody = { subject: { type: 'user', id: SUMMER }, action: { name: 'can_update_todo' }, resource: { type: 'todo' } };
  const before = (await post('/access/v1/search/resource', summerBody)).body['results'];
  t.deepEqual(before, [{ type: 'todo', id: 't-summer' }]);
  await srv.call('fga_write_tuples', { tuples: [{ user: `user:${SUMMER}`, relation: 'owner', object: 'todo:t-a' }, { user: 'app:todo', relation: 'app', object: 'todo:t-a' }] }, { protocol: 'rest', headers: ADMIN });
  const p1 = await post('/access/v1/search/resource', { ...summerBody, page: { limit: 1 } });
  t.deepEqual(p1.body['results'], [{ type: 'todo', id: 't-a' }]);
  await srv.call('fga_delete_tuples', { tuples: [{ user: `user:${SUMMER}`, relation: 'owner', object: 'todo:t-summer' }] }, { protocol: 'rest', headers: ADMIN });
  await srv.call('fga_write_tuples', { tuples: [{ user: `user:${SUMMER}`, relation: 'owner', object: 'todo:t-z' }, { user: 'app:todo', relation: 'app', object: 'todo:t-z' }] }, { protocol: 'rest', headers: ADMIN });
  const p2 = await post('/access/v1/search/resource', { ...summerBody, page: { limit: 1, token: (p1.body['page'] as { next_token: string }).next_token } });
  t.deepEqual(p2.body['results'], [{ type: 'todo', id: 't-summer' }]);
  t.is((p2.body['page'] as { next_token: string }).next_token, '');
  // Put the scenario back for the other tests.
  await srv.call('fga_write_tuples', { tuples: [{ user: `user:${SUMMER}`, relation: 'owner', object: 'todo:t-summer' }] }, { protocol: 'rest', headers: ADMIN });
  await srv.call('fga_delete_tuples', { tuples: [{ user: `user:${SUMMER}`, relation: 'owner', object: 'todo:t-a' }, { user: 'app:todo', relation: 'app', object: 'todo:t-a' }, { user: `user:${SUMMER}`, relation: 'owner', object: 'todo:t-z' }, { user: 'app:todo', relation: 'app', object: 'todo:t-z' }] }, { protocol: 'rest', headers: ADMIN });
  t.is((await post('/access/v1/search/resource', { ...body, page: { token: 'bm90IGEgdG9rZW4' } })).status, 400);
  t.is((await post('/access/v1/search/resource', { ...body, page: { limit: -1 } })).status, 400);
  t.is((await post('/access/v1/search/resource', { ...body, page: { limit: 1.5 } })).status, 400);
  t.is((await post('/access/v1/search/resource', { ...body, page: 'next' })).status, 400);
});

test('properties and context feed the conditions (subject_<name>, resource_<name>; context wins); the reason is in the decision context when asked', async (t) => {
  const ask = (subjectDept: string | undefined, resourceDept: string, context?: Record<string, unknown>): Promise<Answer> =>
    post('/access/v1/evaluation', {
      subject: { type: 'user', id: BETH, ...(subjectDept === undefined ? {} : { properties: { department: subjectDept } }) },
      action: { name: 'reader' },
      resource: { type: 'report', id: 'q1', properties: { department: resourceDept } },
      ...(context === undefined ? {} : { context }),
    });
  t.deepEqual((await ask('sales', 'sales')).body, { decision: true });
  t.deepEqual((await ask('sales', 'legal')).body, { decision: false });
  t.deepEqual((await ask('sales', 'legal', { subject_department: 'legal' })).body, { decision: true });
  // A condition parameter missing from both: the engine cannot decide, a 400, never a silent answer.
  t.is((await ask(undefined, 'legal')).status, 400);

  const why = await post('/access/v1/evaluation', { subject: { type: 'user', id: MORTY }, action: { name: 'can_delete_todo' }, resource: { type: 'todo', id: 't-rick' }, options: { include_reason: true } });
  t.deepEqual(why.body, { decision: false, context: { reason_admin: { en: `user:${MORTY} does not hold can_delete_todo on todo:t-rick` } } });
  const yes = await post('/access/v1/evaluations', { subject: { type: 'user', id: MORTY }, action: { name: 'can_delete_todo' }, options: { include_reason: true }, evaluations: [{ resource: { type: 'todo', id: 't-morty' } }] });
  t.deepEqual(yes.body, { evaluations: [{ decision: true, context: { reason_admin: { en: `user:${MORTY} holds can_delete_todo on todo:t-morty` } } }] });
});

test('metadata: the server store and each store list every endpoint under the decision point identifier', async (t) => {
  const issuer = ((await (await fetch(`${srv.httpUrl}/.well-known/openid-configuration`)).json()) as { issuer: string }).issuer;
  const doc = async (path: string): Promise<Record<string, unknown>> => {
    const res = await fetch(`${srv.httpUrl}${path}`);
    t.is(res.status, 200, path);
    return (await res.json()) as Record<string, unknown>;
  };
  const expect = (base: string): Record<string, unknown> => ({
    policy_decision_point: base,
    access_evaluation_endpoint: `${base}/access/v1/evaluation`,
    access_evaluations_endpoint: `${base}/access/v1/evaluations`,
    search_subject_endpoint: `${base}/access/v1/search/subject`,
    search_resource_endpoint: `${base}/access/v1/search/resource`,
    search_action_endpoint: `${base}/access/v1/search/action`,
  });
  t.deepEqual(await doc('/.well-known/authzen-configuration'), expect(issuer));
  t.deepEqual(await doc(`/.well-known/authzen-configuration/stores/${storeId}`), expect(`${issuer}/stores/${storeId}`));
  t.deepEqual(await doc(`/.well-known/authzen-configuration/${storeId}`), expect(`${issuer}/stores/${storeId}`));
  t.is((await fetch(`${srv.httpUrl}/.well-known/authzen-configuration/not-a-store`)).status, 404);
});

test('authentication: preshared key, client token and admin secret query; a user token is 403; none or a wrong one 401; no CSRF rule; X-Request-ID echoed', async (t) => {
  const body = { subject: { type: 'user', id: MORTY }, action: { name: 'can_create_todo' }, resource: { type: 'todo', id: 't-rick' } };
  const path = '/access/v1/evaluation';
  // A client_credentials token of this server's client.
  const tokenRes = await fetch(`${srv.httpUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${TEST_CLIENT_ID}:${TEST_CLIENT_SECRET}`).toString('base64')}` },
    body: 'grant_type=client_credentials',
  });
  t.is(tokenRes.status, 200);
  const clientToken = ((await tokenRes.json()) as { access_token: string }).access_token;
  t.deepEqual((await post(path, body, { authorization: `Bearer ${clientToken}` })).body, { decision: true });
  t.deepEqual((await post(path, body, ADMIN)).body, { decision: true });
  // A user's own access token may not query the decision point.
  const signup = await srv.call('signup', { email: 'authzen-user@example.com', password: 'a long enough passphrase' }, { protocol: 'rest' });
  const userToken = signup.body!['access_token'] as string;
  const asUser = await post(path, body, { authorization: `Bearer ${userToken}` });
  t.is(asUser.status, 403);
  t.is(asUser.body['code'], 'permission_denied');
  t.is((await post(path, body, {})).status, 401);
  t.is((await post(path, body, { authorization: 'Bearer wrong-key' })).status, 401);
  t.is((await post(path, body, { 'x-service-admin-secret': 'wrong' })).status, 401);
  // Another store's paths take the OpenFGA API's keys only.
  t.is((await post(`/stores/${storeId}${path}`, body, { authorization: `Bearer ${clientToken}` })).status, 401);
  t.is((await post(`/stores/${storeId}${path}`, body, ADMIN)).status, 401);
  // A foreign Origin (a browser's cross-site request would carry one) is not refused by the CSRF rule here; a key is what counts.
  const crossSite = await post(path, body, { authorization: `Bearer ${KEY}`, origin: 'https://elsewhere.example' });
  t.deepEqual(crossSite.body, { decision: true });
  // X-Request-ID is echoed.
  const id = 'bfe9eb29-ab87-4ca3-be83-a1d5d8305716';
  const echoed = await post(path, body, { authorization: `Bearer ${KEY}`, 'x-request-id': id });
  t.is(echoed.headers.get('x-request-id'), id);
});

test('errors: malformed requests are 400, an unknown store 404, a denial 200 with decision false', async (t) => {
  const path = '/access/v1/evaluation';
  const ok = { subject: { type: 'user', id: JERRY }, action: { name: 'can_create_todo' }, resource: { type: 'todo', id: 't-rick' } };
  t.deepEqual((await post(path, ok)).body, { decision: false });
  const bad = async (body: unknown, reason?: string): Promise<void> => {
    const r = await post(path, body);
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.body['code'], 'invalid_argument');
    if (reason !== undefined) t.is(r.body['reason'], reason);
    t.is(typeof r.body['message'], 'string');
  };
  await bad('{"subject":', 'malformed_json');
  await bad('[1,2]', 'malformed_json');
  await bad({ ...ok, subject: undefined });
  await bad({ ...ok, subject: { type: 'user' } });
  await bad({ ...ok, subject: { type: '', id: 'x' } });
  await bad({ ...ok, subject: { type: 'user', id: 7 } });
  await bad({ ...ok, subject: { type: 'user:x', id: 'y' } });
  await bad({ ...ok, action: { } });
  await bad({ ...ok, resource: { type: 'todo' } });
  await bad({ ...ok, context: ['not', 'an', 'object'] });
  await bad({ ...ok, subject: { type: 'user', id: JERRY, properties: 'x' } });
  // Types and relations the model does not know.
  await bad({ ...ok, action: { name: 'can_fly' } }, 'relation_not_found');
  await bad({ ...ok, resource: { type: 'spaceship', id: '1' } }, 'type_not_found');
  await bad({ ...ok, options: { include_reason: 'yes' } });
  // Search requests without their required parts.
  t.is((await post('/access/v1/search/resource', { subject: { type: 'user', id: RICK }, action: { name: 'can_read_todos' } })).status, 400);
  t.is((await post('/access/v1/search/subject', { subject: {}, action: { name: 'can_read_todos' }, resource: { type: 'todo', id: 't-rick' } })).status, 400);
  t.is((await post('/access/v1/search/action', { subject: { type: 'user', id: RICK }, resource: { type: 'todo' } })).status, 400);
  // Unknown store: 404.
  const missing = await post('/stores/01ARZ3NDEKTSV4RRFFQ69G5FAV/access/v1/evaluation', ok);
  t.is(missing.status, 404);
  t.is(missing.body['reason'], 'store_not_found');
});
