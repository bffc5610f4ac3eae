// An image with a shell and nothing that can switch users (no setpriv, chroot, nsenter, su...):
// this machine's dash as /bin/sh (busybox's own shell would not do: Debian's busybox-static runs
// any of its applets by name, nsenter included, links or not) with its libraries, and
// busybox-static for the few commands berth itself needs. Imported into the local Docker engine
// (the Modal simulator runs local images) and into the test cluster's containerd, as
// test/kube/setup.sh does for the basic image. Nothing is pulled.
import { execFile } from 'node:child_process';
import { chmod, copyFile, mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const NO_USER_TOOLS_IMAGE = 'berth-test/no-user-tools:1';
/** sleep for the keep-alive, cat for the tree killer, id for the tests. */
const APPLETS = ['sleep', 'cat', 'id', 'true'];

/** Imports the image into the local engine unless it is there already. */
export async function ensureNoUserToolsImage(): Promise<string> {
  const present = await run('docker', ['image', 'inspect', NO_USER_TOOLS_IMAGE]).then(
    () => true,
    () => false,
  );
  if (present) return NO_USER_TOOLS_IMAGE;
  const root = await mkdtemp(join(tmpdir(), 'berth-no-user-tools-'));
  try {
    const fs = join(root, 'fs');
    for (const dir of ['bin', 'etc', 'tmp', 'proc', 'sys', 'dev', 'root']) await mkdir(join(fs, dir), { recursive: true });
    await chmod(join(fs, 'tmp'), 0o1777);
    await copyFile('/bin/busybox', join(fs, 'bin', 'busybox'));
    await chmod(join(fs, 'bin', 'busybox'), 0o755);
    for (const applet of APPLETS) await symlink('busybox', join(fs, 'bin', applet));
    await copyFile('/bin/dash', join(fs, 'bin', 'sh'));
    await chmod(join(fs, 'bin', 'sh'), 0o755);
    // dash's shared libraries, where its loader looks for them.
    const { stdout } = await run('ldd', ['/bin/dash']);
    for (const lib of stdout.matchAll(/(\/\S+\.so[.\d]*)/g)) {
      const path = lib[1]!;
      await mkdir(join(fs, dirname(path)), { recursive: true });
      await copyFile(await realpath(path), join(fs, path));
    }
    await writeFile(join(fs, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\napp:x:1500:1500:app:/tmp:/bin/sh\n');
    await writeFile(join(fs, 'etc', 'group'), 'root:x:0:\napp:x:1500:\n');
    const tar = join(root, 'rootfs.tar');
    await run('tar', ['-C', fs, '-cf', tar, '.']);
    await run('docker', ['import', '-c', 'ENV PATH=/bin', '-c', 'CMD ["/bin/sh"]', tar, NO_USER_TOOLS_IMAGE]);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
  return NO_USER_TOOLS_IMAGE;
}

/** The image in the test cluster's containerd too (the pod then needs no pull). */
export async function importIntoNode(ctr: (...args: string[]) => Promise<unknown>): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'berth-no-user-tools-save-'));
  try {
    const tar = join(root, 'image.tar');
    await run('docker', ['save', NO_USER_TOOLS_IMAGE, '-o', tar]);
    await ctr('images', 'import', tar);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
