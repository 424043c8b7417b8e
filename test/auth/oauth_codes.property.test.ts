/**
 * Authorization codes (auth/oauth_codes.ts) on the in-process and, when
 * LATCHKEY_TEST_REDIS_URL is set, the Redis memory store: for any schedule of
 * redemptions (sequential or concurrent, with or without a session bound in
 * between), a code grants at most once, a code never issued never grants,
 * and once the code has been presented twice the session bound to it is ended.
 */
import test from 'ava';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { AuthorizationCodes, InProcessMemoryStore, RedisMemoryStore, type MemoryStore } from '../../auth/index.ts';
import { redisUrl } from '../helpers/databases.ts';

const numRuns = process.env['CI'] ? 100 : 25;

const GRANT = {
  client_id: 'c',
  redirect_uri: 'https://rp.example/cb',
  scope: ['openid'],
  sid: 'browser-sid',
  user_id: 'u1',
  roles: ['user'],
  login_method: 'basic_auth',
  auth_time: 1,
};

/** One round of presentations: `n` at once. */
const schedule = fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 6 });

const stores: { name: string; make: () => MemoryStore }[] = [{ name: 'in-process', make: () => new InProcessMemoryStore() }];
const redis = redisUrl();
if (redis) stores.push({ name: 'redis', make: () => new RedisMemoryStore({ url: redis, keyPrefix: `lk_codes_${randomBytes(4).toString('hex')}:` }) });

for (const { name, make } of stores) {
  test(`${name}: a code grants at most once; presented again, the session bound to it ends`, async (t) => {
    const store = make();
    try {
      await t.notThrowsAsync(
        fc.assert(
          fc.asyncProperty(schedule, async (rounds) => {
            const ended = new Set<string>();
            const codes = new AuthorizationCodes({ store, endSession: async (sid) => void ended.add(sid) });
            const code = await codes.issue(GRANT, Date.now());
            let granted = 0;
            let presented = 0;
            const childSid = `child-${randomBytes(6).toString('hex')}`;
            let bound: boolean | undefined;
            for (const n of rounds) {
              const answers = await Promise.all(Array.from({ length: n }, () => codes.redeem(code)));
              presented += n;
              for (const a of answers) {
                if (a.kind === 'unknown') return false;
                if (a.kind === 'granted') {
                  granted++;
                  if (a.grant.redirect_uri !== GRANT.redirect_uri || a.grant.sid !== GRANT.sid) return false;
                  bound = await codes.bindSession(a.hash, childSid);
                }
              }
            }
            if (granted !== 1) return false;
            // Two or more presentations: the child session is ended, whether the replay came before
            // the binding (the winner learns it from bindSession) or after (the replay ends it).
            if (presented > 1) return bound === false || ended.has(childSid);
            return bound === true && !ended.has(childSid);
          }),
          { numRuns },
        ),
      );
      for (let i = 0; i < 20; i++) {
        const codes = new AuthorizationCodes({ store, endSession: async () => {} });
        t.is((await codes.redeem(randomBytes(32).toString('base64url'))).kind, 'unknown');
      }
    } finally {
      await store.close();
    }
  });
}
