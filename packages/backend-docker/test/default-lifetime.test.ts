// Docker has no lifetime of its own for a container, so it has no defaultLifetimeMs (Kubernetes and
// Modal do): not in its options type, and refused when given anyway, rather than silently ignored.
// No engine needed: the factory refuses before any I/O.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';

describe('defaultLifetimeMs on Docker', () => {
  it('a number is refused: a ConfigError on options.defaultLifetimeMs saying what Docker has instead', () => {
    let error: unknown;
    try {
      createDockerBackend({ defaultLifetimeMs: 3_600_000 } as never);
    } catch (e) {
      error = e;
    }
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect((error as ConfigError).path).toBe('options.defaultLifetimeMs');
    expect((error as Error).message).toMatch(/^createDockerBackend has no defaultLifetimeMs: Docker has no lifetime of its own for a container/);
    expect((error as Error).message).toMatch(/guardian.*berth sweep.*timeouts\.lifetimeMs/);
  });

  it('false (no default lifetime) is what Docker does: accepted, so options shared with Kubernetes pass', () => {
    expect(() => createDockerBackend({ defaultLifetimeMs: false } as never)).not.toThrow();
  });
});
