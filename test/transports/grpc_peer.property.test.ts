/**
 * The client address of a gRPC call is its peer without the port, for every
 * form the peer comes in: the rate limit and the trusted-proxy check are keyed
 * on it, so a port left on it would make every connection a client of its own
 * (each with a full rate-limit budget).
 */
import test from 'ava';
import fc from 'fast-check';
import * as grpc from '@grpc/grpc-js';
import { peerAddress } from '../../transports/grpc/server.ts';

const port = fc.integer({ min: 1, max: 65535 });

test('an IPv4 or IPv6 peer loses its port, bracketed or not, with or without the naming prefix', (t) => {
  fc.assert(
    fc.property(fc.oneof(fc.ipV4(), fc.ipV6()), port, (address, p) => {
      const v6 = address.includes(':');
      t.is(peerAddress(`${address}:${p}`), address);
      if (v6) {
        t.is(peerAddress(`[${address}]:${p}`), address);
        t.is(peerAddress(`ipv6:[${address}]:${p}`), address);
      } else {
        t.is(peerAddress(`ipv4:${address}:${p}`), address);
      }
    }),
  );
});

test('a peer that is not an address with a port is kept as it is', (t) => {
  for (const peer of ['unix:/tmp/latchkey.sock', 'localhost', '::1', '127.0.0.1', 'not an address:80']) t.is(peerAddress(peer), peer);
});

/** A one-method service whose handler reports the peer grpc-js gives it. */
const SERVICE: grpc.ServiceDefinition = {
  Peer: {
    path: '/test.Peer/Peer',
    requestStream: false,
    responseStream: false,
    requestSerialize: (v: Buffer) => v,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (v: Buffer) => v,
    responseDeserialize: (b: Buffer) => b,
  },
};

for (const host of ['127.0.0.1', '::1']) {
  test(`the peer grpc-js reports for a client on ${host} reads as ${host}, the same for two connections`, async (t) => {
    const server = new grpc.Server();
    server.addService(SERVICE, {
      Peer: (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => done(null, Buffer.from(call.getPeer())),
    });
    const bound = await new Promise<number>((resolve, reject) => {
      server.bindAsync(host.includes(':') ? `[${host}]:0` : `${host}:0`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
    });
    const Client = grpc.makeGenericClientConstructor(SERVICE, 'Peer');
    const target = host.includes(':') ? `[${host}]:${bound}` : `${host}:${bound}`;
    const ask = async (): Promise<string> => {
      // A client of its own each time: a new connection, so a new source port.
      const client = new Client(target, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
        Peer(req: Buffer, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): void;
      };
      try {
        return await new Promise<string>((resolve, reject) => client.Peer(Buffer.alloc(0), (err, res) => (err ? reject(err) : resolve(String(res)))));
      } finally {
        client.close();
      }
    };
    try {
      const [a, b] = [await ask(), await ask()];
      t.not(a, b, 'two connections, two source ports');
      t.is(peerAddress(a), host, a);
      t.is(peerAddress(b), host, b);
    } finally {
      server.forceShutdown();
    }
  });
}
