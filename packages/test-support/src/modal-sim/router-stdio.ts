// The router's V2 sandbox stdio: SandboxStdioReadV2 streams the entrypoint's stdout or stderr from
// any offset (each message says where its data starts), live and after the sandbox ended;
// SandboxStdinWriteV2 writes its stdin in offset order. Only V2 sandboxes have stdio here (the SDK
// reads a V1 sandbox's output with SandboxGetLogs, which the simulator does not serve).
import type { Msg } from './codec.js';
import { Code, RpcError, type CallContext } from './grpc-server.js';
import type { MethodTable } from './methods.js';
import type { RouterTokens } from './router-tokens.js';
import type { OutputBuffer } from './exec.js';
import type { SandboxStdio } from './sandbox-stdio.js';
import type { SandboxRecord, Sandboxes } from './sandboxes.js';
import { waitFor } from './util.js';

/** A SandboxStdioReadV2Response carries at most this much. */
const MAX_CHUNK = 1024 * 1024;

export function routerStdioMethods(table: MethodTable, deps: { sandboxes: Sandboxes; tokens: RouterTokens }): void {
  const stdioOf = (req: Msg, ctx: CallContext, ended: boolean): { record: SandboxRecord; stdio: SandboxStdio } => {
    const taskId = String(req.task_id ?? '');
    deps.tokens.check(ctx.headers.authorization, taskId);
    const record = deps.sandboxes.byTask(taskId, { ended });
    if (!record.stdio) throw new RpcError(Code.NOT_FOUND, `Task ${taskId} is a V1 sandbox's: its output is read with SandboxGetLogs`);
    record.lastActivity = Date.now();
    return { record, stdio: record.stdio };
  };

  table.stream('SandboxStdioReadV2', async (req, ctx, send) => {
    const { record, stdio } = stdioOf(req, ctx, true);
    const buffer = req.file_descriptor === 'SANDBOX_STDIO_FILE_DESCRIPTOR_STDERR' ? stdio.stderr : stdio.stdout;
    let offset = Number(req.offset ?? 0);
    for (;;) {
      while (offset < buffer.length) {
        const data = readUpTo(buffer, offset, MAX_CHUNK);
        await send({ data, starting_offset: offset });
        offset += data.length;
      }
      if (buffer.ended) return;
      await waitFor(
        () => {
          if (record.vanished) throw new RpcError(Code.NOT_FOUND, 'The Sandbox is unavailable: it was removed');
          return offset < buffer.length || buffer.ended ? true : undefined;
        },
        stdio.changes,
        Infinity,
        ctx.signal,
      );
    }
  });

  table.unary('SandboxStdinWriteV2', async (req, ctx) => {
    const { stdio } = stdioOf(req, ctx, false);
    await stdio.write(Number(req.offset ?? 0), (req.data ?? new Uint8Array()) as Uint8Array, Boolean(req.eof));
    return {};
  });
}

/** As much as there is from `offset`, up to `max` bytes, across the chunks output came in. */
function readUpTo(buffer: OutputBuffer, offset: number, max: number): Buffer {
  const parts: Buffer[] = [];
  let n = 0;
  while (offset + n < buffer.length && n < max) {
    const part = buffer.read(offset + n, max - n);
    parts.push(part);
    n += part.length;
  }
  return Buffer.concat(parts);
}
