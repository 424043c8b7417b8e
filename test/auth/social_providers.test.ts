/**
 * The social provider table: each row's mapping of the provider's answer
 * (documented answer shapes) to a profile, and the verification each row
 * accepts: an address counts as verified only when the provider attests it.
 * Rows for providers the flow tests do not drive end to end (Facebook,
 * LinkedIn, X, Roblox) are pinned here.
 */
import test from 'ava';
import { SOCIAL_LOGIN_PROVIDERS, socialProviderTable } from '../../auth/index.ts';

const table = socialProviderTable({ microsoftTenantId: 'common' });

test('one row per provider of the spec; OpenID rows have a key set and an issuer, PKCE where the provider supports it', (t) => {
  t.deepEqual(Object.keys(table).sort(), SOCIAL_LOGIN_PROVIDERS.filter((p) => p !== 'oidc').sort());
  for (const row of Object.values(table)) {
    t.true(row.authorizationEndpoint.startsWith('https://'), row.name);
    t.true(row.tokenEndpoint.startsWith('https://'), row.name);
    if (row.kind === 'oidc') {
      t.truthy(row.jwksUri, row.name);
      t.truthy(row.issuer, row.name);
      t.true(row.nonce, row.name);
    } else t.truthy(row.userinfoEndpoint, row.name);
  }
  t.true(table.twitter.pkce, 'X requires PKCE');
  t.is(table.twitter.tokenAuth, 'client_secret_basic');
  t.is(table.apple.responseMode, 'form_post');
  t.regex(table.microsoft.issuer ?? '', /\{tenantid\}/);
  t.is(socialProviderTable({ microsoftTenantId: 'contoso-guid' }).microsoft.authorizationEndpoint, 'https://login.microsoftonline.com/contoso-guid/oauth2/v2.0/authorize');
});

test('Facebook: the Graph answer; an address is only ever returned when confirmed', (t) => {
  const p = table.facebook.profile({ userinfo: { id: '10', first_name: 'Fay', last_name: 'Book', email: 'fay@example.com', picture: { data: { url: 'https://p/1' } } } });
  t.like(p, { subject: '10', email: 'fay@example.com', emailVerified: true, givenName: 'Fay', familyName: 'Book', picture: 'https://p/1' });
  t.false(table.facebook.profile({ userinfo: { id: '11' } }).emailVerified);
});

test('LinkedIn: OpenID userinfo with email_verified', (t) => {
  t.like(table.linkedin.profile({ userinfo: { sub: 'li-1', email: 'lin@example.com', email_verified: true, given_name: 'Lin' } }), { subject: 'li-1', emailVerified: true, givenName: 'Lin' });
  t.false(table.linkedin.profile({ userinfo: { sub: 'li-1', email: 'lin@example.com', email_verified: false } }).emailVerified);
  t.false(table.linkedin.profile({ userinfo: { sub: 'li-1', email: 'lin@example.com' } }).emailVerified, 'absent is not verified');
});

test('X: the data wrapper of /2/users/me; confirmed_email is the only address', (t) => {
  const p = table.twitter.profile({ userinfo: { data: { id: '2244994945', name: 'X Dev', username: 'xdevelopers', confirmed_email: 'dev@x.example', profile_image_url: 'https://img/1' } } });
  t.like(p, { subject: '2244994945', email: 'dev@x.example', emailVerified: true, givenName: 'X', familyName: 'Dev', nickname: 'xdevelopers' });
  t.false(table.twitter.profile({ userinfo: { data: { id: '1', username: 'no-mail' } } }).emailVerified);
});

test('GitHub: the profile email is not trusted, only a verified address of /user/emails', (t) => {
  const user = { id: 7, login: 'octo', name: 'Octo Cat', email: 'public@example.com' };
  t.false(table.github.profile({ userinfo: user, emails: [{ email: 'public@example.com', primary: true, verified: false }] }).emailVerified);
  t.like(table.github.profile({ userinfo: user, emails: [{ email: 'a@example.com', primary: false, verified: true }] }), { email: 'a@example.com', emailVerified: true, subject: '7' });
  t.like(table.github.profile({ userinfo: user, emails: [{ email: 'a@example.com', primary: false, verified: true }, { email: 'p@example.com', primary: true, verified: true }] }), { email: 'p@example.com' });
});

test('Discord, Apple, Microsoft, Roblox, Google: verification as each provider states it', (t) => {
  t.false(table.discord.profile({ userinfo: { id: 'd', email: 'd@example.com', verified: false } }).emailVerified);
  t.true(table.apple.profile({ claims: { sub: 'a', email: 'a@example.com', email_verified: 'true' } }).emailVerified, 'Apple sends a string');
  t.false(table.apple.profile({ claims: { sub: 'a', email: 'a@example.com', email_verified: 'false' } }).emailVerified);
  t.like(table.apple.profile({ claims: { sub: 'a' }, callback: { user: '{"name":{"firstName":"Ann","lastName":"Apple"}}' } }), { givenName: 'Ann', familyName: 'Apple' });
  t.false(table.microsoft.profile({ claims: { sub: 'm', email: 'm@contoso.example', tid: '11111111-2222-3333-4444-555555555555' } }).emailVerified, 'Entra email alone is not verified');
  t.true(table.microsoft.profile({ claims: { sub: 'm', email: 'm@contoso.example', xms_edov: true } }).emailVerified);
  t.false(table.roblox.profile({ claims: { sub: 'r', preferred_username: 'rob' } }).emailVerified);
  t.true(table.google.profile({ claims: { sub: 'g', email: 'g@example.com', email_verified: true } }).emailVerified);
  // A userinfo answer about another subject than the ID token's is not used (OpenID Connect Core §5.3.2).
  t.throws(() => table.google.profile({ claims: { sub: 'g' }, userinfo: { sub: 'other', email: 'x@example.com', email_verified: true } }));
});
