/**
 * Security matrix E3 for the sign-ups that do not go through `signup`: a
 * social login's first callback (oidc-provider on loopback as the
 * `--oidc-issuer`), which stores the user, and a magic-link account's first
 * `verify_email`, which uses up the link and verifies the address. Each
 * writes its `user.signup` audit row and webhook deliveries in that same
 * transaction, so on every SQL backend:
 *
 * - the server is killed while the transaction is held right after the
 *   user's rows (a trigger stalls the webhook delivery's insert) and right
 *   after the delivery (stalling the audit row's): nothing of that sign-up
 *   is left (no user, or the account still unverified with its link unused),
 *   and no audit row or delivery either;
 * - after the restart the client's retry (a new login with the provider, or
 *   the same link) signs up whole: the user with exactly one audit row and
 *   one delivery, and a further retry (a login, or the used link refused)
 *   adds none;
 * - the deliveries, pending while the receiver was down across the kills,
 *   arrive once it is up, under the ids they were queued with; the audit
 *   chain is whole.
 */
import test, { type ExecutionContext } from 'ava';
import { openSequelize } from '../../../engine/sql/sqlite_sequelize.ts';
import { AuditLog } from '../../../admin/index.ts';
import { createTestDatabase, sqlBackends, type SqlBackend } from '../../helpers/databases.ts';
import { CookieJar, drive, landingParams, request, startOidcProvider, type OidcProvider } from '../../helpers/social.ts';
import { mailsTo, startSmtp, type Smtp } from '../../admin/smtp.ts';
import { startReceiver } from '../../admin/receiver.ts';
import { addSignupWebhook, count, deliveriesResume, exited, post, serverFlags, stallOf, startCrashServer, storedDeliveries, type CrashServer } from '../../helpers/crash.ts';

type Rows = Record<string, number>;

/** One way of signing up, driven over HTTP against the server at `url`. */
interface Flow {
  /**
   * Everything before the request whose transaction stores (or activates) the user, so that no
   * insert of it meets the stall; resolves to that request (its status, or `connection lost`).
   */
  prepare(email: string): Promise<() => Promise<number | 'connection lost'>>;
  /** The client's retry once the server is back: the user is signed up. */
  retry(email: string): Promise<void>;
  /** A second retry, after the first signed up: a login, or the used link refused; stores no second sign-up. */
  again(email: string): Promise<void>;
  /** The sign-up's rows. */
  rows(email: string): Promise<Rows>;
  /** `rows` of a sign-up cut before it committed, and of one stored whole. */
  nothing: Rows;
  whole: Rows;
}

interface World {
  server: CrashServer;
  smtp: Smtp;
  /** The provider that registers the callback of the server's current port. */
  readonly op: OidcProvider;
}

const lost = () => 'connection lost' as const;

async function startWorld(t: ExecutionContext, backend: SqlBackend, dbUrl: string): Promise<World> {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  // The provider registers the server's callback, which names its port: a start on a fresh port starts another for it.
  let op: { port: number; provider: OidcProvider } | undefined;
  t.teardown(() => op?.provider.close());
  const server = await startCrashServer(async (port) => {
    if (op?.port !== port) {
      await op?.provider.close();
      const provider = await startOidcProvider({ clientId: 'crash-oidc', clientSecret: 'crash-oidc-secret', redirectUris: [`http://127.0.0.1:${port}/oauth_callback/oidc`] });
      op = { port, provider };
    }
    return [
      ...serverFlags(backend, dbUrl, port, smtp.port),
      '--enable-magic-link-login=true',
      `--oidc-issuer=${op.provider.issuer}`,
      '--oidc-client-id=crash-oidc',
      '--oidc-client-secret=crash-oidc-secret',
    ];
  });
  return {
    server,
    smtp,
    get op() {
      return (op as { provider: OidcProvider }).provider;
    },
  };
}

/** Social login with the generic OpenID provider: the first callback of an account creates its user. */
function socialFlow(t: ExecutionContext, w: World, sequelize: ReturnType<typeof openSequelize>): Flow {
  const start = (email: string): URL => {
    w.op.accounts.set(email, { email, email_verified: true, given_name: 'Crash' });
    w.op.account = email;
    const u = new URL(`${w.server.url}/oauth_login/oidc`);
    u.searchParams.set('redirect_uri', `${w.server.url}/done`);
    return u;
  };
  const signIn = async (email: string, what: string): Promise<void> => {
    const landing = await drive(new CookieJar(), start(email), (u) => u.origin === w.server.url && u.pathname === '/done');
    t.truthy(landingParams(landing.url)?.get('access_token'), `${what} of ${email} is signed in`);
  };
  return {
    prepare: async (email) => {
      const jar = new CookieJar();
      // Stops before the callback: the login's own audit row (oauth.login_initiated) is written by then.
      const atCallback = await drive(jar, start(email), (u) => u.origin === w.server.url && u.pathname === '/oauth_callback/oidc');
      const callback = atCallback.url;
      if (callback === undefined) throw new Error(`the login of ${email} did not reach the callback`);
      return () => request(jar, callback).then((r) => r.status, lost);
    },
    retry: (email) => signIn(email, 'the retried login'),
    again: (email) => signIn(email, 'a later login'),
    rows: async (email) => ({
      users: await count(sequelize, 'SELECT COUNT(*) AS n FROM users WHERE email = ?', [email]),
      claims: await count(sequelize, "SELECT COUNT(*) AS n FROM user_identifiers WHERE kind = 'email' AND value = ?", [email]),
      audits: await count(sequelize, "SELECT COUNT(*) AS n FROM audit_logs WHERE action = 'user.signup' AND actor_email = ?", [email]),
      deliveries: (await storedDeliveries(sequelize)).get(email)?.length ?? 0,
    }),
    nothing: { users: 0, claims: 0, audits: 0, deliveries: 0 },
    whole: { users: 1, claims: 1, audits: 1, deliveries: 1 },
  };
}

/** Magic link: `magic_link_login` creates the account unverified; its first `verify_email` is its sign-up. */
function magicFlow(t: ExecutionContext, w: World, sequelize: ReturnType<typeof openSequelize>): Flow {
  const tokens = new Map<string, string>();
  const verify = (email: string) => post(w.server.url, '/v1/verify_email', { token: tokens.get(email) ?? '' });
  return {
    prepare: async (email) => {
      t.is((await post(w.server.url, '/v1/magic_link_login', { email })).status, 200);
      const mail = (await mailsTo(w.smtp, email))[0] ?? '';
      const token = /token=([A-Za-z0-9_-]+)/.exec(mail)?.[1];
      if (token === undefined) throw new Error(`no link in the mail to ${email}`);
      tokens.set(email, token);
      // The request's audit row (written in the background once the mail is queued) is in before the stall.
      const until = Date.now() + 10_000;
      while ((await count(sequelize, "SELECT COUNT(*) AS n FROM audit_logs WHERE action = 'user.magic_link_requested' AND actor_email = ?", [email])) === 0) {
        if (Date.now() > until) throw new Error(`no user.magic_link_requested row for ${email}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return () => verify(email).then((r) => r.status, lost);
    },
    // The link was not used up: the same link signs up.
    retry: async (email) => {
      const r = await verify(email);
      t.is(r.status, 200, JSON.stringify(r.body));
      t.truthy(r.body['access_token'], `the retried link of ${email} signs in`);
    },
    again: async (email) => {
      const r = await verify(email);
      t.is(r.status, 401);
      t.is(r.body['reason'], 'invalid_token', 'a used link is refused');
    },
    rows: async (email) => ({
      users: await count(sequelize, 'SELECT COUNT(*) AS n FROM users WHERE email = ?', [email]),
      verified: await count(sequelize, 'SELECT COUNT(*) AS n FROM users WHERE email = ? AND email_verified_at IS NOT NULL', [email]),
      links: await count(sequelize, "SELECT COUNT(*) AS n FROM verification_requests WHERE identifier = 'magic_link_login' AND email = ?", [email]),
      audits: await count(sequelize, "SELECT COUNT(*) AS n FROM audit_logs WHERE action = 'user.signup' AND actor_email = ?", [email]),
      deliveries: (await storedDeliveries(sequelize)).get(email)?.length ?? 0,
    }),
    nothing: { users: 1, verified: 0, links: 1, audits: 0, deliveries: 0 },
    whole: { users: 1, verified: 1, links: 0, audits: 1, deliveries: 1 },
  };
}

async function faultPoints(t: ExecutionContext, backend: SqlBackend, flowOf: (t: ExecutionContext, w: World, sequelize: ReturnType<typeof openSequelize>) => Flow, name: string): Promise<void> {
  const db = await createTestDatabase(backend);
  t.teardown(() => db.drop());
  // Down until the end: the sign-ups' webhook deliveries stay pending across the kills and restarts.
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  receiver.down = true;
  const w = await startWorld(t, backend, db.url);
  t.teardown(() => void w.server.child.kill('SIGKILL'));
  await addSignupWebhook(w.server.url, receiver);
  const sequelize = openSequelize(db.url, { logging: false });
  t.teardown(() => sequelize.close());
  const flow = flowOf(t, w, sequelize);
  const stall = stallOf(backend, sequelize, db.url);

  // A first sign-up goes through whole (and creates the tables the triggers are put on).
  const signedUp = [`first-${name}@crash.test`];
  await (await flow.prepare(signedUp[0]!))();
  t.deepEqual(await flow.rows(signedUp[0]!), flow.whole, 'the first sign-up is stored whole');

  for (const table of ['webhook_deliveries', 'audit_logs']) {
    const email = `${name}-cut-${table.replace('_', '-')}@crash.test`;
    const send = await flow.prepare(email);
    await stall.install(table);
    const answer = send();
    await stall.stalled(table);
    w.server.child.kill('SIGKILL');
    await exited(w.server.child);
    t.is(await answer, 'connection lost', `the ${name} sign-up cut before its ${table} row got no answer`);
    await stall.endOrphan();
    const until = Date.now() + 10_000;
    while (JSON.stringify(await flow.rows(email)) !== JSON.stringify(flow.nothing) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    t.deepEqual(await flow.rows(email), flow.nothing, `a ${name} sign-up killed before its ${table} row left nothing of it`);
    await stall.remove(table);

    await w.server.restart();
    await flow.retry(email);
    t.deepEqual(await flow.rows(email), flow.whole, `the retried ${name} sign-up of ${email} is stored whole`);
    signedUp.push(email);
    await flow.again(email);
    t.deepEqual(await flow.rows(email), flow.whole, `a further retry of ${email} records no second sign-up`);
  }
  t.like(await new AuditLog({ sequelize }).verifyChain(), { ok: true }, 'the audit chain is whole');
  // The receiver is back: every sign-up's delivery, pending across the kills and restarts, arrives once.
  await deliveriesResume(t, sequelize, receiver, signedUp);
  w.server.child.kill('SIGTERM');
  await exited(w.server.child);
}

for (const backend of sqlBackends()) {
  test(`E3 social sign-up: SIGKILL right after the user's rows and right after the webhook delivery: nothing left, the next login signs up whole, the webhook deliveries arrive (${backend})`, async (t) => {
    await faultPoints(t, backend, socialFlow, 'social');
  });

  test(`E3 magic-link sign-up: SIGKILL in the first verify_email right after the verified user and right after the webhook delivery: nothing changed, the same link signs up whole, the webhook deliveries arrive (${backend})`, async (t) => {
    await faultPoints(t, backend, magicFlow, 'magic');
  });
}
