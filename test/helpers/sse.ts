/**
 * A Server-Sent Events reader over fetch (WHATWG HTML, "Server-sent events",
 * the event stream's parsing): blocks separated by a blank line, each with
 * its `id:`, `data:` (lines joined by "\n"), `event:` and comment lines.
 */

/** One block of an event stream. */
export interface SseBlock {
  id?: string;
  event?: string;
  data?: string;
  /** Comment lines (`: text`), without the colon and the space after it. */
  comments: string[];
}

export interface SseStream {
  /** HTTP status and content type of the response. */
  status: number;
  contentType: string;
  /** The next block; rejects after `timeoutMs`, or when the stream ends first. */
  next(timeoutMs: number): Promise<SseBlock>;
  close(): void;
}

function parse(text: string): SseBlock {
  const b: SseBlock = { comments: [] };
  for (const line of text.split('\n')) {
    if (line.startsWith(':')) {
      b.comments.push(line.slice(1).replace(/^ /, ''));
      continue;
    }
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
    if (field === 'id') b.id = value;
    else if (field === 'event') b.event = value;
    else if (field === 'data') b.data = b.data === undefined ? value : `${b.data}\n${value}`;
  }
  return b;
}

/** Opens `url` as an event stream; throws with the body when the answer is not 200. */
export async function readSse(url: string, headers: Record<string, string>): Promise<SseStream> {
  const ac = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: ac.signal });
  if (res.status !== 200) {
    const body = await res.text();
    throw new Error(`event stream answered ${res.status}: ${body}`);
  }
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  return {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    async next(timeoutMs) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const end = buffer.indexOf('\n\n');
        if (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          return parse(block);
        }
        let timer: ReturnType<typeof setTimeout> | undefined;
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('no event stream block in time')), Math.max(0, until - Date.now()));
        });
        const r = await Promise.race([reader.read(), timeout]).finally(() => clearTimeout(timer));
        if (r.done) throw new Error('the event stream ended');
        buffer += r.value;
      }
    },
    close() {
      ac.abort();
      reader.cancel().catch(() => {});
    },
  };
}
