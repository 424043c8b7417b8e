// The password hasher reads the bcrypt hashes other implementations write (a database imported from a server that
// hashed with the `bcrypt` package, Go's or PHP's bcrypt), writes hashes they read, and answers false, never an
// error, for a hash it cannot read.
import test from 'ava';
import bcrypt from 'bcrypt';
import fc from 'fast-check';
import { BCRYPT_MAX_BYTES, PasswordHasher } from '../../auth/password.ts';

const hasher = new PasswordHasher({ cost: 4 });

test('published crypt_blowfish vectors ($2a$, $2b$, $2y$) verify, and a wrong password does not', async (t) => {
  // Test vectors of the reference crypt_blowfish implementation; the prefix letter does not change the hash of an ASCII password.
  const vectors: [string, string][] = [
    ['U*U', '$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW'],
    ['', '$2a$05$CCCCCCCCCCCCCCCCCCCCC.7uG0VCzI2bS7j6ymqJi9CdcdxiRTWNy'],
  ];
  for (const [password, hash] of vectors) {
    for (const prefix of ['$2a$', '$2b$', '$2y$']) {
      const h = prefix + hash.slice(4);
      t.true(await hasher.verify(password, h), `${JSON.stringify(password)} against ${h}`);
      t.false(await hasher.verify(`${password}x`, h), `a wrong password against ${h}`);
    }
  }
});

test('hashes written by the bcrypt package verify, and ours verify under it, for any password up to 72 bytes', async (t) => {
  const password = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }).filter((p) => Buffer.byteLength(p, 'utf8') <= BCRYPT_MAX_BYTES);
  await fc.assert(
    fc.asyncProperty(password, password, async (p, other) => {
      const theirs = await bcrypt.hash(p, 4);
      const ours = await hasher.hash(p);
      t.regex(ours, /^\$2b\$04\$[./A-Za-z0-9]{53}$/);
      t.true(await hasher.verify(p, theirs));
      t.true(await bcrypt.compare(p, ours));
      t.is(await hasher.verify(other, theirs), other === p);
    }),
    { numRuns: 25 },
  );
});

test('a malformed, empty or missing hash and an over-long password answer false', async (t) => {
  const good = await hasher.hash('correct horse');
  for (const hash of ['garbage', '$2b$04$short', '', null, undefined, `${good.slice(0, -1)}!`]) {
    t.false(await hasher.verify('correct horse', hash), String(hash));
  }
  const long = 'a'.repeat(BCRYPT_MAX_BYTES + 1);
  t.false(await hasher.verify(long, await bcrypt.hash(long, 4)), 'a password over 72 bytes never matches, even its own truncated hash');
});
