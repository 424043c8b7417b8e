// The part of autocannon's options the cluster benchmark uses beyond bench/transport_autocannon.d.ts:
// a list of requests each connection sends in turn.
declare module 'autocannon' {
  interface Options {
    requests?: { method?: 'GET' | 'POST'; path?: string; body?: string; headers?: Record<string, string> }[];
  }
}
