/**
 * The clients' method types come from the rows' shapes: `npm test`
 * type-checks this file, so a wrong request or response type fails there
 * (the `@ts-expect-error` lines fail when the error they expect is gone).
 */
import test from 'ava';
import { LatchkeyAdminClient, LatchkeyClient, LatchkeySyncClient, type ResponseOf, type ClientOperation } from '../../client/index.ts';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | undefined {
  return undefined;
}

async function typed(user: LatchkeyClient, admin: LatchkeyAdminClient, sync: LatchkeySyncClient): Promise<void> {
  const meta = await user.meta();
  assertType<Equal<typeof meta.version, string>>();
  const checked = await user.checkPermissions({ checks: [{ relation: 'viewer', object: 'doc:1' }] });
  assertType<Equal<(typeof checked.results)[number]['allowed'], boolean>>();
  const profile = await user.profile();
  assertType<Equal<typeof profile.email, string | null>>();
  const listed = sync.listPermissions();
  assertType<Equal<typeof listed.truncated, boolean>>();
  const users = await admin.users({ pagination: { page: 1 } });
  assertType<Equal<typeof users.pagination.total, number>>();
  assertType<Equal<ResponseOf<Extract<ClientOperation, { name: 'fga_get_model' }>>, { id: string; dsl: string }>>();
  // @ts-expect-error checks is required
  await user.checkPermissions({});
  // @ts-expect-error relation must be a string
  await user.checkPermissions({ checks: [{ relation: 1, object: 'doc:1' }] });
  // @ts-expect-error admin methods are not on the user client
  await user.fgaGetModel();
  // @ts-expect-error user methods are not on the admin client
  await admin.profile();
}

test('the method types follow the shapes (checked by tsc)', (t) => {
  t.is(typeof typed, 'function');
});
