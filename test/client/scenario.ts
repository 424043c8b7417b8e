/**
 * One scenario run through any client pair (async or sync: `await` takes
 * both a promise and a plain value), so that protocols and variants can be
 * compared result for result. Values that differ by nature between runs (ids,
 * tokens, timestamps) are replaced by their kind; everything else must match.
 */
/** The methods the scenario calls; both the async and the sync clients have them. */
export interface AnyUserClient {
  [method: string]: unknown;
}

export const MODEL = `model
  schema 1.1
type user
type doc
  relations
    define owner: [user]
    define viewer: [user] or owner
`;

type Call = (input?: unknown) => unknown;

function method(client: AnyUserClient, name: string): Call {
  const fn = client[name];
  if (typeof fn !== 'function') throw new Error(`client has no method ${name}`);
  return (fn as Call).bind(client);
}

/** Runs `fn`, returning its value or `{error: {code, reason}}` (what tests compare). */
async function outcome(fn: () => unknown): Promise<unknown> {
  try {
    return await fn();
  } catch (err) {
    const e = err as { name?: string; code?: unknown; reason?: unknown; message?: unknown };
    return { error: { name: e.name, code: e.code, reason: e.reason ?? null, message: e.message } };
  }
}

const VOLATILE = new Set(['id', 'access_token', 'id_token', 'refresh_token', 'created_at', 'updated_at', 'revoked_timestamp', 'expires_in', 'continuation_token', 'consistency_token', 'webhook_id', 'user_id']);

/**
 * Replaces run-specific values: ids, tokens and timestamps by their type, and
 * each `replace` key inside strings (the run's tag, its user id) by its value.
 */
export function normalise(value: unknown, replace: Record<string, string>): unknown {
  if (Array.isArray(value)) return value.map((v) => normalise(v, replace));
  if (typeof value === 'string') return Object.entries(replace).reduce((s, [from, to]) => s.replaceAll(from, to), value);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = VOLATILE.has(k) && v !== null ? `<${typeof v}>` : normalise(v, replace);
  return out;
}

/** Keys whose outcome depends on the protocol by design (methods not served over every protocol). */
export const PROTOCOL_DEPENDENT = ['fgaGetModel', 'adminMeta', 'adminSignup'] as const;

/**
 * The scenario: meta; sign-up, profile, a login with the access token, a
 * permission check, logout; admin calls on users, webhooks and FGA; errors.
 * `tag` keeps each run's users and objects apart on a shared server.
 */
export async function runScenario(user: AnyUserClient, bearer: AnyUserClient, admin: AnyUserClient, tag: string): Promise<Record<string, unknown>> {
  const u = (name: string) => method(user, name);
  const a = (name: string) => method(admin, name);
  const email = `${tag}@example.com`;
  const password = 'Correct-Horse-9';
  const r: Record<string, unknown> = {};

  r.meta = await outcome(() => u('meta')());
  r.profileBeforeLogin = await outcome(() => u('profile')());
  const signup = (await u('signup')({ email, password, confirm_password: password, given_name: 'Ada' })) as { user: { id: string } };
  r.signup = signup;
  r.cookiesAfterSignup = Object.keys((method(user, 'cookies')() as Record<string, string>) ?? {}).sort();
  r.profile = await outcome(() => u('profile')());
  r.updateProfile = await outcome(() => u('updateProfile')({ family_name: 'Lovelace' }));
  r.profileAfterUpdate = await outcome(() => u('profile')());

  // A second client authenticates with the access token instead of the cookie.
  const login = (await method(bearer, 'login')({ email, password })) as { access_token: string };
  method(bearer, 'clearCookies')();
  method(bearer, 'setAccessToken')(login.access_token);
  r.bearerProfile = await outcome(() => method(bearer, 'profile')());
  r.badLogin = await outcome(() => method(bearer, 'login')({ email, password: 'wrong-password-1' }));

  // Permissions: a model and a tuple, then the user's own checks.
  r.writeModel = await outcome(() => a('fgaWriteModel')({ dsl: MODEL }));
  r.writeTuples = await outcome(() => a('fgaWriteTuples')({ tuples: [{ user: `user:${signup.user.id}`, relation: 'owner', object: `doc:${tag}` }] }));
  r.check = await outcome(() =>
    u('checkPermissions')({
      checks: [
        { relation: 'viewer', object: `doc:${tag}` },
        { relation: 'owner', object: `doc:${tag}-other` },
        { relation: 'viewer', object: `doc:${tag}-ctx`, contextual_tuples: [{ user: `user:${signup.user.id}`, relation: 'viewer', object: `doc:${tag}-ctx` }] },
      ],
    }),
  );
  r.listPermissions = await outcome(() => u('listPermissions')({ relation: 'viewer', object_type: 'doc' }));
  r.explain = await outcome(() => u('explainPermission')({ relation: 'viewer', object: `doc:${tag}` }));
  r.explainOther = await outcome(() => u('explainPermission')({ relation: 'viewer', object: `doc:${tag}`, user: 'user:someone-else' }));
  r.adminExplain = await outcome(() => a('fgaExplain')({ user: `user:${signup.user.id}`, relation: 'owner', object: `doc:${tag}-other` }));
  r.otherSubject = await outcome(() => u('checkPermissions')({ checks: [{ relation: 'viewer', object: `doc:${tag}` }], user: 'user:someone-else' }));
  r.badModel = await outcome(() => a('fgaWriteModel')({ dsl: 'model\n  schema 1.1\ntype doc\n  relations\n    define viewer: [nobody]\n' }));
  r.tooManyChecks = await outcome(() => u('checkPermissions')({ checks: [] }));
  r.unknownField = await outcome(() => u('checkPermissions')({ checks: [{ relation: 'viewer', object: 'doc:x' }], colour: 'red' }));
  r.readTuples = await outcome(() => a('fgaReadTuples')({ object: `doc:${tag}` }));
  r.listUsers = await outcome(() => a('fgaListUsers')({ object: `doc:${tag}`, relation: 'viewer', user_type: 'user' }));
  r.expand = await outcome(() => a('fgaExpand')({ object: `doc:${tag}`, relation: 'owner' }));
  r.deleteTuples = await outcome(() => a('fgaDeleteTuples')({ tuples: [{ user: `user:${signup.user.id}`, relation: 'owner', object: `doc:${tag}` }] }));
  r.checkAfterDelete = await outcome(() => u('checkPermissions')({ checks: [{ relation: 'viewer', object: `doc:${tag}` }] }));
  r.fgaGetModel = await outcome(() => a('fgaGetModel')());

  // Logout ends the cookie session.
  r.logout = await outcome(() => u('logout')());
  r.cookiesAfterLogout = Object.keys((method(user, 'cookies')() as Record<string, string>) ?? {}).sort();
  r.profileAfterLogout = await outcome(() => u('profile')());

  // Users.
  r.adminUser = await outcome(() => a('user')({ email }));
  r.updateUser = await outcome(() => a('updateUser')({ id: signup.user.id, given_name: 'Augusta' }));
  r.revokeAccess = await outcome(() => a('revokeAccess')({ user_id: signup.user.id }));
  r.profileWhileRevoked = await outcome(() => method(bearer, 'profile')());
  r.enableAccess = await outcome(() => a('enableAccess')({ user_id: signup.user.id }));
  r.missingUser = await outcome(() => a('user')({ email: `nobody-${tag}@example.com` }));
  r.adminMeta = await outcome(() => a('adminMeta')());
  r.adminSignup = await outcome(() => a('adminSignup')({ admin_secret: 'x' }));

  // Webhooks.
  const endpoint = `http://127.0.0.1:9/${tag}`;
  r.addWebhook = await outcome(() => a('addWebhook')({ event_name: 'user.login', endpoint, headers: { 'x-run': tag } }));
  const listed = (await a('webhooks')({ pagination: { page: 1, limit: 100 } })) as { webhooks: { id: string; endpoint: string }[] };
  const hook = listed.webhooks.find((w) => w.endpoint === endpoint);
  r.webhookListed = hook !== undefined;
  if (hook) {
    r.getWebhook = await outcome(() => a('getWebhook')({ id: hook.id }));
    r.updateWebhook = await outcome(() => a('updateWebhook')({ id: hook.id, enabled: false }));
    r.getWebhookAfterUpdate = await outcome(() => a('getWebhook')({ id: hook.id }));
    r.deleteWebhook = await outcome(() => a('deleteWebhook')({ id: hook.id }));
    r.getDeletedWebhook = await outcome(() => a('getWebhook')({ id: hook.id }));
  }

  r.deleteUser = await outcome(() => a('deleteUser')({ email }));
  r.profileAfterDelete = await outcome(() => method(bearer, 'profile')());
  return normalise(r, { [signup.user.id]: '<user-id>', [tag]: '<tag>' }) as Record<string, unknown>;
}
