// A minimal JSON-RPC client of `serve()`, as harbor's plugin is one: calls by id, notifications
// collected in order, `$/cancel`. Over in-process streams, or over a child's stdin/stdout.
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { createDockerBackend } from '@berth/backend-docker';
import { serve } from '@berth/serve';

export interface Answer {
  id: number;
  result?: Record<string, unknown>;
  error?: {
    code: number;
    message: string;
    data?: { error: { type: string; details?: { path?: string } }; classification: { category: string; retryable: boolean } };
  };
}

export class RpcClient {
  readonly notifications: Array<{ method: string; params: Record<string, unknown> }> = [];
  readonly #waiting = new Map<number, (answer: Answer) => void>();
  readonly #input: Writable;
  #next = 0;
  #buffer = '';

  constructor(input: Writable, output: Readable) {
    this.#input = input;
    output.setEncoding('utf8');
    output.on('data', (chunk: string) => {
      this.#buffer += chunk;
      for (let i = this.#buffer.indexOf('\n'); i >= 0; i = this.#buffer.indexOf('\n')) {
        const message = JSON.parse(this.#buffer.slice(0, i)) as Answer & { method?: string; params?: Record<string, unknown> };
        this.#buffer = this.#buffer.slice(i + 1);
        if (message.method) this.notifications.push({ method: message.method, params: message.params ?? {} });
        else this.#waiting.get(message.id)?.(message);
      }
    });
  }

  /** The id the next call will have (to cancel it). */
  get nextId(): number {
    return this.#next + 1;
  }

  call(method: string, params?: unknown): Promise<Answer> {
    const id = ++this.#next;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      this.#input.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }

  /** A call's result, or throws with its error. */
  async ok(method: string, params?: unknown): Promise<Record<string, unknown>> {
    const answer = await this.call(method, params);
    if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
    return answer.result ?? {};
  }

  send(line: string): void {
    this.#input.write(`${line}\n`);
  }

  cancel(id: number): void {
    this.send(JSON.stringify({ jsonrpc: '2.0', method: '$/cancel', params: { id } }));
  }

  end(): void {
    this.#input.end();
  }
}

/** serve() in this process with the Docker backend, over a pair of in-process streams. */
export function inProcess(): { client: RpcClient; served: Promise<void> } {
  const input = new PassThrough();
  const output = new PassThrough();
  const served = serve({ input, output, version: 'test', createBackend: (p) => Promise.resolve(createDockerBackend((p.options ?? {}) as object)) });
  return { client: new RpcClient(input, output), served };
}
