// How an image mount is filled where the engine cannot mount another image's filesystem itself
// (Kubernetes' init containers, Docker's helper containers): one script, so both keep the same
// semantics (a directory of the image, or its whole filesystem but the kernel's, copied with its
// modes, owners and links, then mounted read-only at the target).

/** Where the copying container sees the directory it fills. */
export const IMAGE_MOUNT_STAGING = '/berth-mount';

/** The copy script's exit status for a subpath the image does not have as a directory. */
export const IMAGE_MOUNT_NO_DIRECTORY = 2;

/**
 * Copies an image's directory (or, for '/', its whole filesystem but /proc, /sys, /dev) into the
 * staging directory. A shell script because it runs in the mounted image: that image needs sh and cp.
 */
const COPY_SCRIPT = `set -e; src="$1"
if [ ! -d "$src" ]; then echo "berth: $src is not a directory in this image" >&2; exit ${IMAGE_MOUNT_NO_DIRECTORY}; fi
if [ "$src" = / ]; then
  for e in /* /.[!.]*; do
    [ -e "$e" ] || [ -L "$e" ] || continue
    case "$e" in /proc|/sys|/dev|${IMAGE_MOUNT_STAGING}) continue ;; esac
    cp -a "$e" ${IMAGE_MOUNT_STAGING}/
  done
else cp -a "$src"/. ${IMAGE_MOUNT_STAGING}/; fi`;

/** The copying container's command for a mount's subpath (none: the whole filesystem). */
export function imageMountCopyCommand(subpath: string | undefined): string[] {
  return ['/bin/sh', '-c', COPY_SCRIPT, 'berth-mount', `/${(subpath ?? '').replace(/^\/+|\/+$/g, '')}`];
}
