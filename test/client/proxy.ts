/**
 * Test helper: TCP forwarders in front of the test server's HTTP and gRPC
 * ports that count connections and keep the bytes clients send, so a test
 * can tell whether a client sent anything at all (and, over plain HTTP/1.1,
 * which headers).
 */
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

export interface CountingProxy {
  readonly httpUrl: string;
  readonly grpcAddress: string;
  /** Connections accepted so far, both ports. */
  connections(): number;
  /** What clients sent to the HTTP port, as text. */
  httpRequests(): string;
  close(): Promise<void>;
}

function forwarder(targetPort: number, onData: (chunk: Buffer) => void, sockets: Set<Socket>, count: () => void): Promise<Server> {
  const server = createServer((client) => {
    count();
    sockets.add(client);
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(upstream);
    client.on('data', (c: Buffer) => onData(c));
    client.pipe(upstream).pipe(client);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

export async function countingProxy(httpPort: string | number, grpcPort: string | number): Promise<CountingProxy> {
  let connections = 0;
  const http: Buffer[] = [];
  const sockets = new Set<Socket>();
  const a = await forwarder(Number(httpPort), (c) => http.push(c), sockets, () => connections++);
  const b = await forwarder(Number(grpcPort), () => undefined, sockets, () => connections++);
  return {
    httpUrl: `http://127.0.0.1:${(a.address() as AddressInfo).port}`,
    grpcAddress: `127.0.0.1:${(b.address() as AddressInfo).port}`,
    connections: () => connections,
    httpRequests: () => Buffer.concat(http).toString('latin1'),
    close: async () => {
      for (const s of sockets) s.destroy();
      await Promise.all([a, b].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}

/** A loopback port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', () => resolve()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}
