// SandboxList and SandboxListV2: newest first, pages of 100 by before_timestamp, filtered by app,
// tags and whether finished ones are wanted. Each entry carries its task (task_info with the
// result once ended) and its handle metadata: the SDK hydrates listed sandboxes from them.
import type { Msg } from './codec.js';
import type { SandboxVersion } from './sandbox-ids.js';
import { DEFAULT_TIMEOUT_SECS, type SandboxRecord } from './sandboxes.js';

export function listSandboxes(records: SandboxRecord[], req: Msg, versions: SandboxVersion[]): Msg {
  const appId = String(req.app_id ?? '');
  const before = Number(req.before_timestamp ?? 0);
  const wanted = (req.tags ?? []) as Msg[];
  const hits = records
    .filter((r) => versions.includes(r.version) && (!appId || r.appId === appId) && (req.include_finished || !r.ending))
    .filter((r) => !before || r.createdAt < before)
    .filter((r) => wanted.every((w) => r.tags.some((t) => t.tag_name === w.tag_name && t.tag_value === (w.tag_value ?? ''))))
    .sort((a, b) => b.createdAt - a.createdAt)
    .slice(0, 100);
  return { sandboxes: hits.map(info) };
}

function info(r: SandboxRecord): Msg {
  const result = r.state === 'ended' ? r.result : undefined;
  return {
    id: r.id,
    created_at: r.createdAt,
    app_id: r.appId,
    tags: r.tags,
    image_id: r.imageId,
    timeout_secs: Number(r.definition.timeout_secs ?? 0) || DEFAULT_TIMEOUT_SECS,
    ...(r.name ? { name: r.name } : {}),
    ...(r.definition.idle_timeout_secs !== undefined ? { idle_timeout_secs: r.definition.idle_timeout_secs } : {}),
    task_info: {
      ...(r.taskId ? { id: r.taskId } : {}),
      sandbox_id: r.id,
      ...(r.startedAt ? { started_at: r.startedAt } : {}),
      ...(r.finishedAt ? { finished_at: r.finishedAt } : {}),
      ...(result ? { result } : {}),
    },
    metadata: { app_id: r.appId, ...(result ? { result } : {}) },
  };
}
