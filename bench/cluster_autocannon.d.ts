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
    /**
     * `context` is the connection's own object (kept across its requests): a
     * flow whose next request depends on the last answer (a rotated refresh
     * token) keeps its state there.
     */
    requests?: (RequestSpec & {
      setupRequest?: (req: RequestSpec, context: Record<string, unknown>) => RequestSpec;
      onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
    })[];
    amount?: number;
  }
}
