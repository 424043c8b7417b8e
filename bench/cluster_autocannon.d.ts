// The part of autocannon's options the cluster and peers benchmarks use beyond bench/transport_autocannon.d.ts:
// a list of requests each connection sends in turn (each may be rewritten before it is sent), and a number of
// requests to stop at instead of a duration.
declare module 'autocannon' {
  interface RequestSpec {
    method?: 'GET' | 'POST';
    path?: string;
    body?: string;
    headers?: Record<string, string>;
  }
  interface Options {
    requests?: (RequestSpec & { setupRequest?: (req: RequestSpec) => RequestSpec })[];
    amount?: number;
  }
}
