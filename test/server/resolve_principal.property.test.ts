/**
 * The authenticator chain answers as if every link were awaited in turn,
 * whether a link answers at once or with a promise: the first principal
 * wins, links after it are not asked, a refusal of a link refuses a `user`
 * or `super_admin` row and leaves a `public` row anonymous, and a row's
 * `auth` admits only its kinds. A chain whose links all answer at once is
 * answered without a promise (so the pipeline takes no promise hop for it).
 */
import test from 'ava';
import fc from 'fast-check';
import { resolvePrincipal, type AuthenticationInfo, type Authenticator } from '../../server/authenticate.ts';
import { ANONYMOUS, type Credentials, type Principal } from '../../server/context.ts';
import type { OperationAuth } from '../../api/operations/types.ts';

type Answer = 'none' | 'user' | 'admin' | 'refuse';
interface Link {
  answer: Answer;
  async: boolean;
}

const USER: Principal = Object.freeze({ kind: 'user', userId: 'u1', subject: 'user:u1', roles: [] });
const ADMIN: Principal = Object.freeze({ kind: 'super_admin', via: 'admin_secret_header' });
const INFO: AuthenticationInfo = { requestId: 'r', clientIp: '127.0.0.1', userAgent: '' };
const REFUSAL = new Error('refused by a link');

function principalOf(a: Answer): Principal | undefined {
  if (a === 'user') return USER;
  if (a === 'admin') return ADMIN;
  if (a === 'refuse') throw REFUSAL;
  return undefined;
}

function chainOf(links: readonly Link[], asked: number[]): Authenticator[] {
  return links.map((l, i) => () => {
    asked.push(i);
    if (!l.async) return principalOf(l.answer);
    return new Promise<Principal | undefined>((resolve, reject) => {
      setImmediate(() => {
        try {
          resolve(principalOf(l.answer));
        } catch (err) {
          reject(err);
        }
      });
    });
  });
}

/** The rule, written as the chain was before links could answer at once: every link awaited in turn. */
async function reference(links: readonly Link[], auth: OperationAuth, credentials: Credentials): Promise<{ principal?: Principal; refused?: unknown; asked: number[] }> {
  const asked: number[] = [];
  const chain = chainOf(links, asked);
  let principal: Principal = ANONYMOUS;
  const has = credentials.bearer !== undefined || credentials.adminSecret !== undefined || Object.keys(credentials.cookies).length > 0;
  try {
    if (has) {
      try {
        for (const link of chain) {
          const p = await link(credentials, INFO);
          if (p) {
            principal = p;
            break;
          }
        }
      } catch (err) {
        if (auth !== 'public') throw err;
      }
    }
    if (auth === 'user' && principal.kind === 'anonymous') throw new Error('unauthenticated');
    if (auth === 'super_admin' && principal.kind !== 'super_admin') throw new Error('unauthenticated');
    return { principal, asked };
  } catch (err) {
    return { refused: err === REFUSAL ? REFUSAL : 'unauthenticated', asked };
  }
}

async function actual(links: readonly Link[], auth: OperationAuth, credentials: Credentials): Promise<{ principal?: Principal; refused?: unknown; asked: number[]; sync: boolean }> {
  const asked: number[] = [];
  let sync = true;
  try {
    let p = resolvePrincipal(chainOf(links, asked), auth, credentials, INFO);
    if (p instanceof Promise) {
      sync = false;
      p = await p;
    }
    return { principal: p, asked, sync };
  } catch (err) {
    const refused = err === REFUSAL ? REFUSAL : (err as { code?: string }).code === 'unauthenticated' ? 'unauthenticated' : err;
    return { refused, asked, sync };
  }
}

const link = fc.record({ answer: fc.constantFrom<Answer>('none', 'user', 'admin', 'refuse'), async: fc.boolean() });
const credentials = fc.constantFrom<Credentials>({ cookies: {} }, { bearer: 't', cookies: {} }, { adminSecret: 's', cookies: {} }, { cookies: { session: 'c' } });
const auth = fc.constantFrom<OperationAuth>('public', 'user', 'super_admin');

test('sync and async links answer as links awaited in turn: same principal or refusal, same links asked', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(link, { maxLength: 5 }), auth, credentials, async (links, a, c) => {
      const want = await reference(links, a, c);
      const got = await actual(links, a, c);
      t.deepEqual({ principal: got.principal ?? null, refused: got.refused ?? null, asked: got.asked }, { principal: want.principal ?? null, refused: want.refused ?? null, asked: want.asked });
      // Without a link that had to wait before the decision, the answer came without a promise.
      const waited = got.asked.some((i) => links[i]!.async);
      t.is(got.sync, !waited);
    }),
    { numRuns: 400 },
  );
});

test('a user token answered at once by the last link is the principal, without a promise', (t) => {
  const asked: number[] = [];
  const links: Link[] = [{ answer: 'none', async: false }, { answer: 'none', async: false }, { answer: 'user', async: false }];
  const p = resolvePrincipal(chainOf(links, asked), 'user', { bearer: 't', cookies: {} }, INFO);
  t.false(p instanceof Promise);
  t.is(p, USER);
  t.deepEqual(asked, [0, 1, 2]);
});
