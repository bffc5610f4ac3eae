import { describe, expect, it } from 'vitest';
import { ConfigError } from '@berth/core';
import { readCompose } from '../src/compose.js';

const vars = { contextDir: '/tasks/t/environment', mainImageName: 'hb__t' };
const read = (yaml: string, host: Record<string, string> = {}, taskEnv: Record<string, string> = {}) =>
  readCompose('/tasks/t/environment/docker-compose.yaml', yaml, vars, host, taskEnv);

describe("harbor's docker-compose.yaml as spec.services", () => {
  it("maps compose's fields: build context under environment/, depends_on conditions, healthcheck test and durations, expose and ports, aliases, limits; main's environment and depends_on", () => {
    const out = read(`
services:
  main:
    image: \${MAIN_IMAGE_NAME}
    depends_on: { setup: { condition: service_completed_successfully } }
    environment: [DB=db]
  db:
    build: { context: ./db, dockerfile: Dockerfile.db }
    expose: ["5432"]
    ports: ["15432:5432/tcp"]
    healthcheck: { test: ["CMD-SHELL", "pg_isready -h 127.0.0.1"], interval: 1m30s, timeout: 500ms, retries: 5, start_period: 2s }
    deploy: { resources: { limits: { cpus: "0.5", memory: 512m } } }
  setup:
    image: busybox
    command: sh -c 'echo "a b" && exit 0'
    depends_on: [db]
    networks: { default: { aliases: [migrator] } }
`);
    expect(out.mainEnv).toEqual({ DB: 'db' });
    expect(out.mainDependsOn).toEqual({ setup: 'completed' });
    expect(out.services.db).toEqual({
      image: { build: { context: '/tasks/t/environment/db', dockerfile: 'Dockerfile.db' } },
      ports: [5432],
      healthcheck: { command: ['sh', '-c', 'pg_isready -h 127.0.0.1'], intervalMs: 90_000, timeoutMs: 500, startPeriodMs: 2000, retries: 5 },
      resources: { cpus: 0.5, memoryMb: 512 },
    });
    expect(out.services.setup).toEqual({
      image: 'busybox',
      command: ['sh', '-c', 'echo "a b" && exit 0'],
      dependsOn: { db: 'started' },
      aliases: ['migrator'],
    });
  });

  it("maps named volumes (top-level volumes:) to { type: 'volume' } mounts of main and the services, read-only where :ro", () => {
    const out = read(`
services:
  main:
    volumes: ["data:/shared"]
  db:
    image: busybox
    volumes:
      - data:/var/lib/db:ro
      - { type: volume, source: cache, target: /cache }
volumes:
  data: {}
  cache:
`);
    expect(out.mainMounts).toEqual([{ type: 'volume', name: 'data', target: '/shared', readOnly: false }]);
    expect(out.services.db?.mounts).toEqual([
      { type: 'volume', name: 'data', target: '/var/lib/db', readOnly: true },
      { type: 'volume', name: 'cache', target: '/cache', readOnly: false },
    ]);
  });

  it("interpolates as compose does, from the host's environment under the task's [environment.env] and harbor's variables", () => {
    const out = read(
      `
services:
  api:
    image: "reg.example/api:\${TAG:-1.0}"
    command: ["serve", "--dir=\${CONTEXT_DIR}", "--cost=$$5", "--who=\${WHO-nobody}"]
    environment:
      - KEY
      - MODE=\${MODE:?set MODE}
`,
      { KEY: 'from-host', MODE: 'host-mode' },
      { MODE: 'task-mode' },
    );
    expect(out.services.api).toMatchObject({
      image: 'reg.example/api:1.0',
      command: ['serve', '--dir=/tasks/t/environment', '--cost=$5', '--who=nobody'],
      env: { KEY: 'from-host', MODE: 'task-mode' },
    });
    expect(() => read('services:\n  api:\n    image: "x:${NEED:?the tag}"\n')).toThrow(/needs the variable NEED: the tag/);
  });

  it.each([
    ['services:\n  db:\n    image: x\n    volumes: ["./data:/data"]\n', 'services.db.volumes[0]'],
    ['services:\n  db:\n    image: x\n    volumes: ["other:/data"]\n', 'services.db.volumes[0]'],
    ['services:\n  db:\n    image: x\n    privileged: true\n', 'services.db.privileged'],
    ['services:\n  main:\n    network_mode: none\n', 'services.main.network_mode'],
    ['services:\n  main:\n    image: other\n', 'services.main.image'],
    ['services:\n  db:\n    image: x\n    networks: [backend]\n', 'services.db.networks'],
    ['services:\n  db_1:\n    image: x\n', 'services.db_1'],
    ['services:\n  db:\n    image: x\nvolumes:\n  data:\n    driver: local\n', 'volumes.data.driver'],
    ['services:\n  db:\n    image: x\n    healthcheck: { test: ["CMD", "true"], interval: soon }\n', 'services.db.healthcheck.interval'],
  ])('refuses %j by name, before any I/O', (yaml, path) => {
    let error: unknown;
    try {
      read(yaml);
    } catch (e) {
      error = e;
    }
    expect(ConfigError.isInstance(error), String(error)).toBe(true);
    expect((error as ConfigError).path).toBe(path);
    expect((error as Error).message).toContain('/tasks/t/environment/docker-compose.yaml');
  });
});
