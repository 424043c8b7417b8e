/**
 * The catalogue of translated error messages (server/error_catalogue.ts):
 * every reason the sign-in page and the account center can be answered has
 * a message in every language; none is empty or left in English (but the
 * loanwords listed below); a translation names the values its English
 * message carries (but a few left out on purpose, listed below); each English text is one the code throws; and
 * the variants of one reason (the password checks, a field's validation) are
 * told apart on errors thrown by the code that writes them.
 */
import test from 'ava';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { LatchkeyError } from '../../engine/errors.ts';
import { assertPasswordAcceptable } from '../../auth/index.ts';
import { s, validate } from '../../api/shape.ts';
import { ENGLISH_ERROR_MESSAGES, ERROR_CATALOGUES, localizeError, translatedMessage, type ErrorMessageKey } from '../../server/error_messages.ts';
import { collectReasons } from '../../cmd/docs_gen.ts';

const LANGUAGES = ['de', 'fr', 'es', 'ja', 'ar'];

/**
 * The reasons the operations /app and /app/account call can answer (their
 * `call('…')`s), the OAuth link callback's `error_reason`, and the social
 * callbacks back to /app; plus what any form can meet (limits, the session,
 * malformed input, an outage, the CSRF guard).
 */
const USER_FACING_REASONS = [
  // login, signup, verify_otp, resend_otp, forgot_password, reset_password, magic_link_login, verify_email
  'invalid_credentials', 'user_already_exists', 'signup_disabled', 'access_revoked', 'account_deactivated',
  'basic_authentication_disabled', 'mobile_basic_authentication_disabled', 'magic_link_login_disabled',
  'email_verification_disabled', 'missing_identifier', 'invalid_phone_number', 'email_not_verified', 'protected_role', 'invalid_roles',
  'password_mismatch', 'invalid_password', 'invalid_otp', 'expired_token', 'invalid_token', 'invalid_mfa_session',
  'mfa_method_mismatch', 'mfa_method_unavailable', 'otp_not_resendable', 'totp_not_enrolled',
  'mail_disabled', 'smtp_unavailable', 'sms_unavailable', 'sms_not_sent', 'too_many_link_mails', 'too_many_attempts',
  // update_profile (password, contact, second factor, language), profile
  'missing_password', 'missing_old_password', 'missing_reset_proof', 'nothing_to_update', 'mfa_enforced', 'missing_otp',
  'concurrent_change', 'invalid_email', 'invalid_locale', 'user_not_found',
  // passkeys (sign-in, sign-up, step-up, the account's list)
  'passkeys_disabled', 'passkey_not_found', 'passkey_already_registered', 'passkey_invalid_attestation',
  'passkey_invalid_signature', 'passkey_malformed_response', 'step_up_required', 'last_sign_in_method',
  // sessions, organizations, invitations
  'unauthenticated', 'session_not_found', 'reauthentication_required', 'organization_session_expired',
  'stale_organization', 'organization_not_found', 'not_organization_member', 'organization_mfa_required',
  'sign_in_method_not_allowed', 'sso_email_domain_not_allowed', 'invitation_not_found', 'invitation_expired',
  'invitation_not_pending', 'invitation_email_mismatch',
  // consented apps, linked identities, the link and social callbacks
  'consent_not_found', 'identity_not_linked', 'invalid_provider', 'identity_owned_by_another_account',
  'link_session_mismatch', 'social_login_denied', 'social_login_failed', 'unverified_provider_email',
  'provider_unavailable', 'provider_not_configured', 'invalid_state',
  // any form
  'rate_limited', 'csrf_origin', 'invalid_field', 'storage_unavailable',
];

/** Messages that are the same words in English and the language (a loanword, checked by a reader). None so far. */
const SAME_AS_ENGLISH: Readonly<Record<string, readonly ErrorMessageKey[]>> = {};

/**
 * Values of an English message that every translation leaves out on purpose: a limit in bytes, the
 * window of a limit, a provider's own error code, the English wording of a problem, a list of names.
 * Every other value (a length limit, a field, a provider, a role, a domain) is kept in every language.
 */
const LEFT_OUT: Readonly<Partial<Record<ErrorMessageKey, readonly string[]>>> = {
  'invalid_password.too_long': ['max'],
  too_many_link_mails: ['event', 'max', 'minutes'],
  passkey_malformed_response: ['problem'],
  invalid_provider: ['providers'],
  social_login_denied: ['error'],
  social_login_failed: ['problem'],
  invalid_field: ['problem'],
};

const KEYS = Object.keys(ENGLISH_ERROR_MESSAGES) as ErrorMessageKey[];

/** The texts of the TypeScript files under `dir`, but the catalogue's own (its English would find itself). */
function sourcesOf(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile() || !e.name.endsWith('.ts') || e.name === 'error_catalogue.ts') continue;
    out.push(readFileSync(join(e.parentPath, e.name), 'utf8'));
  }
  return out;
}
const placeholders = (text: string): string[] => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!).sort();

test('every user-facing reason has a message, and every key is a reason the code throws', (t) => {
  const keyed = new Set(KEYS.map((k) => k.split('.')[0]!));
  for (const reason of USER_FACING_REASONS) t.true(keyed.has(reason), `${reason} has no message`);
  // The reasons docs/errors.md lists (`reason: '…'`), and those thrown through a helper (`invalidArgument('…', 'reason')`).
  const thrown = new Set(collectReasons().keys());
  for (const dir of ['auth', 'server']) {
    for (const text of sourcesOf(dir)) for (const m of text.matchAll(/\b\w+\((?:'[^']*'|`[^`]*`), '([a-z][a-z0-9_]*)'\)/g)) thrown.add(m[1]!);
  }
  for (const reason of keyed) t.true(thrown.has(reason), `${reason} is no reason of the code`);
  t.deepEqual([...keyed].filter((r) => !USER_FACING_REASONS.includes(r)), [], 'every catalogued reason is a user-facing one');
});

test('every language translates every key: none empty, none left in English, the values of the English message kept', (t) => {
  t.deepEqual(Object.keys(ERROR_CATALOGUES), LANGUAGES);
  for (const lang of LANGUAGES) {
    const catalogue = ERROR_CATALOGUES[lang]!;
    t.deepEqual(Object.keys(catalogue).sort(), [...KEYS].sort(), lang);
    for (const key of KEYS) {
      const text = catalogue[key];
      const english = ENGLISH_ERROR_MESSAGES[key];
      t.true(text.trim().length > 0, `${lang}.${key} is empty`);
      if (text.toLowerCase() === english.toLowerCase()) t.true((SAME_AS_ENGLISH[lang] ?? []).includes(key), `${lang}.${key} is still English: ${text}`);
      const kept = placeholders(english).filter((name) => !(LEFT_OUT[key] ?? []).includes(name));
      t.deepEqual(placeholders(text), kept, `${lang}.${key}: the values of the English message, but those left out`);
    }
  }
});

test('each English text is one the code writes (the parts around its values)', (t) => {
  const code = ['auth', 'api', 'server', 'transports', 'engine'].flatMap(sourcesOf).map((text) => text.replace(/\\'/g, "'")).join('\n');
  for (const key of KEYS) {
    // The longest literal run between values (a message built from a template keeps its words).
    const parts = ENGLISH_ERROR_MESSAGES[key].split(/\{\w+\}/).map((p) => p.replace(/^[\s:;,()]+|[\s:;,()]+$/g, '')).filter((p) => p.length > 3);
    if (parts.length === 0) continue;
    const longest = parts.reduce((a, b) => (b.length > a.length ? b : a));
    t.true(code.includes(longest), `${key}: "${longest}" is written nowhere`);
  }
});

const thrown = (fn: () => unknown): LatchkeyError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof LatchkeyError) return err;
    throw err;
  }
  throw new Error('nothing thrown');
};

test('the password checks: each variant, with the limit it names', (t) => {
  const strong = { strong: true };
  const cases: [LatchkeyError, ErrorMessageKey, string][] = [
    [thrown(() => assertPasswordAcceptable('', strong)), 'invalid_password.required', 'Geben Sie ein Passwort ein'],
    [thrown(() => assertPasswordAcceptable('short', strong)), 'invalid_password.too_short', 'Das Passwort muss mindestens 8 Zeichen lang sein'],
    [thrown(() => assertPasswordAcceptable('x'.repeat(100), strong)), 'invalid_password.too_long', 'Das Passwort ist zu lang'],
    [thrown(() => assertPasswordAcceptable('password', strong)), 'invalid_password.common', 'Dieses Passwort ist zu verbreitet; wählen Sie ein anderes'],
    [thrown(() => assertPasswordAcceptable('Rosalind1', strong, { email: 'rosalind1@example.com' })), 'invalid_password.email', 'Das Passwort darf nicht Ihre E-Mail-Adresse sein'],
  ];
  for (const [err, key, german] of cases) {
    t.is(err.reason, 'invalid_password');
    t.is(translatedMessage(err, 'de'), german, key);
    t.is(translatedMessage(err, 'ja'), ERROR_CATALOGUES['ja']![key].replace('{min}', '8'), key);
  }
  t.is(translatedMessage(thrown(() => assertPasswordAcceptable('abc', { strong: false })), 'fr'), 'Le mot de passe doit comporter au moins 6 caractères');
});

test("a field's validation: too long, empty, required, and any other problem with its field", (t) => {
  const shape = s.object('Form', { name: s.string({ maxLength: 10 }), code: s.string({ minLength: 1 }), count: s.optional(s.int()) });
  const tooLong = thrown(() => validate(shape, { name: 'x'.repeat(11), code: 'a' }));
  t.is(translatedMessage(tooLong, 'de'), 'Das Feld name darf höchstens 10 Zeichen haben');
  t.is(translatedMessage(thrown(() => validate(shape, { name: 'a', code: '' })), 'es'), 'El campo code no puede estar vacío');
  t.is(translatedMessage(thrown(() => validate(shape, { name: 'a' })), 'fr'), 'Le champ code est obligatoire');
  const notInt = thrown(() => validate(shape, { name: 'a', code: 'b', count: 'many' }));
  t.is(translatedMessage(notInt, 'ar'), 'قيمة الحقل count غير صالحة');
  // A message of another form: the field comes from details.
  t.is(translatedMessage(new LatchkeyError('invalid_argument', 'state is too long', { reason: 'invalid_field', details: { field: 'state' } }), 'de'), 'Das Feld state ist ungültig');
});

test('the rest: a reason with one message, a value from the message, a language or reason without a catalogue, codes and details kept', (t) => {
  const weak = new LatchkeyError('unauthenticated', 'invalid credentials', { reason: 'invalid_credentials' });
  t.is(translatedMessage(weak, 'es'), 'Credenciales incorrectas');
  const notLinked = new LatchkeyError('not_found', 'github is not linked to this account', { reason: 'identity_not_linked' });
  t.is(translatedMessage(notLinked, 'de'), 'github ist nicht mit diesem Konto verbunden');
  t.is(translatedMessage(new LatchkeyError('unavailable', 'GitHub could not be reached; try again later', { reason: 'provider_unavailable' }), 'ja'), 'GitHub に接続できません。しばらくしてからお試しください');
  // A value the translation names that the message does not carry: English stays.
  t.is(translatedMessage(new LatchkeyError('unavailable', 'something else', { reason: 'provider_unavailable' }), 'de'), undefined);
  t.is(translatedMessage(weak, 'nl'), undefined);
  t.is(translatedMessage(new LatchkeyError('not_found', 'store not found', { reason: 'store_not_found' }), 'de'), undefined);
  const limited = new LatchkeyError('resource_exhausted', 'too many requests', { reason: 'rate_limited', details: { retry_after_seconds: 3 } });
  const local = localizeError(limited, 'fr-CA, fr;q=0.9');
  t.deepEqual(local.toJSON(), { code: 'resource_exhausted', message: 'Trop de requêtes ; patientez un instant', reason: 'rate_limited', details: { retry_after_seconds: 3 } });
  t.is(localizeError(limited, undefined), limited);
  t.is(localizeError(limited, 'en'), limited);
});
