// A certificate authority made at test time (openssl), and a server certificate it signed for
// localhost and 127.0.0.1: the simulator serves TLS like Modal, and the backend is given the CA.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCa {
  /** PEM of the CA certificate: what clients trust. */
  ca: string;
  /** PEM key and certificate of the server. */
  key: string;
  cert: string;
}

let made: TestCa | undefined;

export function testCa(): TestCa {
  if (made) return made;
  const dir = mkdtempSync(join(tmpdir(), 'berth-test-ca-'));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    ssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-days',
      '2',
      '-subj',
      '/CN=berth test CA',
    );
    ssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
    writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
    ssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'san.ext');
    made = {
      ca: readFileSync(join(dir, 'ca.pem'), 'utf8'),
      key: readFileSync(join(dir, 'server.key'), 'utf8'),
      cert: readFileSync(join(dir, 'server.pem'), 'utf8'),
    };
    return made;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
