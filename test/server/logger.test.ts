/**
 * Structured logs (internal logger of transports, tested directly): one JSON
 * object per line, the level honoured, secret-looking fields redacted at any
 * depth, errors serialised without losing their cause.
 */
import test from 'ava';
import { createLogger } from '../../server/logger.ts';

test('internal logger: lines below the level are dropped; others are one JSON object each', (t) => {
  const lines: string[] = [];
  const log = createLogger('warn', (l) => lines.push(l));
  log.info('hidden');
  log.debug('hidden');
  log.warn('shown', { n: 1 });
  log.error('also shown');
  t.is(lines.length, 2);
  const first = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
  t.is(first.level, 'warn');
  t.is(first.msg, 'shown');
  t.is(first.n, 1);
  t.regex(String(first.time), /^\d{4}-\d\d-\d\dT/);
  t.false(log.enabled('info'));
  t.true(log.enabled('error'));
});

test('internal logger: secrets are redacted wherever they appear; child fields are carried', (t) => {
  const lines: string[] = [];
  const log = createLogger('debug', (l) => lines.push(l)).child({ request_id: 'r1' });
  log.info('x', { admin_secret: 'topsecret', nested: { password: 'p', headers: { authorization: 'Bearer t', cookie: 'a=b' } }, token: '', user: 'alice' });
  const text = lines[0] ?? '';
  for (const secret of ['topsecret', '"p"', 'Bearer t', 'a=b']) t.false(text.includes(secret), secret);
  const line = JSON.parse(text) as Record<string, unknown>;
  t.is(line.request_id, 'r1');
  t.is(line.admin_secret, '[redacted]');
  t.is(line.user, 'alice');
});

test('internal logger: booleans under secret-looking keys are shown (they carry no secret), strings and numbers are not', (t) => {
  const lines: string[] = [];
  createLogger('info', (l) => lines.push(l)).info('config', { config: { 'enable-strong-password': true, 'app-cookie-secure': false, 'jwt-secret': 's3cr3t', 'otp-token': 123456 } });
  const config = (JSON.parse(lines[0] ?? '{}') as { config: Record<string, unknown> }).config;
  t.is(config['enable-strong-password'], true);
  t.is(config['app-cookie-secure'], false);
  t.is(config['jwt-secret'], '[redacted]');
  t.is(config['otp-token'], '[redacted]');
});

test('internal logger: errors keep name, message and cause; silent writes nothing', (t) => {
  const lines: string[] = [];
  createLogger('info', (l) => lines.push(l)).error('boom', { err: new Error('outer', { cause: new TypeError('inner') }) });
  const line = JSON.parse(lines[0] ?? '{}') as { err: { message: string; cause: { name: string } } };
  t.is(line.err.message, 'outer');
  t.is(line.err.cause.name, 'TypeError');
  const none: string[] = [];
  createLogger('silent', (l) => none.push(l)).error('x');
  t.is(none.length, 0);
});
