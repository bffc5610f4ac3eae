import type { DownloadDirOptions, ExecOptions, TransferOptions } from '../contract.js';
import { optionNames } from './option-names.js';

// The options of an Environment's calls, by name, for refusing a misspelt one (the compiler keeps
// each list equal to its type). A TypeScript caller cannot pass another name in an object literal;
// a JavaScript one can, and `{ timeout: 500 }` would otherwise run with no timeout at all.

export const EXEC_OPTIONS = optionNames<ExecOptions>()('cwd', 'user', 'env', 'timeoutMs', 'stdin', 'maxOutputBytes', 'onStdout', 'onStderr', 'signal', 'tty');
export const TRANSFER_OPTIONS = optionNames<TransferOptions>()('signal');
export const DOWNLOAD_DIR_OPTIONS = optionNames<DownloadDirOptions>()('signal', 'outsideLinks');
