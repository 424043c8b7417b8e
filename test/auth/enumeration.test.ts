/**
 * Security matrix A6 on the wire, on every SQL backend: `forgot_password` and
 * `signup` for addresses that have an account and for addresses that do not.
 *
 * - `forgot_password`: the same body and status, and the same timing band
 *   (medians of interleaved requests within 20%, or within 2 ms where both
 *   answer in a few milliseconds and scheduling noise is the difference);
 *   for an existing address exactly one mail goes into the outbox, for an
 *   unknown one none (SMTP refuses, so the outbox keeps what was queued).
 * - `signup`: the answer follows the spec's rule (`already_exists` for a
 *   taken address: Errors, rule 1), so parity is about time: a taken address
 *   costs what a new sign-up costs (the password is hashed and the mail
 *   rendered before the uniqueness check), within the same band.
 */
import test from 'ava';
import { QueryTypes } from 'sequelize';
import { openSequelize } from '../../engine/sql/sqlite_sequelize.ts';
import { DynamoDatabase } from '../../auth/index.ts';
import { mainBackends } from '../helpers/main_databases.ts';
import { startTestServer, type CallResult } from '../helpers/server.ts';
import { startSmtp } from '../admin/smtp.ts';

const APP = 'https://app.example.com';
const origin = { origin: APP };
const PASSWORD = 'Correct horse 9 battery!';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** True when two medians (ms) are in one band: within 20% of the larger, or within `floorMs`. */
function inBand(a: number, b: number, floorMs: number): boolean {
  return Math.abs(a - b) <= Math.max(0.2 * Math.max(a, b), floorMs);
}

/**
 * Interleaved timings of `known(i)` and `unknown(i)`, `n` each; measured up to
 * three times so that one burst of a neighbour on a shared machine cannot fail
 * the band alone (a path that differs in cost fails all three).
 */
async function band(n: number, floorMs: number, known: (i: number) => Promise<unknown>, unknown: (i: number) => Promise<unknown>): Promise<{ ok: boolean; runs: Array<[number, number]> }> {
  const runs: Array<[number, number]> = [];
  let offset = 0;
  for (let run = 0; run < 3; run++) {
    const k: number[] = [];
    const u: number[] = [];
    for (let i = 0; i < n; i++) {
      const j = offset + i;
      for (const [f, out] of (i % 2 === 0 ? [[known, k], [unknown, u]] : [[unknown, u], [known, k]]) as Array<[(i: number) => Promise<unknown>, number[]]>) {
        const start = process.hrtime.bigint();
        await f(j);
        out.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
    }
    offset += n;
    runs.push([median(k), median(u)]);
    if (inBand(median(k), median(u), floorMs)) return { ok: true, runs };
  }
  return { ok: false, runs };
}

for (const backend of mainBackends()) {
  test(`A6: forgot_password and signup answer alike, in one timing band, for existing and unknown addresses; one outbox mail per existing address, none otherwise (${backend})`, async (t) => {
    const smtp = await startSmtp();
    smtp.refuse = 421;
    const srv = await startTestServer(
      { 'smtp-host': '127.0.0.1', 'smtp-port': smtp.port, 'smtp-sender-email': 'noreply@example.com', 'allowed-origins': APP, 'enable-email-verification': false },
      { backend },
    );
    // The outbox, read under the store: SQL rows, or the DynamoDB items on the server's table prefix.
    const sequelize = backend === 'dynamodb' ? undefined : openSequelize(srv.database.url, { logging: false });
    const f = srv.database.flags;
    const dynamo =
      backend === 'dynamodb'
        ? DynamoDatabase.open({ region: f['cloud-region']!, endpoint: f['database-url'], accessKeyId: f['cloud-access-key-id'], secretAccessKey: f['cloud-secret-access-key'], tablePrefix: f['cloud-table-prefix'] })
        : undefined;
    try {
      const call = (op: string, input: Record<string, unknown>): Promise<CallResult> => srv.call(op, input, { protocol: 'rest', headers: origin });
      const N = 45; // three runs of 15 at most
      for (let i = 0; i < N; i++) t.is((await call('signup', { email: `known-${i}@example.com`, password: PASSWORD })).status, 200);

      // The answers: one body and one status.
      const answers = new Set<string>();
      const forgot = (email: string) =>
        call('forgot_password', { email, redirect_uri: `${APP}/reset` }).then((r) => {
          answers.add(JSON.stringify([r.status, r.body, r.error]));
          return r;
        });
      const timing = await band(
        15,
        2,
        (i) => forgot(`known-${i}@example.com`),
        (i) => forgot(`unknown-${i}@example.com`),
      );
      t.true(timing.ok, `forgot_password medians (ms) known vs unknown, per run: ${JSON.stringify(timing.runs)}`);
      t.is(answers.size, 1, `one answer: ${[...answers].join(' | ')}`);
      t.like(JSON.parse([...answers][0]!), [200, { message: 'Please check your inbox! We have sent a password reset link.' }]);
      t.log(`${backend}: forgot_password medians known/unknown (ms) ${JSON.stringify(timing.runs)}`);
      const asked = timing.runs.length * 15;

      // The background parts are done once the outbox holds one mail per existing address asked for.
      const outbox = async (): Promise<Array<{ recipient: string; n: number | string }>> => {
        if (sequelize) return sequelize.query<{ recipient: string; n: number | string }>('SELECT recipient, COUNT(*) AS n FROM mail_outbox GROUP BY recipient', { type: QueryTypes.SELECT });
        const counts = new Map<string, number>();
        for (const item of await dynamo!.scan('mail_outbox')) counts.set(String(item['recipient']), (counts.get(String(item['recipient'])) ?? 0) + 1);
        return [...counts].map(([recipient, n]) => ({ recipient, n }));
      };
      const deadline = Date.now() + 20_000;
      while ((await outbox()).length < asked && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      await new Promise((r) => setTimeout(r, 500));
      const rows = await outbox();
      t.deepEqual(
        rows.map((r) => [r.recipient, Number(r.n)]).sort(),
        Array.from({ length: asked }, (_, i) => [`known-${i}@example.com`, 1]).sort(),
        'exactly one mail per existing address, none to an unknown one',
      );

      // Sign-up: taken addresses (already_exists, the spec's rule) cost what new sign-ups cost.
      const codes = new Set<string>();
      const signupTiming = await band(
        5,
        5,
        (i) => call('signup', { email: `KNOWN-${i}@example.com`, password: PASSWORD }).then((r) => codes.add(`taken:${r.error?.code ?? 'ok'}`)),
        (i) => call('signup', { email: `fresh-${i}@example.com`, password: PASSWORD }).then((r) => codes.add(`new:${r.error?.code ?? 'ok'}`)),
      );
      t.true(signupTiming.ok, `signup medians (ms) taken vs new, per run: ${JSON.stringify(signupTiming.runs)}`);
      t.deepEqual([...codes].sort(), ['new:ok', 'taken:already_exists']);
      t.log(`${backend}: signup medians taken/new (ms) ${JSON.stringify(signupTiming.runs)}`);
    } finally {
      await sequelize?.close();
      dynamo?.close();
      await srv.close();
      await smtp.close();
    }
  });
}
