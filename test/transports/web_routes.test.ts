/**
 * The pages' routes are mounted at start and their modules loaded at the
 * first request (transports/web/routes.ts, `onFirstRequest`): one build for
 * any number of first requests, each path answered by its own handler, a
 * build that does not give the mounted routes refused, a failed build tried
 * again at the next request.
 */
import test from 'ava';
import type { HttpRoute, HttpRouteRequest } from '../../server/index.ts';
import { onFirstRequest } from '../../transports/web/routes.ts';

const request = { method: 'GET', query: {}, body: {}, cookies: {}, requestId: 'r', clientIp: '127.0.0.1', userAgent: 'test' } as HttpRouteRequest;
const answering = (path: string, methods?: HttpRoute['methods']): HttpRoute => ({ path, ...(methods ? { methods } : {}), handler: async () => ({ body: { path } }) });

test('concurrent first requests build the routes once, and each path gets its own handler', async (t) => {
  let builds = 0;
  const routes = onFirstRequest([{ path: '/a' }, { path: '/b', methods: ['GET', 'POST'] }], async () => {
    builds++;
    await new Promise((r) => setTimeout(r, 10));
    return [answering('/a'), answering('/b', ['GET', 'POST'])];
  });
  t.deepEqual(routes.map((r) => [r.path, r.methods]), [['/a', undefined], ['/b', ['GET', 'POST']]]);
  t.is(builds, 0, 'nothing is built before a request');
  const answers = await Promise.all([routes[0]!.handler(request), routes[1]!.handler(request), routes[0]!.handler(request)]);
  t.deepEqual(answers.map((a) => a.body), [{ path: '/a' }, { path: '/b' }, { path: '/a' }]);
  await routes[1]!.handler(request);
  t.is(builds, 1);
});

test('a build whose routes differ from the mounted ones is refused', async (t) => {
  const other = onFirstRequest([{ path: '/a' }], async () => [answering('/x')]);
  await t.throwsAsync(other[0]!.handler(request), { message: /not the routes mounted/ });
  const methods = onFirstRequest([{ path: '/a', methods: ['GET', 'POST'] }], async () => [answering('/a')]);
  await t.throwsAsync(methods[0]!.handler(request), { message: /not the routes mounted/ });
});

test('a failed build is tried again at the next request', async (t) => {
  let attempts = 0;
  const routes = onFirstRequest([{ path: '/a' }], async () => {
    attempts++;
    if (attempts === 1) throw new Error('not yet');
    return [answering('/a')];
  });
  await t.throwsAsync(routes[0]!.handler(request), { message: 'not yet' });
  t.deepEqual((await routes[0]!.handler(request)).body, { path: '/a' });
  t.is(attempts, 2);
});
