/**
 * watch_fga on the real server, with real clients: an HTTP client reading
 * the Server-Sent Events of `GET /v1/admin/fga/watch`, and a @grpc/grpc-js
 * client of the server-streaming `LatchkeyAdmin/WatchFga`. A client that
 * disconnects at random points (fast-check) and resumes after its last token
 * sees every change once in commit order, identity changes (organization
 * membership, roles, teams, user deletion) included, and so across a server
 * restart (a stream open at shutdown ends at once); the type filter,
 * heartbeats, a bad token and refused credentials.
 * Two replicas on PostgreSQL: test/features/replicas/replicas_watch.test.ts.
 */
import test from 'ava';
import fc from 'fast-check';
import * as grpc from '@grpc/grpc-js';
import { OPERATIONS, generateProto, loadPackageDefinition } from '../../cmd/index.ts';
import { TEST_ADMIN_SECRET, createServerDatabase, startTestServer, type TestServer } from '../helpers/server.ts';
import { readSse, type SseBlock } from '../helpers/sse.ts';

const DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\ntype folder\n  relations\n    define viewer: [user]\n';
const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

interface Change { token: string; kind: string; operation?: string; tuple?: { object: string; relation: string; user: string }; revision?: number }

const show = (c: Change): string => `${c.token} ${c.operation} ${c.tuple?.object}#${c.tuple?.relation}@${c.tuple?.user}`;

async function ok(srv: TestServer, op: string, input: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await srv.call(op, input, { protocol: 'rest', headers: admin });
  if (r.error) throw new Error(`${op}: ${JSON.stringify(r.error)}`);
  return r.body!;
}

/** Every change in the store so far, from the changelog by the engine (the reference order). */
async function changelog(srv: TestServer): Promise<string[]> {
  const engine = srv.server.services.engine!;
  const out: string[] = [];
  let after = 0;
  for (;;) {
    const page = await engine.readChanges({ afterRevision: after, limit: 1000 });
    for (const c of page) out.push(`${c.revision}.${c.seq} ${c.operation} ${c.tuple.object}#${c.tuple.relation}@${c.tuple.user}`);
    if (page.length < 1000) return out;
    after = page.at(-1)!.revision - 1;
    throw new Error('more than 1000 changes: not expected in this test');
  }
}

/** Reads changes over SSE after `token` until `count` were seen or `cut` arrived; returns them (the caller resumes after the last). */
async function sseChanges(srv: TestServer, o: { lastEventId?: string; query?: string; count: number; cut?: number }): Promise<{ changes: Change[]; blocks: SseBlock[] }> {
  const headers: Record<string, string> = { ...admin };
  if (o.lastEventId !== undefined) headers['last-event-id'] = o.lastEventId;
  const stream = await readSse(`${srv.httpUrl}/v1/admin/fga/watch${o.query ?? ''}`, headers);
  const changes: Change[] = [];
  const blocks: SseBlock[] = [];
  try {
    while (changes.length < o.count && (o.cut === undefined || changes.length < o.cut)) {
      const b = await stream.next(10_000);
      blocks.push(b);
      if (b.data !== undefined) changes.push(JSON.parse(b.data) as Change);
    }
  } finally {
    stream.close();
  }
  return { changes, blocks };
}

function grpcAdmin(srv: TestServer): grpc.Client & Record<string, (req: unknown, md: grpc.Metadata) => grpc.ClientReadableStream<Change>> {
  const pkg = grpc.loadPackageDefinition(loadPackageDefinition(generateProto(OPERATIONS))) as unknown as { latchkey: { v1: Record<string, new (a: string, c: grpc.ChannelCredentials) => grpc.Client> } };
  return new pkg.latchkey.v1['LatchkeyAdmin']!(srv.grpcAddress, grpc.credentials.createInsecure()) as never;
}

/** Reads `count` messages of WatchFga (heartbeats included), then cancels. */
function grpcMessages(srv: TestServer, req: Record<string, unknown>, count: number, secret = TEST_ADMIN_SECRET): Promise<Change[] | { code: number; reason: string | undefined }> {
  const client = grpcAdmin(srv);
  const md = new grpc.Metadata();
  if (secret !== '') md.set('x-service-admin-secret', secret);
  return new Promise((resolve, reject) => {
    const got: Change[] = [];
    const call = client['WatchFga']!(req, md);
    const timer = setTimeout(() => {
      call.cancel();
      reject(new Error(`WatchFga: ${got.length} of ${count} messages`));
    }, 15_000);
    call.on('data', (m: Change) => {
      got.push(m);
      if (got.length === count) {
        clearTimeout(timer);
        call.cancel();
        client.close();
        resolve(got);
      }
    });
    call.on('error', (err: grpc.ServiceError) => {
      clearTimeout(timer);
      client.close();
      if (got.length < count) resolve({ code: err.code, reason: err.metadata?.get('x-error-reason')[0]?.toString() });
    });
  });
}

test('watch_fga over SSE and gRPC: resumed at random points it delivers every change once, in commit order, identity changes included, across a restart', async (t) => {
  t.timeout(240_000);
  const db = await createServerDatabase('sqlite');
  t.teardown(() => db.drop());
  let srv = await startTestServer({ 'enable-email-verification': false }, { database: db });
  try {
    await ok(srv, "fga_write_model", { dsl: DSL });
    // Identity changes that write tuples: an organization, a member and their role, a team, then the user's deletion.
    const signup = await srv.call('signup', { email: 'ann@example.com', password: 'correct horse battery staple' }, { protocol: 'rest' });
    const userId = String((signup.body!['user'] as { id: string }).id);
    const org = String((await ok(srv, 'admin_create_organization', { name: 'Acme', slug: 'acme' }))['id']);
    await ok(srv, 'admin_add_organization_member', { organization_id: org, user_id: userId, role: 'admin' });
    await ok(srv, 'admin_update_organization_member', { organization_id: org, user_id: userId, role: 'member' });
    const team = String((await ok(srv, 'admin_create_team', { organization_id: org, name: 'Team' }))['id']);
    await ok(srv, 'admin_add_team_member', { team_id: team, user_id: userId });
    await ok(srv, 'delete_user', { email: 'ann@example.com' });

    let writes = 0;
    const writeSome = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i++, writes++) {
        const type = writes % 3 === 0 ? 'folder' : 'doc';
        await ok(srv, 'fga_write_tuples', { tuples: [{ object: `${type}:${writes}`, relation: 'viewer', user: 'user:u' }] });
        if (writes % 4 === 3) await ok(srv, 'fga_delete_tuples', { tuples: [{ object: `${type}:${writes}`, relation: 'viewer', user: 'user:u' }] });
      }
    };
    await writeSome(6);
    const identity = (await changelog(srv)).filter((c) => c.includes(`organization:${org}`) || c.includes(userId));
    t.true(identity.some((c) => c.includes(' write ') && c.includes(`@user:${userId}`)), 'the membership is in the changelog');
    t.true(identity.some((c) => c.includes(' delete ') && c.includes(`@user:${userId}`)), 'the user deletion removed tuples in the changelog');
    t.true(identity.some((c) => c.includes(`team:${team}`)), 'the team is in the changelog');

    // SSE, cut at random points: every change once, in order (fast-check draws the cuts and how many writes come between reconnections).
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 2 })), { minLength: 1, maxLength: 6 }), async (plan) => {
        let token = '0';
        const seen: string[] = [];
        for (const [cut, more] of plan) {
          const { changes } = await sseChanges(srv, { lastEventId: token, count: Number.POSITIVE_INFINITY, cut });
          for (const c of changes) seen.push(show(c));
          if (changes.length > 0) token = changes.at(-1)!.token;
          await writeSome(more);
        }
        const all = await changelog(srv);
        const rest = await sseChanges(srv, { lastEventId: token, count: all.length - seen.length });
        seen.push(...rest.changes.map(show));
        t.deepEqual(seen, all);
        runs++;
      }),
      { numRuns: 6 },
    );
    t.true(runs > 0);

    // The opening heartbeat carries the start, later ones the position reached; the filter keeps one type.
    const all = await changelog(srv);
    const docs = all.filter((c) => c.includes(' doc:'));
    const filtered = await sseChanges(srv, { query: '?start_token=0&object_type=doc&heartbeat_seconds=1', count: docs.length });
    t.deepEqual(filtered.blocks[0], { id: '0', comments: ['heartbeat 0'] });
    t.deepEqual(filtered.changes.slice(0, docs.length).map(show), docs);
    const idle = await sseChanges(srv, { query: `?start_token=${all.at(-1)!.split(' ')[0]}&heartbeat_seconds=1`, count: 0, cut: 0 });
    t.deepEqual(idle.changes, []);
    {
      const stream = await readSse(`${srv.httpUrl}/v1/admin/fga/watch?heartbeat_seconds=1`, admin);
      const opened = await stream.next(5_000);
      const began = performance.now();
      const beat = await stream.next(5_000);
      stream.close();
      t.deepEqual(beat.comments, [`heartbeat ${opened.id}`]);
      t.true(performance.now() - began > 500);
    }

    // gRPC: the same feed, the same tokens; resuming after any token gives the rest.
    const viaGrpc = await grpcMessages(srv, { start_token: '0' }, all.length + 1);
    t.true(Array.isArray(viaGrpc));
    const msgs = viaGrpc as Change[];
    t.like(msgs[0], { kind: 'heartbeat', token: '0' });
    t.deepEqual(msgs.slice(1).map(show), all);
    const mid = msgs[Math.floor(msgs.length / 2)]!.token;
    const resumed = (await grpcMessages(srv, { start_token: mid }, all.length - all.findIndex((c) => c.startsWith(`${mid} `)))) as Change[];
    t.deepEqual(resumed.slice(1).map(show), all.slice(all.findIndex((c) => c.startsWith(`${mid} `)) + 1));

    // Refusals: a bad token, a token from the future, no credentials, a user's token.
    for (const bad of ['x', '1.', '99999.0']) {
      const r = await srv.call('watch_fga', { start_token: bad }, { protocol: 'rest', headers: admin });
      t.like(r, { status: 400, error: { code: 'invalid_argument', reason: 'invalid_watch_token' } }, bad);
      t.like(await grpcMessages(srv, { start_token: bad }, 1), { code: grpc.status.INVALID_ARGUMENT, reason: 'invalid_watch_token' });
    }
    const lastEvent = await fetch(`${srv.httpUrl}/v1/admin/fga/watch`, { headers: { ...admin, 'last-event-id': 'nope' } });
    t.is(lastEvent.status, 400);
    t.like(await lastEvent.json(), { code: 'invalid_argument', reason: 'invalid_watch_token' });
    t.like(await srv.call('watch_fga', { heartbeat_seconds: 0 }, { protocol: 'rest', headers: admin }), { status: 400, error: { code: 'invalid_argument' } });
    t.like(await srv.call('watch_fga', {}, { protocol: 'rest' }), { status: 401, error: { code: 'unauthenticated' } });
    t.like(await grpcMessages(srv, {}, 1, ''), { code: grpc.status.UNAUTHENTICATED });
    const bob = await srv.call('signup', { email: 'bob@example.com', password: 'correct horse battery staple' }, { protocol: 'rest' });
    const bearer = String(bob.body!['access_token']);
    t.like(await srv.call('watch_fga', {}, { protocol: 'rest', headers: { authorization: `Bearer ${bearer}` } }), { error: { code: 'unauthenticated' } });

    // A restart: resume after the last token on a new process over the same database; changes made meanwhile follow, none twice.
    const before = await changelog(srv);
    const last = before.at(-1)!.split(' ')[0]!;
    // A stream open at shutdown ends at once (its client resumes elsewhere), rather than hold the drain to --shutdown-timeout (2 s here).
    const open = await readSse(`${srv.httpUrl}/v1/admin/fga/watch`, admin);
    await open.next(5_000);
    const closing = performance.now();
    const ended = open.next(5_000).then(() => 'event', (err: Error) => err.message);
    await srv.close();
    t.is(await ended, 'the event stream ended');
    t.true(performance.now() - closing < 1_500, 'the drain did not wait for the stream');
    srv = await startTestServer({ 'enable-email-verification': false }, { database: db });
    await writeSome(3);
    const after = await changelog(srv);
    const again = await sseChanges(srv, { lastEventId: last, count: after.length - before.length });
    t.deepEqual(again.changes.map(show), after.slice(before.length));
    const watchStarted = await srv.server.services.admin!.audit.list({ action: 'admin.fga_watch_started' });
    t.true(watchStarted.pagination.total >= 1, 'starting a watch is audited');
  } finally {
    await srv.close();
  }
});
