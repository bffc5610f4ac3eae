// The TaskExecStartRequest berth sends for one process. The exec's environment can go two ways,
// both in Modal's protocol: `env` (12, a map), or `secret_sources` (13) holding one inline
// SecretSource{env: StringMap}. berth sends what Modal's Python SDK 1.6.4 sends for
// `exec(env=...)`: secret_sources, never env (modal/secret.py). The path the SDK takes is the one
// Modal's router serves every day; a field only older clients set may be served less carefully, or
// retired first. Both forms are checked byte for byte against encodings not made by berth's codec
// (test/exec-start.unit.test.ts: the SDK's own serialization, and protoc's).
import type { MessageValue } from './schema.js';

/** Which field carries an exec's environment. */
export type ExecEnvField = 'env' | 'secret_sources';

/** What berth sends: the SDK's field (the module comment says why). */
export const EXEC_ENV_AS: ExecEnvField = 'secret_sources';

export interface ExecStart {
  execId: string;
  argv: readonly string[];
  env: Record<string, string>;
  workdir?: string;
  timeoutSecs?: number;
  /** A pseudo-terminal of this size: Modal's pty_info. Its output then all comes on stdout. */
  pty?: { rows: number; cols: number; term: string };
}

/** The environment in the field asked for; an empty one is not sent at all in secret_sources. */
function envFields(env: Record<string, string>, as: ExecEnvField): Pick<MessageValue<'TaskExecStartRequest'>, 'env' | 'secret_sources'> {
  if (as === 'env') return { env };
  return Object.keys(env).length ? { secret_sources: [{ env: { contents: env } }] } : {};
}

export function execStartRequest(taskId: string, exec: ExecStart, envAs: ExecEnvField = EXEC_ENV_AS): MessageValue<'TaskExecStartRequest'> {
  return {
    task_id: taskId,
    exec_id: exec.execId,
    command_args: [...exec.argv],
    stdout_config: 'TASK_EXEC_STDOUT_CONFIG_PIPE',
    stderr_config: 'TASK_EXEC_STDERR_CONFIG_PIPE',
    ...envFields(exec.env, envAs),
    ...(exec.workdir ? { workdir: exec.workdir } : {}),
    ...(exec.timeoutSecs ? { timeout_secs: exec.timeoutSecs } : {}),
    // As Modal's SDKs ask for a pty (Go and JS: defaultSandboxPTYInfo; Python: get_pty_info).
    ...(exec.pty
      ? {
          pty_info: {
            enabled: true,
            winsz_rows: exec.pty.rows,
            winsz_cols: exec.pty.cols,
            env_term: exec.pty.term,
            env_colorterm: 'truecolor',
            pty_type: 'PTY_TYPE_SHELL',
            no_terminate_on_idle_stdin: true,
          },
        }
      : {}),
  };
}
