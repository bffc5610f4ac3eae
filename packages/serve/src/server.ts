// JSON-RPC 2.0 over a pair of streams (stdin/stdout for `berth serve --stdio`). Calls run
// concurrently; `$/cancel` aborts one (its signal reaches the library call: an exec's whole
// process tree is killed); every error goes back as berth's whole error and its classification.
// When the input ends (the client exited or died) every sandbox is torn down and serve() returns:
// if this process is killed instead, the backend's guardian removes them.
import type { Readable, Writable } from 'node:stream';
import { BerthError, CancelledError, ConfigError, classifyFailure, serializeError } from '@berth/core';
import { LineWriter, readLines } from './lines.js';
import { ERROR_CODES, type RequestId, type RpcError, type RpcRequest } from './protocol.js';
import { Session, type CallContext, type SessionOptions } from './session.js';

export interface ServeOptions extends SessionOptions {
  input: Readable;
  output: Writable;
}

/** Serves until the input ends or `shutdown` is called; every sandbox is torn down before it resolves. */
export async function serve(options: ServeOptions): Promise<void> {
  const session = new Session(options);
  const writer = new LineWriter(options.output);
  const calls = new Map<RequestId, AbortController>();
  const running = new Set<Promise<void>>();
  let shutdown = false;

  const answer = async (request: RpcRequest): Promise<void> => {
    const controller = new AbortController();
    calls.set(request.id, controller);
    const call: CallContext = {
      id: request.id,
      signal: controller.signal,
      notify: (method, params) => void writer.write({ jsonrpc: '2.0', method, params }),
    };
    try {
      const result = await dispatch(session, request, call);
      if (request.method === 'shutdown') shutdown = true;
      await writer.write({ jsonrpc: '2.0', id: request.id, result });
    } catch (error) {
      await writer.write({ jsonrpc: '2.0', id: request.id, error: rpcError(error, request.method) });
    } finally {
      calls.delete(request.id);
    }
  };

  for await (const line of readLines(options.input)) {
    const message = parse(line);
    if ('error' in message) {
      await writer.write({ jsonrpc: '2.0', id: null, error: message.error });
      continue;
    }
    if (message.method === '$/cancel') {
      const id = (message.params as { id?: RequestId } | undefined)?.id;
      if (id !== undefined) calls.get(id)?.abort(new CancelledError({ operation: 'exec', message: `the client cancelled call ${id}` }));
      continue;
    }
    if (!('id' in message)) continue; // other notifications: none are defined; ignored, as JSON-RPC says
    const work = answer(message);
    running.add(work);
    void work.finally(() => running.delete(work));
    if (message.method === 'shutdown') {
      await work;
      if (shutdown) break;
    }
  }
  // The client is gone (or said shutdown): stop what runs, then remove what is left.
  for (const controller of calls.values()) controller.abort(new CancelledError({ operation: 'exec', message: 'the client went away' }));
  await Promise.allSettled(running);
  await session.close();
}

function dispatch(session: Session, request: RpcRequest, call: CallContext): Promise<unknown> {
  const p = request.params;
  switch (request.method) {
    case 'initialize':
      return session.initialize(p);
    case 'preflight':
      return session.preflight(p);
    case 'start':
      return session.start(p, call);
    case 'exec':
      return session.exec(p, call);
    case 'uploadFile':
    case 'uploadDir':
    case 'downloadFile':
    case 'downloadDir':
      return session.transfer(request.method, p, call);
    case 'setNetwork':
      return session.setNetwork(p);
    case 'teardown':
      return session.teardown(p);
    case 'shutdown':
      return session.close();
    default:
      return Promise.reject(new MethodNotFound(request.method));
  }
}

class MethodNotFound extends Error {}

function parse(line: string): RpcRequest | { method: string; params?: unknown } | { error: RpcError } {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return { error: { code: ERROR_CODES.parse, message: `not JSON: ${line.slice(0, 120)}` } };
  }
  const m = message as Partial<RpcRequest>;
  if (typeof m !== 'object' || m === null || m.jsonrpc !== '2.0' || typeof m.method !== 'string')
    return { error: { code: ERROR_CODES.invalidRequest, message: 'a JSON-RPC 2.0 message has jsonrpc: "2.0" and a method' } };
  return m as RpcRequest;
}

function rpcError(error: unknown, method: string): RpcError {
  if (error instanceof MethodNotFound)
    return {
      code: ERROR_CODES.methodNotFound,
      message: `no method ${method} (protocol methods: initialize, preflight, start, exec, uploadFile, uploadDir, downloadFile, downloadDir, setNetwork, teardown, shutdown)`,
    };
  const data = { error: serializeError(error), classification: classifyFailure(error) };
  const invalid = ConfigError.isInstance(error) && error.path?.startsWith('params');
  return {
    code: invalid ? ERROR_CODES.invalidParams : ERROR_CODES.berth,
    message: BerthError.isInstance(error) ? error.message : data.classification.message,
    data,
  };
}
