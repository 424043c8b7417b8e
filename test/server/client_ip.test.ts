/**
 * Client IP resolution and rate-limit keys (internal helpers of transports,
 * tested directly): X-Forwarded-For only from trusted proxies, right-most
 * untrusted hop, IPv4-mapped addresses normalised, IPv6 keyed by /64.
 */
import test from 'ava';
import { createClientIpResolver, rateLimitKey } from '../../server/client_ip.ts';

test('internal client_ip: the socket address wins without trusted proxies', (t) => {
  const resolve = createClientIpResolver([]);
  t.is(resolve('10.1.2.3', '203.0.113.9'), '10.1.2.3');
  t.is(resolve('::ffff:10.1.2.3', undefined), '10.1.2.3');
});

test('internal client_ip: X-Forwarded-For from a trusted proxy gives the right-most untrusted hop', (t) => {
  const resolve = createClientIpResolver(['10.0.0.0/8', '2001:db8::/32']);
  t.is(resolve('10.0.0.5', '198.51.100.1, 203.0.113.9'), '203.0.113.9');
  t.is(resolve('10.0.0.5', '198.51.100.1, 203.0.113.9, 10.0.0.7'), '203.0.113.9');
  t.is(resolve('2001:db8::1', '203.0.113.4'), '203.0.113.4');
  t.is(resolve('192.0.2.1', '203.0.113.9'), '192.0.2.1', 'an untrusted peer cannot spoof');
  t.is(resolve('10.0.0.5', 'garbage'), '10.0.0.5', 'a malformed hop is not trusted');
});

test('internal client_ip: IPv6 clients share a rate-limit key per /64', (t) => {
  t.is(rateLimitKey('203.0.113.9'), '203.0.113.9');
  t.is(rateLimitKey('2001:db8:1:2:aaaa::1'), rateLimitKey('2001:db8:1:2:bbbb::2'));
  t.not(rateLimitKey('2001:db8:1:2::1'), rateLimitKey('2001:db8:1:3::1'));
});
