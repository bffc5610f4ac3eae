// Each backend's factory refuses an option it does not have, naming what was meant, before any
// I/O: an option silently ignored changes what runs (`socket` for socketPath, a kubeconfig given
// as the CLI flag's path was ignored until "pass options.kubeconfig").
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@berth/core';
import { createDockerBackend } from '@berth/backend-docker';
import { createK8sBackend } from '@berth/backend-k8s';
import { createModalBackend } from '@berth/backend-modal';

function refusal(run: () => unknown): ConfigError {
  let error: unknown;
  try {
    run();
  } catch (e) {
    error = e;
  }
  expect(ConfigError.isInstance(error), String(error)).toBe(true);
  return error as ConfigError;
}

describe("backend factories' option names", () => {
  it('Docker: socket is refused, socketPath meant', () => {
    const error = refusal(() => createDockerBackend({ socket: '/var/run/docker.sock' } as never));
    expect(error.path).toBe('options.socket');
    expect(error.message).toMatch(/^createDockerBackend has no option "socket": did you mean socketPath\?/);
    expect(error.backend).toBe('docker');
    expect(() => createDockerBackend({ socketPath: '/var/run/docker.sock', pullPolicy: 'never', guardian: false })).not.toThrow();
  });

  it('Kubernetes: a misspelt option is refused; a kubeconfig path is taken as the file, as the CLI flag', () => {
    expect(refusal(() => createK8sBackend({ namespaces: 'x' } as never)).message).toMatch(/did you mean namespace\?/);
    expect(refusal(() => createK8sBackend({ kubeconfig: { path: '/x' } } as never)).path).toBe('options.kubeconfig.path');
    expect(refusal(() => createK8sBackend({ kubeconfig: 42 } as never)).message).toMatch(/give a file's path, \{ file, context \}/);
    // A path string is a file: the target (no I/O but reading the file) says its server.
    const backend = createK8sBackend({ kubeconfig: '/var/lib/berth-kube/berth.kubeconfig' });
    expect(backend.target).toMatch(/127\.0\.0\.1:6443/);
    const missing = createK8sBackend({ kubeconfig: '/nonexistent/kubeconfig' });
    expect(() => missing.target).toThrow(/cannot load the kubeconfig.*\/nonexistent\/kubeconfig/);
  });

  it('Modal: a misspelt option is refused', () => {
    const error = refusal(() => createModalBackend({ tokenID: 'ak-x', tokenSecret: 'as-y' } as never));
    expect(error.message).toMatch(/did you mean tokenId\?/);
    // A secret passed under a wrong name is named by its key, never its value.
    expect(error.message).not.toContain('ak-x');
  });
});
