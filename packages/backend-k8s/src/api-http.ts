import http from 'node:http';
import https from 'node:https';
import { Observable, ResponseContext, type HttpLibrary, type RequestContext } from '@kubernetes/client-node';

/**
 * client-node's HTTP layer on node:https itself, not node-fetch. node-fetch 2 checks for a
 * "premature close" on the socket a chunked response came on; on a kept-alive socket already lent
 * to the next request that check fires falsely (seen as `FetchError: Premature close` when 24
 * starts shared 12 connections). Here a response is its own, whatever its socket does next.
 */
export class NodeHttpLibrary implements HttpLibrary {
  send(request: RequestContext): Observable<ResponseContext> {
    return new Observable(sendRequest(request));
  }
}

function sendRequest(request: RequestContext): Promise<ResponseContext> {
  const url = new URL(request.getUrl());
  const body = request.getBody();
  if (body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body)) {
    return Promise.reject(new Error(`unsupported request body (${Object.prototype.toString.call(body)}): berth sends JSON only`));
  }
  const headers: Record<string, string> = { ...request.getHeaders() };
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  const signal = request.getSignal();
  const agent = request.getAgent();
  const send = url.protocol === 'http:' ? http.request : https.request;
  return new Promise((resolve, reject) => {
    const req = send(url, { method: request.getHttpMethod().toString(), headers, ...(agent ? { agent } : {}), ...(signal ? { signal } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        if (!res.complete)
          return reject(Object.assign(new Error('the API server closed the connection before the answer was complete'), { code: 'ECONNRESET' }));
        const buffer = Buffer.concat(chunks);
        const out: Record<string, string> = {};
        for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
        resolve(new ResponseContext(res.statusCode ?? 0, out, { text: async () => buffer.toString('utf8'), binary: async () => buffer }));
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
