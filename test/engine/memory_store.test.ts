import test from 'ava';
import { MemoryStore } from '../../engine/index.ts';
import { runStoreSuite } from '../conformance/store_suite.ts';

runStoreSuite(test, 'memory', () => new MemoryStore());

test('memory store: a closed store refuses calls with unavailable', async (t) => {
  const s = new MemoryStore();
  await s.close();
  const err = await t.throwsAsync(s.revision());
  t.is((err as { code?: string }).code, 'unavailable');
});
