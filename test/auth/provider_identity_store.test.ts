/**
 * The provider identity store on every main-database backend (SQLite always,
 * PostgreSQL and MySQL when configured, DynamoDB on dynalite): (provider,
 * subject) belongs to one user at most, under races too; a second link by
 * its owner only brings the address up to date; another user's link is
 * refused and changes nothing; unlink removes one provider's identities of
 * one user; subjects compare byte for byte; a deleted user's identities go
 * with it. And the migration takes the next free id of the identity store.
 */
import test from 'ava';
import { AUTH_MIGRATIONS, openAuthStores, type AuthStores } from '../../auth/index.ts';
import { LatchkeyError } from '../../engine/index.ts';
import { mainBackends, openTestMain, type MainBackend } from '../helpers/main_databases.ts';

async function withStores<T>(backend: MainBackend, fn: (stores: AuthStores, clock: { now: number }) => Promise<T>): Promise<T> {
  const m = await openTestMain(backend);
  const clock = { now: 1_800_000_000 };
  try {
    return await fn(await openAuthStores(m.database, () => clock.now), clock);
  } finally {
    await m.close();
  }
}

const isError = (code: string, reason: string) => (err: unknown) => err instanceof LatchkeyError && err.code === code && err.reason === reason;

test('the provider identities migration takes the next free id of the identity store, after 0006_locale', (t) => {
  const ids = AUTH_MIGRATIONS.map((m) => m.id);
  t.is(new Set(ids).size, ids.length, 'no id twice');
  t.is(ids.indexOf('0007_provider_identities'), ids.indexOf('0006_locale') + 1);
  t.is(ids.filter((id) => id.startsWith('0007_')).length, 1);
});

for (const backend of mainBackends()) {
  test(`a provider account belongs to one user; its owner's second link updates the address, another user's is refused and changes nothing (${backend})`, async (t) => {
    await withStores(backend, async ({ identities }, clock) => {
      const first = await identities.link({ provider: 'github', subject: '1001', user_id: 'user-a', email: 'a@example.com' });
      t.true(first.created);
      t.deepEqual(first.identity, { provider: 'github', subject: '1001', user_id: 'user-a', email: 'a@example.com', created_at: clock.now });
      t.deepEqual(await identities.find('github', '1001'), first.identity);

      clock.now += 60;
      const again = await identities.link({ provider: 'github', subject: '1001', user_id: 'user-a', email: 'a-new@example.com' });
      t.false(again.created);
      t.is(again.identity.email, 'a-new@example.com');
      t.is(again.identity.created_at, first.identity.created_at, 'the link time stays the first');

      const refused = await t.throwsAsync(identities.link({ provider: 'github', subject: '1001', user_id: 'user-b', email: 'b@example.com' }));
      t.true(isError('already_exists', 'identity_owned_by_another_account')(refused), String(refused));
      t.deepEqual(await identities.find('github', '1001'), { ...first.identity, email: 'a-new@example.com' });
      t.deepEqual(await identities.listByUser('user-b'), []);

      // The same subject at another provider is another account.
      t.true((await identities.link({ provider: 'google', subject: '1001', user_id: 'user-b', email: null })).created);
      t.is((await identities.find('google', '1001'))?.user_id, 'user-b');
      t.is((await identities.find('google', '1001'))?.email, null);
    });
  });

  test(`subjects compare byte for byte; an empty or over-long subject is refused (${backend})`, async (t) => {
    await withStores(backend, async ({ identities }) => {
      await identities.link({ provider: 'oidc', subject: 'AbC', user_id: 'user-a', email: null });
      await identities.link({ provider: 'oidc', subject: 'abc', user_id: 'user-b', email: null });
      t.is((await identities.find('oidc', 'AbC'))?.user_id, 'user-a');
      t.is((await identities.find('oidc', 'abc'))?.user_id, 'user-b');
      t.is(await identities.find('oidc', 'ABC'), undefined);
      const long = 's'.repeat(255);
      t.true((await identities.link({ provider: 'oidc', subject: long, user_id: 'user-a', email: null })).created);
      t.is((await identities.find('oidc', long))?.subject, long);
      for (const subject of ['', 's'.repeat(256)]) {
        const err = await t.throwsAsync(identities.link({ provider: 'oidc', subject, user_id: 'user-a', email: null }));
        t.true(isError('invalid_argument', 'invalid_provider_subject')(err), String(err));
      }
      t.is((await identities.listByUser('user-a')).length, 2);
    });
  });

  test(`ten users racing to link one provider account: exactly one holds it (${backend})`, async (t) => {
    await withStores(backend, async ({ identities }) => {
      const results = await Promise.allSettled(
        Array.from({ length: 10 }, (_, i) => identities.link({ provider: 'discord', subject: '42', user_id: `racer-${i}`, email: `r${i}@example.com` })),
      );
      const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
      t.is(won.length, 1);
      for (const r of results) if (r.status === 'rejected') t.true(isError('already_exists', 'identity_owned_by_another_account')(r.reason), String(r.reason));
      const held = await identities.find('discord', '42');
      t.is(held?.user_id, `racer-${won[0]}`);
      t.is(held?.email, `r${won[0]}@example.com`);
    });
  });

  test(`listByUser lists the first linked first; unlink removes one provider's identities of one user (${backend})`, async (t) => {
    await withStores(backend, async ({ identities }, clock) => {
      await identities.link({ provider: 'github', subject: '1', user_id: 'user-a', email: 'a@example.com' });
      clock.now += 1;
      await identities.link({ provider: 'google', subject: 'g-1', user_id: 'user-a', email: 'a@gmail.example' });
      clock.now += 1;
      await identities.link({ provider: 'github', subject: '2', user_id: 'user-a', email: 'a2@example.com' });
      await identities.link({ provider: 'github', subject: '3', user_id: 'user-b', email: 'b@example.com' });
      t.deepEqual(
        (await identities.listByUser('user-a')).map((i) => `${i.provider}:${i.subject}`),
        ['github:1', 'google:g-1', 'github:2'],
      );
      t.is(await identities.unlink('user-a', 'github'), 2);
      t.deepEqual((await identities.listByUser('user-a')).map((i) => `${i.provider}:${i.subject}`), ['google:g-1']);
      t.is(await identities.find('github', '1'), undefined);
      t.is((await identities.find('github', '3'))?.user_id, 'user-b', "another user's identity of the provider stays");
      t.is(await identities.unlink('user-a', 'github'), 0);
      // Unlinked, the provider account can be linked by anyone again.
      t.true((await identities.link({ provider: 'github', subject: '1', user_id: 'user-b', email: null })).created);
    });
  });

  test(`a user's identities go with the user (${backend})`, async (t) => {
    await withStores(backend, async ({ identities, users }) => {
      const user = await users.create({ email: `gone-${backend}@example.com`, roles: ['user'], signup_methods: 'github' });
      const other = await users.create({ email: `stays-${backend}@example.com`, roles: ['user'], signup_methods: 'github' });
      await identities.link({ provider: 'github', subject: '7', user_id: user.id, email: user.email });
      await identities.link({ provider: 'github', subject: '8', user_id: other.id, email: other.email });
      await identities.deleteUserData(user.id);
      t.is(await identities.find('github', '7'), undefined);
      t.is((await identities.find('github', '8'))?.user_id, other.id);
      if (backend !== 'dynamodb') {
        // On SQL the user's deletion takes its identities in the same transaction.
        await identities.link({ provider: 'github', subject: '7', user_id: user.id, email: user.email });
        await users.delete(user.id);
        t.is(await identities.find('github', '7'), undefined);
        t.is((await identities.find('github', '8'))?.user_id, other.id);
      }
      await identities.remove('github', '8');
      t.is(await identities.find('github', '8'), undefined);
    });
  });
}
