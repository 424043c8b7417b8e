/**
 * Every row of the operations table is reachable over every protocol it
 * declares, and the three protocols agree: without credentials, `user` and
 * `super_admin` rows answer `unauthenticated` everywhere; with the admin
 * secret and a minimal request, each row answers with the same outcome
 * (success, or the same error code) on every protocol. A transport-level miss
 * (no route, no GraphQL field, no gRPC method) fails the test.
 *
 * The minimal request fills every required field with a placeholder: GraphQL
 * types required fields non-null (as Authorizer's schema does), so a request
 * without them is refused by the schema before authentication.
 */
import test from 'ava';
import { OPERATIONS, type Shape } from '../../cmd/index.ts';
import { TEST_ADMIN_SECRET, startTestServer, type CallResult, type TestServer } from '../helpers/server.ts';

let server: TestServer;
test.before(async () => {
  server = await startTestServer();
});
test.after.always(async () => {
  await server?.close();
});

/** A placeholder value of a shape: every required field filled, lists with one item. */
function placeholder(sh: Shape): unknown {
  switch (sh.kind) {
    case 'string':
      return 'x';
    case 'int':
    case 'float':
      return 1;
    case 'bool':
      return false;
    case 'enum':
      return sh.values[0];
    case 'json':
    case 'map':
      return {};
    case 'list':
      return [placeholder(sh.item)];
    case 'object':
      return Object.fromEntries(Object.entries(sh.fields).flatMap(([k, f]) => (f.kind === 'optional' ? [] : [[k, placeholder(f)]])));
  }
}

function outcome(r: CallResult): string {
  if (r.error) return `error:${r.error.code}`;
  return 'ok';
}

function transportMiss(r: CallResult): boolean {
  return r.error?.reason === 'route_not_found' || r.error?.code === 'unknown' || (r.status === 12 && r.error?.code === 'unimplemented');
}

for (const op of OPERATIONS) {
  test.serial(`${op.name}: reachable and consistent on ${op.protocols.join(', ')}`, async (t) => {
    const input = placeholder(op.input) as Record<string, unknown>;
    const anonymous: Record<string, string> = {};
    for (const protocol of op.protocols) {
      const r = await server.call(op.name, input, { protocol });
      t.false(transportMiss(r), `${protocol}: ${JSON.stringify(r.error)}`);
      anonymous[protocol] = outcome(r);
      if (op.auth !== 'public') t.is(r.error?.code, 'unauthenticated', `${protocol} without credentials`);
    }
    const admin: Record<string, string> = {};
    for (const protocol of op.protocols) {
      const r = await server.call(op.name, input, { protocol, headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
      t.false(transportMiss(r), `${protocol}: ${JSON.stringify(r.error)}`);
      admin[protocol] = outcome(r);
    }
    if (op.auth !== 'public') t.is(new Set(Object.values(anonymous)).size, 1, JSON.stringify(anonymous));
    t.true(new Set(Object.values(admin)).size <= 2, JSON.stringify(admin));
  });
}
