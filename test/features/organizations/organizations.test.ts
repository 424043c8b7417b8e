/**
 * Organizations as relationships (docs/organizations.md), end to end on the
 * real server, on every SQL backend: membership, roles and teams are FGA
 * tuples written with their rows, so check_permissions follows a team change
 * in the very next request; the organization API authorizes itself by
 * checks on those tuples; the last owner stays; invitations are single use
 * and expire; tokens carry the active organization and lose it with the
 * membership; domains are proven through the injected TXT resolver.
 */
import test from 'ava';
import { sqlBackends } from '../../helpers/databases.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, TEST_CLIENT_ID, startTestServer, sessionCookieOf, type CallResult, type TestServer } from '../../helpers/server.ts';
import { LatchkeyAdminClient, LatchkeyClient } from '../../../client/index.ts';
import { orgModelFragmentDsl } from '../../../auth/index.ts';
import { DEFAULT_STORE_ID } from '../../../engine/index.ts';
import type { Protocol } from '../../../api/index.ts';

const PASSWORD = 'a long enough passphrase';
const OPENFGA_KEY = 'organizations-openfga-key-0123456789';
const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };

interface User {
  id: string;
  email: string;
  bearer: Record<string, string>;
  cookie: string;
}

class Harness {
  readonly srv: TestServer;
  constructor(srv: TestServer) {
    this.srv = srv;
  }

  async call(op: string, input: Record<string, unknown>, headers: Record<string, string>, protocol: Protocol = 'rest'): Promise<CallResult> {
    return this.srv.call(op, input, { protocol, headers });
  }

  async ok(op: string, input: Record<string, unknown>, headers: Record<string, string>, protocol: Protocol = 'rest'): Promise<Record<string, unknown>> {
    const r = await this.call(op, input, headers, protocol);
    if (r.error !== undefined) throw new Error(`${op} over ${protocol}: ${JSON.stringify(r.error)}`);
    return r.body!;
  }

  async signup(email: string): Promise<User> {
    const r = await this.srv.call('signup', { email, password: PASSWORD }, { protocol: 'rest' });
    if (r.error !== undefined) throw new Error(JSON.stringify(r.error));
    return { id: (r.body!['user'] as { id: string }).id, email, bearer: { authorization: `Bearer ${r.body!['access_token'] as string}` }, cookie: sessionCookieOf(r) };
  }
}

async function allowed(h: Harness, u: User, relation: string, object: string): Promise<boolean> {
  const r = await h.ok('check_permissions', { checks: [{ relation, object }] }, u.bearer);
  return (r['results'] as { allowed: boolean }[])[0]!.allowed;
}

for (const backend of sqlBackends()) {
  const txt = new Map<string, string[][]>();
  let offsetMs = 0;
  const clock = { now: () => new Date(Date.now() + offsetMs) };
  const resolveTxt = async (name: string): Promise<string[][]> => {
    const r = txt.get(name);
    if (r === undefined) throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return r;
  };

  test.serial(`organizations end to end (${backend})`, async (t) => {
    const srv = await startTestServer({ 'organization-roles': 'billing', 'organization-invitation-ttl': '1h', 'openfga-preshared-keys': OPENFGA_KEY }, { backend, clock, resolveTxt });
    const h = new Harness(srv);
    try {
      const alice = await h.signup(`alice-${backend}@example.com`);
      const bob = await h.signup(`bob-${backend}@example.com`);
      const carol = await h.signup(`carol-${backend}@example.com`);
      const dave = await h.signup(`dave-${backend}@example.com`);

      // ---- organizations: the creator is the owner; a slug names one organization.
      const acme = await h.ok('create_organization', { name: 'Acme Corp', settings: { default_role: 'member' } }, alice.bearer);
      t.is(acme['slug'], 'acme-corp');
      const acmeId = acme['id'] as string;
      const taken = await h.call('create_organization', { name: 'Other', slug: 'acme-corp' }, bob.bearer);
      t.is(taken.error?.code, 'already_exists');
      t.is(taken.error?.reason, 'organization_slug_taken');
      const globex = await h.ok('create_organization', { name: 'Globex', slug: 'globex' }, bob.bearer);
      const globexId = globex['id'] as string;
      t.true(await allowed(h, alice, 'owner', `organization:${acmeId}`), 'the creator holds organization:<id>#owner');
      t.true(await allowed(h, alice, 'member', `organization:${acmeId}`), 'owners are members by the fragment');

      // Every protocol serves the rows, and the super-admin variants.
      for (const protocol of PROTOCOLS) {
        t.is((await h.ok('organization', { organization_id: acmeId }, alice.bearer, protocol))['name'], 'Acme Corp', protocol);
        t.is((await h.ok('admin_organization', { organization_id: globexId }, ADMIN, protocol))['slug'], 'globex', protocol);
      }
      const listed = await h.ok('organizations', { search: 'acme' }, alice.bearer);
      t.deepEqual((listed['organizations'] as { id: string; role: string }[]).map((o) => [o.id, o.role]), [[acmeId, 'owner']]);
      t.is((listed['pagination'] as { total: number }).total, 1);

      // ---- bad input: precise codes, nothing written.
      t.is((await h.call('create_organization', { name: 'Bad', slug: 'Not A Slug' }, alice.bearer)).error?.reason, 'invalid_organization_slug');
      t.is((await h.call('add_organization_member', { organization_id: acmeId, user_id: carol.id, role: 'emperor' }, alice.bearer)).error?.reason, 'invalid_organization_role');
      t.is((await h.call('organization', { organization_id: 'no-such-org' }, alice.bearer)).error?.code, 'not_found');

      // ---- members, and the API authorized by checks on the tuples.
      await h.ok('add_organization_member', { organization_id: acmeId, user_id: carol.id }, alice.bearer);
      const byEmail = await h.call('add_organization_member', { organization_id: acmeId, email: bob.email, role: 'admin' }, alice.bearer);
      t.is(byEmail.error?.reason, 'email_lookup_refused', 'a user cannot learn which addresses have accounts');
      await h.ok('add_organization_member', { organization_id: acmeId, user_id: bob.id, role: 'admin' }, alice.bearer);
      // bob is owner of globex and admin of acme: acme's admin manages acme only.
      const cross = await h.call('organization_members', { organization_id: globexId }, carol.bearer);
      t.is(cross.error?.code, 'permission_denied', 'a member of acme reads nothing of globex');
      await h.ok('add_organization_member', { organization_id: globexId, user_id: dave.id, role: 'admin' }, bob.bearer);
      for (const [op, input] of [
        ['organization_members', { organization_id: acmeId }],
        ['add_organization_member', { organization_id: acmeId, user_id: dave.id }],
        ['remove_organization_member', { organization_id: acmeId, user_id: carol.id }],
        ['delete_organization', { organization_id: acmeId }],
      ] as const) {
        const r = await h.call(op, input, dave.bearer);
        t.is(r.error?.code, 'permission_denied', `globex's admin on acme: ${op}`);
      }
      // An admin may not touch owners.
      t.is((await h.call('update_organization_member', { organization_id: acmeId, user_id: alice.id, role: 'member' }, bob.bearer)).error?.code, 'permission_denied');
      t.is((await h.call('add_organization_member', { organization_id: acmeId, user_id: dave.id, role: 'owner' }, bob.bearer)).error?.code, 'permission_denied');
      const members = await h.ok('organization_members', { organization_id: acmeId, role: 'admin' }, carol.bearer);
      t.deepEqual((members['members'] as { user_id: string }[]).map((m) => m.user_id), [bob.id]);
      // A custom role is a relation of its own and makes a member.
      await h.ok('update_organization_member', { organization_id: acmeId, user_id: carol.id, role: 'billing' }, bob.bearer);
      t.true(await allowed(h, carol, 'billing', `organization:${acmeId}`));
      t.true(await allowed(h, carol, 'member', `organization:${acmeId}`));
      await h.ok('update_organization_member', { organization_id: acmeId, user_id: carol.id, role: 'member' }, bob.bearer);
      t.false(await allowed(h, carol, 'billing', `organization:${acmeId}`), 'the old role\'s tuple went with the change');

      // ---- the last owner.
      for (const [op, input, headers] of [
        ['remove_organization_member', { organization_id: acmeId, user_id: alice.id }, alice.bearer],
        ['update_organization_member', { organization_id: acmeId, user_id: alice.id, role: 'admin' }, alice.bearer],
        ['admin_remove_organization_member', { organization_id: acmeId, user_id: alice.id }, ADMIN],
      ] as const) {
        const r = await h.call(op, input, headers);
        t.is(r.error?.code, 'failed_precondition', op);
        t.is(r.error?.reason, 'last_owner', op);
      }
      t.true(await allowed(h, alice, 'owner', `organization:${acmeId}`));

      // ---- teams: a document shared with a team, allowed then denied in the next request.
      const team = await h.ok('create_team', { organization_id: acmeId, name: 'Engineering' }, bob.bearer);
      const teamId = team['id'] as string;
      t.is((await h.call('add_team_member', { team_id: teamId, user_id: dave.id }, bob.bearer)).error?.reason, 'not_organization_member');
      await h.ok('add_team_member', { team_id: teamId, user_id: carol.id }, bob.bearer);
      const dsl = `model\n  schema 1.1\n${orgModelFragmentDsl(['billing'])}type document\n  relations\n    define org: [organization]\n    define editor: [user, team#member] or admin from org\n    define viewer: [user, team#member] or editor\n`;
      await h.ok('fga_write_model', { dsl }, ADMIN);
      await h.ok('fga_write_tuples', { tuples: [{ user: `team:${teamId}#member`, relation: 'viewer', object: 'document:plan' }, { user: `organization:${acmeId}`, relation: 'org', object: 'document:plan' }] }, ADMIN);
      t.true(await allowed(h, carol, 'viewer', 'document:plan'), 'shared with her team');
      t.false(await allowed(h, carol, 'editor', 'document:plan'));
      t.true(await allowed(h, bob, 'editor', 'document:plan'), 'admin from org');
      t.false(await allowed(h, dave, 'viewer', 'document:plan'));
      await h.ok('remove_team_member', { team_id: teamId, user_id: carol.id }, bob.bearer);
      t.false(await allowed(h, carol, 'viewer', 'document:plan'), 'denied in the next request after leaving the team');
      await h.ok('add_team_member', { team_id: teamId, user_id: carol.id }, bob.bearer);
      t.true(await allowed(h, carol, 'viewer', 'document:plan'));
      // One change feed: the team changes are in the store's changes, as any tuple write is.
      const feed = await fetch(`${srv.httpUrl}/stores/${DEFAULT_STORE_ID}/changes?type=team&page_size=100`, { headers: { authorization: `Bearer ${OPENFGA_KEY}` } });
      const changes = ((await feed.json()) as { changes: { tuple_key: { user: string; relation: string; object: string }; operation: string }[] }).changes;
      t.deepEqual(
        changes.filter((c) => c.tuple_key.user === `user:${carol.id}`).map((c) => `${c.operation} ${c.tuple_key.object}#${c.tuple_key.relation}`),
        [`TUPLE_OPERATION_WRITE team:${teamId}#member`, `TUPLE_OPERATION_DELETE team:${teamId}#member`, `TUPLE_OPERATION_WRITE team:${teamId}#member`],
      );
      const teams = await h.ok('teams', { organization_id: acmeId }, carol.bearer);
      t.deepEqual((teams['teams'] as { name: string; member_count: number }[]).map((x) => [x.name, x.member_count]), [['Engineering', 1]]);
      // delete_team: the team, its members and every grant naming it go in one transaction.
      const doomed = (await h.ok('create_team', { organization_id: acmeId, name: 'Doomed' }, bob.bearer))['id'] as string;
      await h.ok('add_team_member', { team_id: doomed, user_id: carol.id }, bob.bearer);
      await h.ok('fga_write_tuples', { tuples: [{ user: `team:${doomed}#member`, relation: 'viewer', object: 'document:doomed' }] }, ADMIN);
      t.true(await allowed(h, carol, 'viewer', 'document:doomed'));
      t.is((await h.call('delete_team', { team_id: doomed }, carol.bearer)).error?.code, 'permission_denied', 'a plain member manages no team');
      await h.ok('delete_team', { team_id: doomed }, bob.bearer);
      t.false(await allowed(h, carol, 'viewer', 'document:doomed'), 'no grant outlives the team');
      const doomedGrants = await h.ok('fga_read_tuples', { object: 'document:doomed' }, ADMIN);
      t.deepEqual(doomedGrants['tuples'], [], 'the grant to the team is deleted with it');
      t.is((await h.call('delete_team', { team_id: doomed }, bob.bearer)).error?.reason, 'team_not_found');

      // ---- tokens: the active organization, and its loss with the membership.
      const switched = await h.call('switch_organization', { organization_id: acmeId, scope: ['openid', 'profile', 'email', 'organizations'] }, carol.bearer);
      t.is(switched.error, undefined);
      const access = switched.body!['access_token'] as string;
      const carolCookie = sessionCookieOf(switched);
      const valid = await h.ok('validate_jwt_token', { token_type: 'access_token', token: access }, {});
      const claims = valid['claims'] as Record<string, unknown>;
      t.is(claims['org_id'], acmeId);
      t.deepEqual(claims['org_roles'], ['member']);
      t.deepEqual((claims['organizations'] as { id: string }[]).map((o) => o.id), [acmeId]);
      const idClaims = (await h.ok('validate_jwt_token', { token_type: 'id_token', token: switched.body!['id_token'] as string }, {}))['claims'] as Record<string, unknown>;
      t.is(idClaims['org_id'], acmeId);
      const session = await h.ok('validate_session', { cookie: carolCookie }, {});
      t.is(session['org_id'], acmeId);
      t.deepEqual(session['org_roles'], ['member']);
      t.is((await h.call('switch_organization', { organization_id: globexId }, carol.bearer)).error?.reason, 'not_organization_member');

      await h.ok('remove_organization_member', { organization_id: acmeId, user_id: carol.id }, bob.bearer);
      t.false(await allowed(h, carol, 'viewer', 'document:plan'), 'her teams in the organization went with the membership');
      for (const protocol of PROTOCOLS) {
        const stale = await h.call('validate_jwt_token', { token_type: 'access_token', token: access }, {}, protocol);
        t.is(stale.error?.code, 'permission_denied', protocol);
        t.is(stale.error?.reason, 'stale_organization', protocol);
      }
      t.is((await h.call('validate_session', { cookie: carolCookie }, {})).error?.reason, 'stale_organization');
      const left = await h.call('switch_organization', { organization_id: '' }, { cookie: `cookie_session=${carolCookie}` });
      t.is(left.error, undefined);
      const plain = (await h.ok('validate_jwt_token', { token_type: 'access_token', token: left.body!['access_token'] as string }, {}))['claims'] as Record<string, unknown>;
      t.is(plain['org_id'], undefined, 'no organization after leaving it');

      // ---- invitations: single use, bound to the email, expiring.
      const inv = await h.ok('invite_organization_members', { organization_id: acmeId, emails: [dave.email, 'someone-else@example.com'], role: 'admin' }, bob.bearer);
      const [forDave, forOther] = inv['invitations'] as { id: string; token: string; status: string }[];
      t.is(forDave!.status, 'pending');
      t.is((await h.call('accept_organization_invitation', { token: forOther!.token }, dave.bearer)).error?.reason, 'invitation_email_mismatch');
      const accepted = await h.ok('accept_organization_invitation', { token: forDave!.token }, dave.bearer);
      t.is(accepted['role'], 'admin');
      t.true(await allowed(h, dave, 'admin', `organization:${acmeId}`));
      const again = await h.call('accept_organization_invitation', { token: forDave!.token }, dave.bearer);
      t.is(again.error?.code, 'failed_precondition');
      t.is(again.error?.reason, 'invitation_not_pending');
      t.is((await h.call('accept_organization_invitation', { token: 'not-a-token' }, dave.bearer)).error?.reason, 'invitation_not_found');
      const late = await h.ok('invite_organization_members', { organization_id: acmeId, emails: [carol.email] }, alice.bearer);
      const lateToken = (late['invitations'] as { token: string }[])[0]!.token;
      offsetMs += 2 * 3600_000;
      // The access tokens of before have expired too: carol signs in again.
      const relogin = await h.ok('login', { email: carol.email, password: PASSWORD }, {});
      carol.bearer = { authorization: `Bearer ${relogin['access_token'] as string}` };
      for (const u of [alice, bob, dave]) u.bearer = { authorization: `Bearer ${(await h.ok('login', { email: u.email, password: PASSWORD }, {}))['access_token'] as string}` };
      const expired = await h.call('accept_organization_invitation', { token: lateToken }, carol.bearer);
      t.is(expired.error?.code, 'failed_precondition');
      t.is(expired.error?.reason, 'invitation_expired');
      t.false(await allowed(h, carol, 'member', `organization:${acmeId}`));
      const statuses = await h.ok('organization_invitations', { organization_id: acmeId }, alice.bearer);
      t.deepEqual((statuses['invitations'] as { status: string }[]).map((i) => i.status).sort(), ['accepted', 'expired', 'expired'], 'pending past the expiry reads as expired');
      t.is((await h.call('organization_invitations', { organization_id: acmeId }, carol.bearer)).error?.code, 'permission_denied');

      // ---- domains and home-realm discovery.
      const domain = await h.ok('add_organization_domain', { organization_id: acmeId, domain: `acme-${backend}.test` }, alice.bearer);
      t.false(domain['verified'] as boolean);
      const notYet = await h.call('verify_organization_domain', { organization_id: acmeId, domain: `acme-${backend}.test` }, alice.bearer);
      t.is(notYet.error?.reason, 'domain_not_verified');
      t.false((await h.ok('discover_organization', { email: `x@acme-${backend}.test` }, {}))['found'] as boolean);
      txt.set(domain['txt_record_name'] as string, [['unrelated'], [domain['txt_record_value'] as string]]);
      t.true((await h.ok('verify_organization_domain', { organization_id: acmeId, domain: `acme-${backend}.test` }, alice.bearer))['verified'] as boolean);
      const found = await h.ok('discover_organization', { email: `Someone@ACME-${backend}.test` }, {});
      t.is(found['organization_id'], acmeId);
      const second = await h.ok('add_organization_domain', { organization_id: globexId, domain: `acme-${backend}.test` }, bob.bearer);
      txt.get(domain['txt_record_name'] as string)!.push([second['txt_record_value'] as string]);
      t.is((await h.call('verify_organization_domain', { organization_id: globexId, domain: `acme-${backend}.test` }, bob.bearer)).error?.reason, 'domain_taken');

      // ---- auto-join by a verified domain, and the organization's sign-in rules.
      const erin = await h.signup(`erin@acme-${backend}.test`);
      t.is((await h.call('switch_organization', { organization_id: acmeId }, erin.bearer)).error?.reason, 'not_organization_member', 'auto-join is off by default');
      await h.ok('update_organization', { organization_id: acmeId, settings: { auto_join_verified_domains: true } }, alice.bearer);
      const joined = await h.call('switch_organization', { organization_id: acmeId }, erin.bearer);
      t.is(joined.error, undefined);
      t.true(await allowed(h, erin, 'member', `organization:${acmeId}`), 'joined with the default role, its tuple written');
      const erinToken = joined.body!['access_token'] as string;
      await h.ok('update_organization', { organization_id: acmeId, settings: { session_lifetime: 60 } }, alice.bearer);
      t.is((await h.ok('validate_jwt_token', { token_type: 'access_token', token: erinToken }, {}))['is_valid'], true);
      offsetMs += 120_000;
      const pastLifetime = await h.call('validate_jwt_token', { token_type: 'access_token', token: erinToken }, {});
      t.is(pastLifetime.error?.code, 'unauthenticated', 'past the organization\'s session lifetime the session ends');
      t.is(pastLifetime.error?.reason, 'organization_session_expired');
      await h.ok('update_organization', { organization_id: acmeId, settings: { session_lifetime: 0 } }, alice.bearer);
      t.is((await h.call('switch_organization', { organization_id: acmeId }, bob.bearer)).error, undefined, 'bob is a member');
      await h.ok('update_organization', { organization_id: acmeId, settings: { required_mfa: true } }, alice.bearer);
      t.is((await h.call('switch_organization', { organization_id: acmeId }, bob.bearer)).error?.reason, 'organization_mfa_required');
      await h.ok('update_organization', { organization_id: acmeId, settings: { required_mfa: false, allowed_sign_in_methods: ['magic_link_login'] } }, alice.bearer);
      t.is((await h.call('switch_organization', { organization_id: acmeId }, bob.bearer)).error?.reason, 'sign_in_method_not_allowed');
      const settings = (await h.ok('organization', { organization_id: acmeId }, bob.bearer))['settings'] as Record<string, unknown>;
      t.deepEqual(settings, { allowed_sign_in_methods: ['magic_link_login'], required_mfa: false, default_role: 'member', session_lifetime: 0, auto_join_verified_domains: true });
      t.is((await h.call('update_organization', { organization_id: acmeId, settings: { default_role: 'owner' } }, alice.bearer)).error?.reason, 'invalid_organization_settings');

      // ---- audit and webhooks recorded with the changes.
      const audit = await h.ok('audit_logs', { action: 'organization.member_removed' }, ADMIN);
      t.true((audit['audit_logs'] as unknown[]).length >= 1);

      // ---- deleting a user removes its memberships and their tuples in one transaction.
      await h.ok('delete_user', { email: dave.email }, ADMIN);
      t.deepEqual((await h.ok('fga_read_tuples', { user: `user:${dave.id}` }, ADMIN))['tuples'], []);
      const afterDelete = await h.ok('admin_organization_members', { organization_id: globexId }, ADMIN);
      t.deepEqual((afterDelete['members'] as { user_id: string }[]).map((m) => m.user_id), [bob.id]);

      // ---- deleting an organization: soft, and no grant outlives it.
      t.is((await h.call('delete_organization', { organization_id: acmeId }, bob.bearer)).error?.code, 'permission_denied', 'admins do not delete');
      await h.ok('delete_organization', { organization_id: acmeId }, alice.bearer);
      t.deepEqual((await h.ok('fga_read_tuples', { object: `organization:${acmeId}` }, ADMIN))['tuples'], []);
      t.deepEqual((await h.ok('fga_read_tuples', { object: 'document:plan' }, ADMIN))['tuples'], [], 'tuples naming the organization or its team as user went too');
      t.false(await allowed(h, bob, 'editor', 'document:plan'));
      t.is((await h.call('organization', { organization_id: acmeId }, alice.bearer)).error?.code, 'not_found');
      t.is((await h.call('create_organization', { name: 'Again', slug: 'acme-corp' }, alice.bearer)).error?.reason, 'organization_slug_taken', 'a deleted organization keeps its slug');

      // ---- two owners removed at once: exactly one removal wins, the other finds the last owner.
      const frank = await h.signup(`frank-${backend}@example.com`);
      await h.ok('admin_add_organization_member', { organization_id: globexId, user_id: frank.id, role: 'owner' }, ADMIN);
      const both = await Promise.all([bob, frank].map((u) => h.call('admin_remove_organization_member', { organization_id: globexId, user_id: u.id }, ADMIN)));
      t.is(both.filter((r) => r.error === undefined).length, 1, 'one removal wins');
      t.deepEqual(both.filter((r) => r.error !== undefined).map((r) => r.error?.reason), ['last_owner']);
      const owners = await h.ok('admin_organization_members', { organization_id: globexId, role: 'owner' }, ADMIN);
      t.is((owners['members'] as unknown[]).length, 1, 'one owner is left');
      const ownerTuples = await h.ok('fga_read_tuples', { object: `organization:${globexId}`, relation: 'owner' }, ADMIN);
      t.is((ownerTuples['tuples'] as unknown[]).length, 1, 'and one owner tuple');
    } finally {
      await srv.close();
    }
  });
}

test.serial('the user and admin clients carry the organization operations on every protocol (sqlite)', async (t) => {
  const srv = await startTestServer({}, { backend: 'sqlite' });
  try {
    for (const protocol of PROTOCOLS) {
      const user = new LatchkeyClient({ client_id: TEST_CLIENT_ID, service_url: srv.httpUrl, protocol, grpc_endpoint: srv.grpcAddress });
      const admin = new LatchkeyAdminClient({ service_url: srv.httpUrl, admin_secret: TEST_ADMIN_SECRET, protocol, grpc_endpoint: srv.grpcAddress });
      const signup = (await user.signup({ email: `client-${protocol}@example.com`, password: PASSWORD, confirm_password: PASSWORD })) as { access_token: string; user: { id: string } };
      user.setAccessToken(signup.access_token);
      const org = (await user.createOrganization({ name: `Client ${protocol}` })) as { id: string; slug: string };
      t.is(org.slug, `client-${protocol}`, protocol);
      const mine = (await user.organizations({})) as { organizations: { id: string; role: string }[] };
      t.deepEqual(mine.organizations.map((o) => [o.id, o.role]), [[org.id, 'owner']], protocol);
      const members = (await admin.adminOrganizationMembers({ organization_id: org.id })) as { members: { user_id: string }[] };
      t.deepEqual(members.members.map((m) => m.user_id), [signup.user.id], protocol);
      const switched = (await user.switchOrganization({ organization_id: org.id })) as { access_token: string };
      t.truthy(switched.access_token, protocol);
    }
  } finally {
    await srv.close();
  }
});
