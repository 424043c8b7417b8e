/**
 * The call's language (server/request_language.ts): a call without a
 * language, made where none is in effect, runs its function as it is; inside
 * a call with a language it still has none of its own.
 */
import test from 'ava';
import { requestLanguage, withRequestLanguage } from '../../server/request_language.ts';

const later = (): Promise<void> => new Promise((done) => setImmediate(done));

test('a call without a language has none, at once and in what it starts', async (t) => {
  t.is(requestLanguage(), undefined);
  t.is(withRequestLanguage(undefined, () => requestLanguage()), undefined);
  t.is(await withRequestLanguage(undefined, async () => (await later(), requestLanguage())), undefined);
  t.is(withRequestLanguage(undefined, () => 42), 42);
});

test('a call with a language keeps it across awaits; a call without one inside it has none', async (t) => {
  t.is(await withRequestLanguage('fr', async () => (await later(), requestLanguage())), 'fr');
  t.is(withRequestLanguage('fr', () => withRequestLanguage(undefined, () => requestLanguage())), undefined);
  t.is(await withRequestLanguage('de', () => withRequestLanguage(undefined, async () => (await later(), requestLanguage()))), undefined);
  t.is(withRequestLanguage('fr', () => withRequestLanguage('ja', () => requestLanguage())), 'ja');
  t.is(requestLanguage(), undefined);
});

test('a failure inside a call without a language is thrown as it is', (t) => {
  const err = new Error('inside');
  t.is(t.throws(() => withRequestLanguage(undefined, () => { throw err; })), err);
});
