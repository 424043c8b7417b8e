/**
 * Our GraphQL schema, as a client sees it by introspection, against Authorizer
 * 2.3.0's schema (test/corpus/authorizer/schema-2.3.0.graphqls): every root
 * field of the reference, its argument names and types, its output type, and,
 * following those, every field of every type reached, compared by name and
 * full type (named type, list and `!`). Each difference is listed below with
 * its reason; the test fails on a difference not listed and on a listed one
 * that no longer exists. Fields and types we have beyond the reference are
 * not differences.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import {
  buildClientSchema,
  buildSchema,
  getIntrospectionQuery,
  getNamedType,
  isInputObjectType,
  isObjectType,
  type GraphQLField,
  type GraphQLInputField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type IntrospectionQuery,
} from 'graphql';
import { startTestServer } from '../../helpers/server.ts';

const REFERENCE = buildSchema(readFileSync(new URL('../../corpus/authorizer/schema-2.3.0.graphqls', import.meta.url), 'utf8'));

const TWO_PROTOCOLS =
  "the spec's client table serves it on two of the three protocols; as Authorizer's own SDKs of 2.3.0 (authorizer-go, authorizer-js) mark it, those are REST and gRPC";
const CONSISTENCY =
  "answers FgaWriteResponse, Response's `message` plus `consistency_token`: the store revision the write committed, which a later check or list may pass to be answered at least as fresh (docs/scaling.md); an Authorizer client reading `message` works unchanged";
const CLIENT_SENDS_IT = 'optional here, required there: an Authorizer client always sends it, so it works unchanged, and our own clients may leave it out';

/**
 * Every known difference: `<Type>.<field>` (or `<Type>.<field>(<arg>)`; `<Type>.*`
 * for every field of a type) → why we differ.
 */
const DIFFERENCES: Record<string, string> = {
  'Query._admin_session': TWO_PROTOCOLS,
  'Query._admin_meta': TWO_PROTOCOLS,
  'Query._fga_get_model': TWO_PROTOCOLS,
  'Mutation._admin_logout': TWO_PROTOCOLS,
  'Mutation._fga_write_tuples': CONSISTENCY,
  'Mutation._fga_delete_tuples': CONSISTENCY,
  'Mutation._fga_reset': TWO_PROTOCOLS,
  'Mutation.mobile_signup': 'deprecated since Authorizer 1.2.0 and not in the spec; signup takes phone_number',
  'Mutation.mobile_login': 'deprecated since Authorizer 1.2.0 and not in the spec; login takes phone_number',
  'Query._env':
    'a v2 server has no stored v1 configuration: `_env` answers EnvResponse {env}, the effective flags by their kebab-case names with every secret redacted',
  'Env.*': 'the v1 Env type is not returned (see Query._env)',
  'InviteMembersResponse.Users': 'field names are snake_case on every surface (spec): the invited users are in `users`',
  'SignUpRequest.is_multi_factor_auth_enabled':
    "left out as Authorizer 2.4 removed it: a sign-up must not turn off its own second factor (the user's setting is changed by update_profile)",
  'SignUpRequest.confirm_password': CLIENT_SENDS_IT,
  'ResetPasswordRequest.confirm_password': CLIENT_SENDS_IT,
  'ValidateSessionRequest.cookie': `${CLIENT_SENDS_IT}; without it the request's own session cookie is validated`,
  'AddWebhookRequest.enabled': `${CLIENT_SENDS_IT}; a new webhook is enabled unless it says otherwise`,
  'AdminSignupRequest.admin_secret': 'optional, so that every call of this removed operation gets the spec\'s deprecation message rather than a validation error',
  'GenerateJWTKeysRequest.type': 'optional, so that every call of this removed operation gets the spec\'s deprecation message rather than a validation error',
};

const listed = (path: string): boolean => path in DIFFERENCES || `${path.slice(0, path.indexOf('.'))}.*` in DIFFERENCES;

async function introspect(): Promise<GraphQLSchema> {
  const server = await startTestServer();
  try {
    const res = await fetch(`${server.httpUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: server.httpUrl },
      body: JSON.stringify({ query: getIntrospectionQuery() }),
    });
    const json = (await res.json()) as { data: IntrospectionQuery };
    return buildClientSchema(json.data);
  } finally {
    await server.close();
  }
}

/** Differences between the reference and ours: path → `reference ≠ ours`. */
function compare(ours: GraphQLSchema): Map<string, string> {
  const diffs = new Map<string, string>();
  const pairs: [GraphQLNamedType, GraphQLNamedType][] = [];
  const queued = new Set<string>();
  const follow = (ref: GraphQLNamedType, our: GraphQLNamedType): void => {
    if (queued.has(ref.name)) return;
    queued.add(ref.name);
    pairs.push([ref, our]);
  };
  const field = (path: string, ref: GraphQLField<unknown, unknown> | GraphQLInputField, our: GraphQLField<unknown, unknown> | GraphQLInputField | undefined): void => {
    if (our === undefined) {
      diffs.set(path, `${String(ref.type)} ≠ missing`);
      return;
    }
    if (String(ref.type) !== String(our.type)) diffs.set(path, `${String(ref.type)} ≠ ${String(our.type)}`);
    follow(getNamedType(ref.type), getNamedType(our.type));
    if ('args' in ref) {
      const ourArgs = 'args' in our ? our.args : [];
      for (const a of ref.args) {
        const o = ourArgs.find((x) => x.name === a.name);
        if (o === undefined) diffs.set(`${path}(${a.name})`, `${String(a.type)} ≠ missing${ourArgs.length ? ` (ours: ${ourArgs.map((x) => x.name).join(', ')})` : ''}`);
        else {
          if (String(a.type) !== String(o.type)) diffs.set(`${path}(${a.name})`, `${String(a.type)} ≠ ${String(o.type)}`);
          follow(getNamedType(a.type), getNamedType(o.type));
        }
      }
    }
  };
  for (const root of ['Query', 'Mutation'] as const) {
    const ref = root === 'Query' ? REFERENCE.getQueryType() : REFERENCE.getMutationType();
    const our = root === 'Query' ? ours.getQueryType() : ours.getMutationType();
    const ourFields = our?.getFields() ?? {};
    for (const f of Object.values(ref?.getFields() ?? {})) field(`${root}.${f.name}`, f, ourFields[f.name]);
  }
  for (let i = 0; i < pairs.length; i++) {
    const [ref, our] = pairs[i]!;
    if (!(isObjectType(ref) || isInputObjectType(ref))) continue;
    if (!(isObjectType(our) || isInputObjectType(our))) continue;
    const ourFields = our.getFields() as Record<string, GraphQLField<unknown, unknown> | GraphQLInputField>;
    for (const f of Object.values(ref.getFields())) field(`${ref.name}.${f.name}`, f, ourFields[f.name]);
  }
  return diffs;
}

test('the introspected schema has the names, arguments and nullability of Authorizer 2.3.0, but for the listed differences', async (t) => {
  const diffs = compare(await introspect());
  const unexplained = [...diffs].filter(([path]) => !listed(path)).map(([path, d]) => `${path}: ${d}`);
  const stale = Object.keys(DIFFERENCES).filter((path) =>
    path.endsWith('.*') ? ![...diffs.keys()].some((d) => d.startsWith(path.slice(0, -1))) : !diffs.has(path),
  );
  t.deepEqual(unexplained, [], 'differences without a reason');
  t.deepEqual(stale, [], 'listed differences that no longer exist');
});
