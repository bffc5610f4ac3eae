// The guardian's policy without an engine: when it is wanted (the option, else BERTH_GUARDIAN), and
// its selection (sweep's ownedBy: one process's resources, by pid and host, alive or not).
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { LABEL_OWNER_HOST, LABEL_OWNER_PID, defineBackend, guardianEnabled, type ManagedResource } from '@berth/core/backend-kit';

describe('guardian policy', () => {
  it('on by default; BERTH_GUARDIAN=0/false/off/no turns it off; the option wins over the variable', () => {
    expect(guardianEnabled(undefined, {})).toBe(true);
    for (const off of ['0', 'false', 'OFF', ' no ']) expect(guardianEnabled(undefined, { BERTH_GUARDIAN: off })).toBe(false);
    expect(guardianEnabled(undefined, { BERTH_GUARDIAN: '1' })).toBe(true);
    expect(guardianEnabled(true, { BERTH_GUARDIAN: '0' })).toBe(true);
    expect(guardianEnabled(false, {})).toBe(false);
  });

  it("sweep({ ownedBy }) removes that process's resources, on that host only, and nobody else's", async () => {
    const removed: string[] = [];
    const resource = (name: string, pid: number, host = hostname()): ManagedResource => ({
      name,
      labels: { [LABEL_OWNER_PID]: String(pid), [LABEL_OWNER_HOST]: host },
      remove: async () => void removed.push(name),
      failure: (e) => (e as Error).message,
    });
    const backend = defineBackend({
      name: 'fake',
      capabilities: {} as never,
      options: {},
      target: () => 'nowhere',
      transport: () => {
        throw new Error('no sandboxes here');
      },
      checkApi: async () => [],
      listManaged: async () => [resource('dead-1', 4242), resource('dead-2', 4242), resource('other-host', 4242, 'elsewhere'), resource('live', process.pid)],
    });
    const report = await backend.sweep({ ownedBy: { pid: 4242, host: hostname() } });
    expect(report.removed).toEqual(['dead-1', 'dead-2']);
    expect(removed).toEqual(['dead-1', 'dead-2']);
  });
});
