// Version comparison for the simulator's "client too old" answer: numeric, part by part, as
// Modal's versions (1.6.4, 0.67.18) and libmodal's stand-ins ("1.0.0", "424242") need.
import { describe, expect, it } from 'vitest';
import { checkClientVersion, compareVersions } from '../../src/modal-sim/client-version.js';
import type { CallContext } from '../../src/modal-sim/grpc-server.js';

const ctx = (version?: string) => ({ headers: version ? { 'x-modal-client-version': version } : {}, trailers: {} }) as unknown as CallContext;

describe('client versions', () => {
  it('compare numerically, part by part', () => {
    expect(compareVersions('1.10.0', '1.9.9')).toBe(1);
    expect(compareVersions('0.67.18', '1.0.0')).toBe(-1);
    expect(compareVersions('1.0', '1.0.0')).toBe(0);
    expect(compareVersions('424242', '1.6.4')).toBe(1);
    expect(compareVersions('1.6.4.dev3', '1.6.4')).toBe(0);
  });

  it('refuse an older client, or one that sends no version, with the text Modal gave; and set the warning trailer', () => {
    expect(() => checkClientVersion(ctx('0.67.18'), { minimum: '1.0.0' })).toThrow(
      'The client version (0.67.18) is too old. Please update (pip install --upgrade modal).',
    );
    expect(() => checkClientVersion(ctx(), { minimum: '1.0.0' })).toThrow('The client version (unknown) is too old');
    expect(() => checkClientVersion(ctx('1.6.4'), { minimum: '1.0.0' })).not.toThrow();
    const warned = ctx('1.6.4');
    checkClientVersion(warned, { warning: 'Upgrade: 100% soon' });
    expect(warned.trailers).toStrictEqual({ 'x-modal-warning': 'Upgrade%3A%20100%25%20soon' });
  });
});
