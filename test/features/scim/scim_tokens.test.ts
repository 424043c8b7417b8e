/**
 * SCIM tokens per organization (docs/scim.md) on every SQL backend: an
 * organization admin creates one (shown once: the list never carries a
 * secret), a plain member may not, an admin of another organization may not
 * see or revoke it; revoking twice is refused; the super-admin variants act on
 * any organization.
 */
import test from 'ava';
import { sqlBackends } from '../../helpers/databases.ts';
import { TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';

const PASSWORD = 'a long enough passphrase';
const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

async function signup(srv: TestServer, email: string): Promise<{ id: string; bearer: Record<string, string> }> {
  const r = await srv.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
  if (r.error !== undefined) throw new Error(JSON.stringify(r.error));
  return { id: (r.body!['user'] as { id: string }).id, bearer: { authorization: `Bearer ${r.body!['access_token'] as string}` } };
}

for (const backend of sqlBackends()) {
  test.serial(`SCIM tokens: created once, listed without secrets, revoked, authorized per organization (${backend})`, async (t) => {
    const srv = await startTestServer({}, { backend });
    try {
      const call = async (op: string, input: Record<string, unknown>, headers: Record<string, string>) => srv.call(op, input, { protocol: 'rest', headers });
      const owner = await signup(srv, `owner-${backend}@example.com`);
      const member = await signup(srv, `member-${backend}@example.com`);
      const stranger = await signup(srv, `stranger-${backend}@example.com`);
      const org = (await call('create_organization', { name: 'Acme' }, owner.bearer)).body!;
      const other = (await call('create_organization', { name: 'Other' }, stranger.bearer)).body!;
      t.is((await call('add_organization_member', { organization_id: org['id'], user_id: member.id }, owner.bearer)).error, undefined);

      const created = await call('create_scim_token', { organization_id: org['id'], description: 'Okta' }, owner.bearer);
      t.is(created.error, undefined);
      const token = created.body!['token'] as string;
      t.regex(token, /^lks_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
      t.true(token.startsWith(`${created.body!['prefix'] as string}_`));
      t.like(created.body, { organization_id: org['id'], description: 'Okta', created_by: owner.id });

      const listed = await call('scim_tokens', { organization_id: org['id'] }, owner.bearer);
      const tokens = listed.body!['tokens'] as Record<string, unknown>[];
      t.is(tokens.length, 1);
      t.is(tokens[0]!['id'], created.body!['id']);
      // lks_<16 hex>_<secret>: the secret is everything after the second underscore (it may hold underscores itself).
      const secret = token.split('_').slice(2).join('_');
      t.true(secret.length >= 40, 'the token carries its secret');
      t.false(JSON.stringify(listed.body).includes(secret), 'the list never carries the secret');
      t.is(tokens[0]!['token'], undefined);

      // A plain member and an admin of another organization are refused.
      t.is((await call('create_scim_token', { organization_id: org['id'] }, member.bearer)).error?.reason, 'organization_permission_denied');
      t.is((await call('scim_tokens', { organization_id: org['id'] }, member.bearer)).error?.reason, 'organization_permission_denied');
      t.is((await call('scim_tokens', { organization_id: org['id'] }, stranger.bearer)).error?.reason, 'organization_permission_denied');
      t.is((await call('revoke_scim_token', { token_id: created.body!['id'] }, stranger.bearer)).error?.reason, 'organization_permission_denied');
      t.is((await call('create_scim_token', { organization_id: org['id'], description: 'x'.repeat(257) }, owner.bearer)).error?.code, 'invalid_argument');

      // Revoked once; the second time is refused; the list shows when.
      t.is((await call('revoke_scim_token', { token_id: created.body!['id'] }, owner.bearer)).error, undefined);
      t.is((await call('revoke_scim_token', { token_id: created.body!['id'] }, owner.bearer)).error?.reason, 'scim_token_revoked');
      t.is((await call('revoke_scim_token', { token_id: 'no-such-token' }, owner.bearer)).error?.reason, 'scim_token_not_found');
      const after = (await call('scim_tokens', { organization_id: org['id'] }, owner.bearer)).body!['tokens'] as Record<string, unknown>[];
      t.is(typeof after[0]!['revoked_at'], 'number');

      // The super-admin acts on any organization.
      const adminMade = await call('admin_create_scim_token', { organization_id: other['id'] }, ADMIN);
      t.like(adminMade.body, { organization_id: other['id'], created_by: 'super_admin' });
      t.is(((await call('admin_scim_tokens', { organization_id: other['id'] }, ADMIN)).body!['tokens'] as unknown[]).length, 1);
      t.is((await call('admin_revoke_scim_token', { token_id: adminMade.body!['id'] }, ADMIN)).error, undefined);

      // Deleting an organization revokes its tokens: the next SCIM request is refused.
      const doomed = (await call('create_organization', { name: 'Doomed' }, owner.bearer)).body!;
      const doomedToken = (await call('create_scim_token', { organization_id: doomed['id'] }, owner.bearer)).body!['token'] as string;
      const scimGet = (token: string) => fetch(`${srv.httpUrl}/scim/v2/Users`, { headers: { authorization: `Bearer ${token}` } });
      t.is((await scimGet(doomedToken)).status, 200);
      t.is((await call('delete_organization', { organization_id: doomed['id'] }, owner.bearer)).error, undefined);
      t.is((await scimGet(doomedToken)).status, 401);
      // A token's last use is noted.
      const used = ((await call('scim_tokens', { organization_id: org['id'] }, owner.bearer)).body!['tokens'] as Record<string, unknown>[])[0]!;
      t.is(used['last_used_at'] ?? undefined, undefined, 'the revoked token was never used');
      t.is((await scimGet(token)).status, 401, 'the revoked token is refused');
      t.is((await scimGet(`${token.slice(0, -1)}x`)).status, 401, 'a token altered by one character is refused');

      // The audit log names each change.
      const audit = (await call('audit_logs', { action: 'organization.scim_token_created' }, ADMIN)).body!;
      t.is((audit['pagination'] as { total: number }).total, 3, 'the Okta token, the deleted organization\'s and the super-admin\'s');
    } finally {
      await srv.close();
    }
  });
}

test.serial('SCIM requests are limited per token: one token out of its budget does not slow another (sqlite)', async (t) => {
  const srv = await startTestServer({ 'rate-limit-rps': 1, 'rate-limit-burst': 10 }, { backend: 'sqlite' });
  try {
    const owner = await signup(srv, 'owner-limits@example.com');
    const org = (await srv.call('create_organization', { name: 'Limits' }, { protocol: 'rest', headers: owner.bearer })).body!;
    const a = (await srv.call('create_scim_token', { organization_id: org['id'] }, { protocol: 'rest', headers: owner.bearer })).body!['token'] as string;
    const b = (await srv.call('create_scim_token', { organization_id: org['id'] }, { protocol: 'rest', headers: owner.bearer })).body!['token'] as string;
    const get = (token: string) => fetch(`${srv.httpUrl}/scim/v2/ServiceProviderConfig`, { headers: { authorization: `Bearer ${token}` } });
    const statuses: number[] = [];
    let limited: Response | undefined;
    for (let i = 0; i < 40 && limited === undefined; i++) {
      const r = await get(a);
      statuses.push(r.status);
      if (r.status === 429) limited = r;
      else await r.arrayBuffer();
    }
    t.truthy(limited, `token a was limited (${statuses.join(',')})`);
    t.truthy(limited!.headers.get('retry-after'));
    t.like(await limited!.json(), { schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '429' });
    const other = await get(b);
    t.is(other.status, 200, 'another token has its own budget');
  } finally {
    await srv.close();
  }
});
