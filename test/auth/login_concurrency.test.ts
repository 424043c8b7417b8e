/**
 * Concurrent logins of one account with the right password. The budget is reserved before the compare
 * (security matrix A2/A3), so at most `maxLoginAttempts` are compared at once and the rest are refused with
 * `too_many_attempts`; a successful login clears the counter, so a burst of correct logins leaves no lock behind.
 */
import test from 'ava';
import { makeService, STRONG_PASSWORD } from './fixtures.ts';

const reasonOf = (r: PromiseSettledResult<unknown>): string => (r.status === 'fulfilled' ? 'ok' : String((r.reason as { reason?: string }).reason));

for (const burst of [6, 50]) {
  test(`${burst} concurrent correct logins: at most five compared at once, the rest refused for now, and no lock is left after the burst`, async (t) => {
    const f = await makeService();
    try {
      await f.auth.signup({ email: 'many@example.com', password: STRONG_PASSWORD });
      const results = await Promise.allSettled(Array.from({ length: burst }, () => f.auth.login({ email: 'many@example.com', password: STRONG_PASSWORD })));
      const reasons = results.map(reasonOf);
      const ok = reasons.filter((r) => r === 'ok').length;
      t.true(ok >= 1 && ok <= 5, `between one and five compared: ${reasons.join(',')}`);
      t.deepEqual([...new Set(reasons.filter((r) => r !== 'ok'))], burst - ok > 0 ? ['too_many_attempts'] : []);
      // The account is not locked: the next correct login succeeds at once, five times in a row.
      for (let i = 0; i < 5; i++) t.truthy((await f.auth.login({ email: 'many@example.com', password: STRONG_PASSWORD })).response.access_token);
      // And the budget still holds for wrong passwords afterwards.
      for (let i = 0; i < 5; i++) await t.throwsAsync(f.auth.login({ email: 'many@example.com', password: 'wrong wrong wrong' }), { message: /invalid|credentials/i });
      const locked = await f.auth.login({ email: 'many@example.com', password: STRONG_PASSWORD }).then(() => 'ok', (e: { reason?: string }) => e.reason);
      t.is(locked, 'too_many_attempts');
    } finally {
      await f.close();
    }
  });
}
