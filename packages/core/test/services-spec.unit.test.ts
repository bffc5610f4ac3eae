import { describe, expect, it } from 'vitest';
import { inspect } from 'node:util';
import { ConfigError, parseEnvironmentSpec } from '../src/index.js';

const spec = (services: unknown) => ({ image: 'busybox', services });
const refused = (input: unknown): ConfigError => {
  try {
    parseEnvironmentSpec(input);
  } catch (error) {
    if (ConfigError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
};

describe('spec.services', () => {
  it("fills compose's defaults: healthcheck timings, no dependencies, the image as { ref }", () => {
    const parsed = parseEnvironmentSpec(
      spec({ db: { image: 'postgres:16', healthcheck: { command: ['pg_isready'] } }, web: { image: 'nginx', dependsOn: { db: 'healthy' } } }),
    );
    expect(parsed.services.db).toEqual({
      image: { ref: 'postgres:16' },
      env: {},
      ports: [],
      aliases: [],
      dependsOn: {},
      resources: {},
      mounts: [],
      healthcheck: { command: ['pg_isready'], intervalMs: 30_000, timeoutMs: 30_000, retries: 3, startPeriodMs: 0, startIntervalMs: 5_000 },
    });
    expect(parsed.services.web!.dependsOn).toEqual({ db: 'healthy' });
  });

  it.each([
    [{ db: { image: 'x', dependsOn: { cache: 'started' } } }, 'spec.services.db.dependsOn.cache', /there is no service "cache"/],
    [
      { a: { image: 'x', dependsOn: { b: 'started' } }, b: { image: 'x', dependsOn: { a: 'started' } } },
      'spec.services.a.dependsOn',
      /in a circle \(a -> b -> a\)/,
    ],
    [{ db: { image: 'x' }, web: { image: 'x', dependsOn: { db: 'healthy' } } }, 'spec.services.web.dependsOn.db', /db has no healthcheck/],
    [{ db: { image: 'x' }, web: { image: 'x', aliases: ['db'] } }, 'spec.services.web.aliases', /"db" is also service db's/],
    [{ main: { image: 'x' } }, 'spec.services.main', /"main" is the sandbox itself/],
    [{ Web_1: { image: 'x' } }, 'spec.services.Web_1', /a service name is a DNS label/],
    [{ db: { image: 'x', ports: [70000] } }, 'spec.services.db.ports.0', /70000|65535/],
  ])('%j is refused by path, saying what is wrong', (services, path, said) => {
    const error = refused(spec(services));
    expect(error.path).toBe(path);
    expect(error.message).toMatch(said);
  });

  it("keeps a service's registry password out of anything that prints", () => {
    const parsed = parseEnvironmentSpec(spec({ db: { image: { ref: 'r.example/db:1', auth: { username: 'bot', password: 'svc-s3cret' } } } }));
    expect(inspect(parsed, { depth: 10 })).not.toContain('svc-s3cret');
    expect(JSON.stringify(parsed)).not.toContain('svc-s3cret');
    expect((parsed.services.db!.image as { auth: { password: string } }).auth.password).toBe('svc-s3cret');
  });
});
