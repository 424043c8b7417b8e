/**
 * Security matrix F5: SIGTERM while the server (its own process) answers a
 * steady 50 requests a second of logins and checks, with verification mails
 * going out through a slow SMTP server: every request sent before the signal
 * is answered in full (no connection reset, no 5xx), `/readyz` answers 503 at
 * once (the listener stays open for a moment so that a probe sees it) and is
 * never 200 again, the mail worker finishes the mails it is sending and
 * claims no more (the rest wait in the outbox, none left claimed, no SMTP
 * transaction cut), and the process exits 0 well within 30 s.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { QueryTypes } from 'sequelize';
import { openSequelize } from '../../../engine/sql/sqlite_sequelize.ts';
import { freePort, killOnExit } from '../../helpers/instances.ts';

/** An SMTP server on loopback that takes `delayMs` to accept each mail; records when each transaction began and ended. */
async function slowSmtp(delayMs: number) {
  const state = { port: 0, begun: [] as number[], accepted: [] as number[], cut: 0 };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      state.begun.push(performance.now());
      let ended = false;
      stream.on('data', () => undefined);
      stream.on('end', () => {
        ended = true;
        setTimeout(() => {
          state.accepted.push(performance.now());
          callback();
        }, delayMs);
      });
      stream.on('error', () => {
        if (!ended) state.cut++;
      });
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  state.port = (server.server.address() as AddressInfo).port;
  return { state, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const ADMIN = 'stop-admin-secret';
const PASSWORD = 'correct horse battery staple';
const BIN = join(import.meta.dirname, '..', '..', '..', 'bin', 'latchkey.js');

test('F5 SIGTERM under 50 requests/s: /readyz 503 at once, in-flight requests finish, the mail worker stops after its current mails, exit 0 within 30 s', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-stop-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const smtp = await slowSmtp(1500);
  t.teardown(() => smtp.close());
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    process.execPath,
    [
      BIN,
      'serve',
      '--database-type=sqlite',
      `--database-url=${join(dir, 'stop.sqlite')}`,
      `--admin-secret=${ADMIN}`,
      '--client-id=stop-client',
      '--client-secret=stop-client-secret',
      '--jwt-type=HS256',
      '--jwt-secret=stop-jwt-secret-0123456789abcdef0123456789',
      '--host=127.0.0.1',
      `--http-port=${port}`,
      '--grpc-port=0',
      '--metrics-port=0',
      '--log-level=silent',
      '--shutdown-timeout=10s',
      '--enable-email-verification=true',
      '--smtp-host=127.0.0.1',
      `--smtp-port=${smtp.state.port}`,
      '--smtp-sender-email=noreply@stop.test',
      `--url=${url}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  killOnExit(child);
  child.stderr?.resume();
  t.teardown(() => void child.kill('SIGKILL'));
  const exited = new Promise<{ code: number | null; at: number }>((resolve) => child.once('exit', (code) => resolve({ code, at: performance.now() })));
  const until = Date.now() + 30_000;
  while (!(await fetch(`${url}/readyz`).then((r) => r.ok, () => false))) {
    if (Date.now() > until || child.exitCode !== null) return t.fail('server did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  const post = (path: string, body: unknown, admin = false): Promise<Response> =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: url, ...(admin ? { 'x-service-admin-secret': ADMIN } : {}) },
      body: JSON.stringify(body),
    });
  t.is((await post('/v1/signup', { email: 'stop@stop.test', password: PASSWORD })).status, 200);
  // A verified account for the logins (the link of its mail), and ten more sign-ups whose mails queue up
  // behind the slow SMTP server (two sent at a time, 1.5 s each).
  const sequelize = openSequelize(`sqlite:${join(dir, 'stop.sqlite')}`, { logging: false });
  t.teardown(() => sequelize.close());
  await sequelize.query("UPDATE users SET email_verified_at = 1 WHERE email = 'stop@stop.test'");
  const MAILS = 11;
  for (let k = 1; k < MAILS; k++) t.is((await post('/v1/signup', { email: `mail${k}@stop.test`, password: PASSWORD })).status, 200);
  t.is((await post('/v1/admin/fga/model', { dsl: 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n' }, true)).status, 200);

  const sent: { at: number; result: Promise<number | string> }[] = [];
  let i = 0;
  const timer = setInterval(() => {
    const at = performance.now();
    const request = i++ % 5 === 0 ? post('/v1/login', { email: 'stop@stop.test', password: PASSWORD }) : post('/v1/check_permissions', { user: 'user:u1', checks: [{ relation: 'viewer', object: 'doc:1' }] }, true);
    sent.push({
      at,
      result: request.then(
        async (r) => {
          await r.arrayBuffer();
          return r.status;
        },
        (err: Error & { cause?: { code?: string } }) => err.cause?.code ?? err.message,
      ),
    });
  }, 20);
  await new Promise((r) => setTimeout(r, 1500));
  const signalledAt = performance.now();
  child.kill('SIGTERM');
  // The signal is handled a moment after it is sent: from the first answer that is not 200 on, never ready again.
  const readyAfter: { ms: number; status: number | string }[] = [];
  for (let k = 0; k < 20; k++) {
    const status = await fetch(`${url}/readyz`).then((r) => r.status, (err: Error & { cause?: { code?: string } }) => err.cause?.code ?? 'refused');
    readyAfter.push({ ms: performance.now() - signalledAt, status });
    await new Promise((r) => setTimeout(r, 50));
  }
  clearInterval(timer);
  const { code, at } = await exited;
  const begunAfter = smtp.state.begun.filter((b) => b > signalledAt).length;
  const outbox = await sequelize.query<{ status: string; n: number | string }>('SELECT status, COUNT(*) AS n FROM mail_outbox GROUP BY status', { type: QueryTypes.SELECT });
  const byStatus = Object.fromEntries(outbox.map((r) => [r.status, Number(r.n)]));
  // "Before the signal": issued at least 50 ms before it, so that its connection was open when the
  // listener closed (fetch connects asynchronously; a request issued a moment earlier may connect after).
  const results = await Promise.all(sent.map(async (s) => ({ before: s.at < signalledAt - 50, result: await s.result })));

  const before = results.filter((r) => r.before);
  // 75 are sent at 50/s in 1.5 s; a busy machine delays the timer.
  t.true(before.length >= 30, `${before.length} requests before the signal`);
  t.deepEqual(before.filter((r) => r.result !== 200), [], 'every request sent before SIGTERM is answered 200');
  const firstNotReady = readyAfter.findIndex((r) => r.status !== 200);
  const shown = readyAfter.map((r) => `${Math.round(r.ms)} ms ${r.status}`).join(', ');
  t.true(firstNotReady >= 0 && readyAfter[firstNotReady]!.ms < 500, `not ready within 500 ms of SIGTERM: ${shown}`);
  t.is(readyAfter[firstNotReady]?.status, 503, `a probe finds the server and is told 503 (not a refused connection): ${shown}`);
  t.false(readyAfter.slice(firstNotReady).some((r) => r.status === 200), `ready again after SIGTERM: ${shown}`);
  // The mail worker: what it was sending went out whole; it claimed at most one more batch of two
  // (while the listener drained) and then none; the rest waits in the outbox, none of it left claimed.
  t.is(smtp.state.cut, 0, 'no SMTP transaction cut');
  t.is(byStatus['sending'] ?? 0, 0, 'no mail left claimed');
  t.is(smtp.state.accepted.length + (byStatus['pending'] ?? 0), MAILS, `every mail delivered or waiting: ${JSON.stringify(byStatus)}`);
  t.true(begunAfter <= 2, `mails begun after SIGTERM: ${begunAfter}`);
  t.true((byStatus['pending'] ?? 0) > 0, 'the worker stopped instead of emptying the outbox');
  // Sent after the signal: answered, or refused at the connection (the listener is closed), never a 5xx but 503.
  t.deepEqual(results.filter((r) => !r.before && typeof r.result === 'number' && r.result >= 500 && r.result !== 503), []);
  t.is(code, 0);
  t.true(at - signalledAt < 30_000, `exited ${Math.round(at - signalledAt)} ms after SIGTERM`);
  t.log(`${before.length} requests before SIGTERM, all 200; /readyz after: ${shown}; mails ${smtp.state.accepted.length} delivered (${begunAfter} begun after SIGTERM), ${byStatus['pending'] ?? 0} waiting; exit 0 after ${Math.round(at - signalledAt)} ms`);
});
