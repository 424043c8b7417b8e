/**
 * Three server processes on one PostgreSQL database and a Redis of this
 * test's own (so that it can be stopped), SMS second factor enforced, the
 * SMS vendor on loopback. The one-time-code budgets of a login hold across
 * replicas, because their counters live in Redis (`auth/attempts.ts`):
 *
 * - attempts: 5 wrong codes sent in turn to replicas 1, 2, 3, 1, 2 lock the
 *   second factor; the right code is then refused `too_many_attempts` on
 *   every replica (five separate budgets would have allowed fifteen guesses,
 *   and accepted the right code);
 * - resends: 5 `resend_otp` in turn over the three replicas each text a new
 *   code; the sixth is refused on every replica and texts nothing; the last
 *   code sent still signs in;
 * - Redis down: both budgets fail closed, as docs/scaling.md states: the
 *   right code is refused `unavailable` on every replica (the budget cannot
 *   be reserved, so the code is not compared), and a resend is refused and
 *   texts nothing.
 */
import test from 'ava';
import { needs } from '../../helpers/needs.ts';
import { lastCodeTo, smsFlags, startSmsVendor } from '../../helpers/sms_vendor.ts';
import { jsonRequest, replicaBed, type JsonResponse, type Replica } from '../../helpers/cluster.ts';

const PASSWORD = 'correct horse battery staple';
/** MAX_OTP_ATTEMPTS in auth/mfa.ts: wrong codes and resends allowed per user in 15 minutes. */
const BUDGET = 5;

const postgres = process.env['LATCHKEY_TEST_POSTGRES_URL'];

/** The `mfa` challenge cookie an answer sets, as a Cookie header. */
function mfaCookie(r: JsonResponse): string {
  const c = r.cookies.map((x) => x.split(';')[0]!).find((x) => x.startsWith('mfa='));
  if (c === undefined) throw new Error(`no mfa cookie: ${r.status} ${JSON.stringify(r.body)}`);
  return c;
}

/** A six-digit code other than `code`. */
const wrong = (code: string, i: number): string => String((Number(code) + 1 + i) % 1_000_000).padStart(6, '0');

needs(test, 'postgres', 'redis-server')('three replicas: the OTP attempt and resend budgets of one login hold across replicas through Redis, and fail closed without it', async (t) => {
  t.timeout(120_000);
  t.truthy(postgres, 'LATCHKEY_TEST_POSTGRES_URL is required');
  const vendor = await startSmsVendor();
  t.teardown(() => vendor.close());
  const { replicas, publicUrl, run, stopRedis } = await replicaBed(t, {
    prefix: 'replicas_otp',
    flags: [
      '--enable-mfa=true', '--enforce-mfa=true', '--enable-sms-otp=true', '--enable-mobile-basic-authentication=true',
      ...Object.entries(smsFlags(vendor)).map(([k, v]) => `--${k}=${v}`),
    ],
  });
  const call = (r: Replica, op: string, body: unknown, cookie?: string): Promise<JsonResponse> =>
    jsonRequest(`${r.url}/v1/${op}`, { body, headers: { origin: publicUrl, ...(cookie === undefined ? {} : { cookie }) } });
  const digits = String(parseInt(run, 16) % 10_000).padStart(4, '0');
  /** A phone sign-up through `r`: challenged, texted a code. */
  const signup = async (r: Replica, n: number): Promise<{ phone: string; cookie: string; code: string }> => {
    const phone = `+1555040${n}${digits}`;
    const res = await call(r, 'signup', { phone_number: phone, password: PASSWORD });
    t.is(res.status, 200, JSON.stringify(res.body));
    t.true(res.body['should_show_mobile_otp_screen'] as boolean, 'the sign-up is challenged');
    const code = lastCodeTo(vendor, phone);
    t.truthy(code, 'a code was texted within the request');
    return { phone, cookie: mfaCookie(res), code: code! };
  };
  const refusal = (res: JsonResponse) => `${res.status} ${String(res.body['code'])} ${String(res.body['reason'] ?? '')}`;

  // Attempts: five wrong codes over the three replicas spend the one budget; the right code is then refused everywhere.
  const ann = await signup(replicas[0]!, 1);
  for (let i = 0; i < BUDGET; i++) {
    const res = await call(replicas[i % 3]!, 'verify_otp', { phone_number: ann.phone, otp: wrong(ann.code, i) }, ann.cookie);
    t.is(refusal(res), '401 unauthenticated invalid_otp', `wrong code ${i + 1} at replica ${(i % 3) + 1}`);
  }
  for (const r of [replicas[BUDGET % 3]!, ...replicas]) {
    const res = await call(r, 'verify_otp', { phone_number: ann.phone, otp: ann.code }, ann.cookie);
    t.is(refusal(res), '429 resource_exhausted too_many_attempts', `the right code after ${BUDGET} wrong ones, at ${r.url}`);
    t.true(Number((res.body['details'] as Record<string, unknown> | undefined)?.['retry_after_seconds']) >= 1, 'with the time to wait');
  }

  // Resends: five over the three replicas each text a new code; the sixth is refused on every replica and texts nothing.
  const bob = await signup(replicas[1]!, 2);
  let cookie = bob.cookie;
  let code = bob.code;
  for (let i = 0; i < BUDGET; i++) {
    const sent = vendor.messages.length;
    const res = await call(replicas[i % 3]!, 'resend_otp', { phone_number: bob.phone }, cookie);
    t.is(res.status, 200, `resend ${i + 1} at replica ${(i % 3) + 1}: ${JSON.stringify(res.body)}`);
    t.is(vendor.messages.length, sent + 1, 'a new code texted');
    cookie = mfaCookie(res);
    code = lastCodeTo(vendor, bob.phone)!;
  }
  const sentBefore = vendor.messages.length;
  for (const r of replicas) {
    const res = await call(r, 'resend_otp', { phone_number: bob.phone }, cookie);
    t.is(refusal(res), '429 resource_exhausted too_many_attempts', `resend ${BUDGET + 1} at ${r.url}`);
  }
  t.is(vendor.messages.length, sentBefore, 'a refused resend texts nothing');
  const signedIn = await call(replicas[2]!, 'verify_otp', { phone_number: bob.phone, otp: code }, cookie);
  t.is(signedIn.status, 200, `the last code texted still signs in: ${JSON.stringify(signedIn.body)}`);
  t.is(typeof signedIn.body['access_token'], 'string');

  // Redis down: the budgets cannot be reserved, so nothing is compared or sent (fail closed).
  const carol = await signup(replicas[2]!, 3);
  await stopRedis();
  const downAt = performance.now();
  for (const r of replicas) {
    const res = await call(r, 'verify_otp', { phone_number: carol.phone, otp: carol.code }, carol.cookie);
    t.is(res.status, 503, `the right code without Redis at ${r.url}: ${refusal(res)}`);
    t.is(res.body['code'], 'unavailable');
    t.is(typeof res.body['access_token'], 'undefined', 'no session');
  }
  const sentDown = vendor.messages.length;
  for (const r of replicas) {
    const res = await call(r, 'resend_otp', { phone_number: carol.phone }, carol.cookie);
    t.is(res.status, 503, `a resend without Redis at ${r.url}: ${refusal(res)}`);
  }
  t.is(vendor.messages.length, sentDown, 'no code texted without Redis');
  const downFor = performance.now() - downAt;
  t.true(downFor < 15_000, `every refusal at once (${Math.round(downFor)} ms for six requests)`);
  t.log(`attempts: ${BUDGET} wrong codes over three replicas locked the second factor on all three; resends: ${BUDGET} allowed over three replicas, the next refused on each; Redis down: six refusals in ${Math.round(downFor)} ms`);
});
