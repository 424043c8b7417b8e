/**
 * RFC 8693 token exchange through `openid-client`: delegation of a user's
 * authority to an agent (a service account), whose checks are allowed only
 * when both the agent and the user are allowed, each removal of a tuple
 * denying; an `act` chain through a second agent; impersonation; scope and
 * audience only narrowed (RFC 8707 `resource` as the audience);
 * introspection showing `act`; a delegated token dying with the user's
 * session; an actor token that is not the requester's own refused.
 */
import test from 'ava';
import * as client from 'openid-client';
import { decodeJwt } from 'jose';
import { sqlBackends } from '../../helpers/databases.ts';
import { TEST_ADMIN_SECRET, startTestServerOnPort, type TestServer } from '../../helpers/server.ts';

const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const PASSWORD = 'Correct-Horse-7-Battery';
const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS = 'urn:ietf:params:oauth:token-type:access_token';
const DSL = 'model\n  schema 1.1\ntype user\ntype service_account\ntype doc\n  relations\n    define viewer: [user, service_account]\n';

async function ok(server: TestServer, op: string, input: Record<string, unknown>, headers: Record<string, string> = ADMIN, protocol: 'rest' | 'graphql' | 'grpc' = 'rest'): Promise<Record<string, unknown>> {
  const r = await server.call(op, input, { protocol, headers });
  if (r.error !== undefined || r.body === undefined) throw new Error(`${op}: ${JSON.stringify(r.error)}`);
  return r.body;
}

async function provider(backend: 'sqlite' | 'postgres' | 'mysql'): Promise<{ server: TestServer; issuer: string }> {
  const server = await startTestServerOnPort((port) => ({ url: `http://127.0.0.1:${port}`, 'enable-email-verification': false }), { backend });
  return { server, issuer: server.httpUrl };
}

/** A service account allowed to exchange tokens, its openid-client configuration and its own access token. */
async function agent(server: TestServer, issuer: string, id: string): Promise<{ config: client.Configuration; token: string }> {
  const added = await ok(server, 'add_client', { client_id: id, kind: 'service_account', grant_types: ['client_credentials', EXCHANGE], audiences: ['https://api.example'] });
  const config = await client.discovery(new URL(issuer), id, {}, client.ClientSecretBasic(added['client_secret'] as string), { execute: [client.allowInsecureRequests] });
  return { config, token: (await client.clientCredentialsGrant(config)).access_token };
}

/** The OAuth `error` of a refused request, or undefined when it succeeded. */
async function errorOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return (err as { error?: string }).error ?? String(err);
  }
}

const exchange = (config: client.Configuration, params: Record<string, string>): Promise<client.TokenEndpointResponse> =>
  client.genericGrantRequest(config, EXCHANGE, { subject_token_type: ACCESS, ...params });

for (const backend of sqlBackends()) {
  test.serial(`${backend}: delegation to an agent: a check with the delegated token is allowed only when both the agent and the user are; removing either tuple denies`, async (t) => {
    const { server, issuer } = await provider(backend);
    t.teardown(() => server.close());
    await ok(server, 'fga_write_model', { dsl: DSL });
    const login = await ok(server, 'signup', { email: `ada-${backend}@example.com`, password: PASSWORD }, {});
    const userId = (login['user'] as { id: string }).id;
    const userToken = login['access_token'] as string;
    const bot = await agent(server, issuer, 'agent-x');

    const delegated = await exchange(bot.config, { subject_token: userToken, actor_token: bot.token, actor_token_type: ACCESS });
    t.is(delegated['issued_token_type'], ACCESS);
    const claims = decodeJwt(delegated.access_token);
    t.is(claims.sub, userId);
    t.deepEqual(claims['act'], { sub: 'agent-x', fga_subject: 'service_account:agent-x' });

    const userTuple = { user: `user:${userId}`, relation: 'viewer', object: 'doc:plan' };
    const agentTuple = { user: 'service_account:agent-x', relation: 'viewer', object: 'doc:plan' };
    const allowed = async (token: string, protocol: 'rest' | 'graphql' | 'grpc' = 'rest'): Promise<boolean> =>
      ((await ok(server, 'check_permissions', { checks: [{ relation: 'viewer', object: 'doc:plan' }] }, { authorization: `Bearer ${token}` }, protocol))['results'] as Array<{ allowed: boolean }>)[0]!.allowed;

    await ok(server, 'fga_write_tuples', { tuples: [userTuple, agentTuple] });
    for (const protocol of ['rest', 'graphql', 'grpc'] as const) t.true(await allowed(delegated.access_token, protocol), `${protocol}: both allowed`);
    await ok(server, 'fga_delete_tuples', { tuples: [userTuple] });
    t.false(await allowed(delegated.access_token), 'the user lost the relation: denied');
    t.true(await allowed(bot.token), 'the agent alone still holds it');
    await ok(server, 'fga_write_tuples', { tuples: [userTuple] });
    t.true(await allowed(delegated.access_token));
    await ok(server, 'fga_delete_tuples', { tuples: [agentTuple] });
    t.false(await allowed(delegated.access_token), 'the agent lost the relation: denied');
    t.true(await allowed(userToken), 'the user alone still holds it');
    // validate_jwt_token's required_relations hold for a delegated token only when every party holds them.
    const required = { token_type: 'access_token', required_relations: [{ relation: 'viewer', object: 'doc:plan' }] };
    t.like((await server.call('validate_jwt_token', { ...required, token: delegated.access_token }, { protocol: 'rest' })).error, { code: 'permission_denied', reason: 'relation_denied' }, 'the agent lacks it: the delegated token fails the relation');
    t.is((await server.call('validate_jwt_token', { ...required, token: userToken }, { protocol: 'rest' })).error, undefined, 'the user holds it: the user token passes');
    // Beyond the intersected checks and reading the profile, a delegated token does not act as the user.
    for (const protocol of ['rest', 'graphql', 'grpc'] as const) {
      const auth = { authorization: `Bearer ${delegated.access_token}` };
      t.is((await server.call('profile', {}, { protocol, headers: auth })).error, undefined, `${protocol}: profile is read`);
      t.like((await server.call('update_profile', { given_name: 'Mallory' }, { protocol, headers: auth })).error, { code: 'permission_denied', reason: 'delegated_token_refused' }, `${protocol}: update_profile refused`);
      t.like((await server.call('deactivate_account', {}, { protocol, headers: auth })).error, { code: 'permission_denied', reason: 'delegated_token_refused' }, `${protocol}: deactivate_account refused`);
    }

    // list_permissions with the delegated token: the intersection.
    await ok(server, 'fga_write_tuples', { tuples: [agentTuple, { user: `user:${userId}`, relation: 'viewer', object: 'doc:memo' }] });
    const listed = await ok(server, 'list_permissions', { relation: 'viewer' }, { authorization: `Bearer ${delegated.access_token}` });
    t.deepEqual(listed['objects'], ['doc:plan']);

    // Contextual tuples cannot widen a delegated check.
    const ctx = await server.call('check_permissions', { checks: [{ relation: 'viewer', object: 'doc:memo', contextual_tuples: [{ user: 'service_account:agent-x', relation: 'viewer', object: 'doc:memo' }] }] }, { protocol: 'rest', headers: { authorization: `Bearer ${delegated.access_token}` } });
    t.is(ctx.error?.reason, 'delegated_contextual_tuples');
    // Nor is the user's authority explained alone where a check would intersect it with the agent's.
    for (const protocol of ['rest', 'graphql', 'grpc'] as const) {
      const explained = await server.call('explain_permission', { relation: 'viewer', object: 'doc:memo' }, { protocol, headers: { authorization: `Bearer ${delegated.access_token}` } });
      t.like(explained.error, { code: 'permission_denied', reason: 'delegated_token_refused' }, `${protocol}: explain_permission refused to a delegated token`);
    }

    // A chain: agent-y acts for agent-x acting for the user; all three must be allowed.
    const second = await agent(server, issuer, 'agent-y');
    const chained = await exchange(second.config, { subject_token: delegated.access_token, actor_token: second.token, actor_token_type: ACCESS });
    t.deepEqual(decodeJwt(chained.access_token)['act'], { sub: 'agent-y', fga_subject: 'service_account:agent-y', act: { sub: 'agent-x', fga_subject: 'service_account:agent-x' } });
    t.false(await allowed(chained.access_token), 'agent-y holds nothing: denied');
    await ok(server, 'fga_write_tuples', { tuples: [{ user: 'service_account:agent-y', relation: 'viewer', object: 'doc:plan' }] });
    t.true(await allowed(chained.access_token), 'user, agent-x and agent-y all allowed');
    await ok(server, 'fga_delete_tuples', { tuples: [agentTuple] });
    t.false(await allowed(chained.access_token), 'the middle of the chain lost it: denied');

    // Introspection shows the chain.
    const intro = await client.tokenIntrospection(second.config, chained.access_token);
    t.true(intro.active);
    t.deepEqual((intro['act'] as Record<string, unknown>)['sub'], 'agent-y');
    t.is(intro.client_id, 'agent-y');

    // The delegated token dies with the user's session.
    await ok(server, 'logout', {}, { authorization: `Bearer ${userToken}` });
    const after = await server.call('check_permissions', { checks: [{ relation: 'viewer', object: 'doc:plan' }] }, { protocol: 'rest', headers: { authorization: `Bearer ${delegated.access_token}` } });
    t.is(after.error?.code, 'unauthenticated');
    t.is(await errorOf(exchange(bot.config, { subject_token: userToken })), 'invalid_grant', 'the ended session\'s token cannot be exchanged');
  });
}

test('impersonation, narrowing of scope and audience, and refusals', async (t) => {
  const { server, issuer } = await provider('sqlite');
  t.teardown(() => server.close());
  const login = await ok(server, 'signup', { email: 'grace@example.com', password: PASSWORD }, {});
  const userToken = login['access_token'] as string;
  const bot = await agent(server, issuer, 'agent-z');
  const other = await agent(server, issuer, 'agent-w');

  const imp = await exchange(bot.config, { subject_token: userToken, scope: 'openid', audience: 'https://api.example' });
  const claims = decodeJwt(imp.access_token);
  t.is(claims['act'], undefined, 'impersonation names no actor');
  t.is(claims.sub, (login['user'] as { id: string }).id);
  t.is(imp.scope, 'openid');
  t.true((claims.aud as string[]).includes('https://api.example'));
  t.truthy(await ok(server, 'profile', {}, { authorization: `Bearer ${imp.access_token}` }), 'the server still accepts its own token');

  // Only narrowed: a scope or audience beyond the subject token's is refused.
  t.is(await errorOf(exchange(bot.config, { subject_token: imp.access_token, scope: 'email' })), 'invalid_scope');
  t.is(await errorOf(exchange(bot.config, { subject_token: userToken, resource: 'https://evil.example' })), 'invalid_target');
  t.is(await errorOf(exchange(bot.config, { subject_token: imp.access_token, audience: 'https://other.example' })), 'invalid_target');
  // An actor token of another service account is refused; so is a token that is not a live access token.
  t.is(await errorOf(exchange(bot.config, { subject_token: userToken, actor_token: other.token, actor_token_type: ACCESS })), 'invalid_grant');
  t.is(await errorOf(exchange(bot.config, { subject_token: 'not-a-token' })), 'invalid_grant');
  t.is(await errorOf(exchange(bot.config, { subject_token: userToken, subject_token_type: 'urn:ietf:params:oauth:token-type:saml2' })), 'invalid_request');
  // A client without the grant type is unauthorized_client.
  const plain = await ok(server, 'add_client', { client_id: 'no-exchange', kind: 'service_account' });
  const plainConfig = await client.discovery(new URL(issuer), 'no-exchange', {}, client.ClientSecretBasic(plain['client_secret'] as string), { execute: [client.allowInsecureRequests] });
  t.is(await errorOf(exchange(plainConfig, { subject_token: userToken })), 'unauthorized_client');
});
