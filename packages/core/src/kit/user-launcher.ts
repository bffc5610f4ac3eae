import type { ExecResult } from '../contract.js';
import { ConfigError, type Operation } from '../errors.js';

/**
 * The tools the launcher tries, in order, and the package each comes from: what the error names
 * when an image has none that works. Each is given numeric ids, so a uid:gid absent from
 * /etc/passwd works wherever the tool allows it (su alone needs a passwd entry).
 */
export const USER_SWITCH_TOOLS = [
  'setpriv (util-linux)',
  'chroot --userspec (coreutils)',
  'nsenter -S/-G (util-linux, busybox)',
  'su-exec',
  'gosu',
  'chpst (busybox, runit)',
  'su (util-linux, shadow, busybox; users in /etc/passwd)',
] as const;

/**
 * Runs a command as another user, for engines whose exec has no user (Kubernetes' exec
 * subresource, Modal's): `sh -c LAUNCHER berth-user <user> <set HOME: 1|0> <argv...>`.
 *
 * The user is resolved as Docker's runtime (runc) resolves it, so every backend agrees: a name or
 * uid from /etc/passwd (a uid that is not there is taken as is, with group 0); an explicit group
 * by name or gid from /etc/group (a gid that is not there as is); without one, the user's
 * supplementary groups from /etc/group; HOME is the user's home ('/' if none) unless the caller
 * set HOME. An unknown name says so in runc's words (exit 126), which the kit turns into a
 * ConfigError on opts.user. Already that user: the command runs directly, no tool needed.
 *
 * Then it switches with the first tool in the image that really does it: each is probed first
 * with a shell that checks its real, effective, saved and filesystem uid and gid (a busybox
 * setpriv without --reuid, a busybox chroot without --userspec, a missing capability all fail
 * the probe), then exec'd, so the PID, signals, stdin, the terminal and the environment (the
 * tree killer's marker) stay the command's own. None works: exit 126 with what was looked for.
 */
const LAUNCHER = [
  'spec=$1 sethome=$2; shift 2',
  'fail() { echo "berth: $*" >&2; exit 126; }',
  "numeric() { case $1 in ''|*[!0-9]*) return 1 ;; esac; }",
  'user=${spec%%:*} group= uid= gid=0 name= home=/ pwgid= groups=',
  'case $spec in *:*) group=${spec#*:} ;; esac',
  'if [ -r /etc/passwd ]; then',
  '  while IFS=: read -r n _ i g _ h _ || [ -n "$n" ]; do',
  '    if [ "$n" = "$user" ] || [ "$i" = "$user" ]; then uid=$i gid=$g pwgid=$g name=$n home=${h:-/}; break; fi',
  '  done < /etc/passwd',
  'fi',
  'if [ -z "$uid" ]; then',
  '  numeric "$user" || fail "unable to find user $user: no matching entries in passwd file"',
  '  uid=$user',
  'fi',
  'if [ -n "$group" ]; then',
  '  found=',
  '  if [ -r /etc/group ]; then',
  '    while IFS=: read -r n _ i _ || [ -n "$n" ]; do',
  '      if [ "$n" = "$group" ] || [ "$i" = "$group" ]; then gid=$i found=1; break; fi',
  '    done < /etc/group',
  '  fi',
  '  if [ -z "$found" ]; then',
  '    numeric "$group" || fail "unable to find group $group: no matching entries in group file"',
  '    gid=$group',
  '  fi',
  'elif [ -n "$name" ] && [ -r /etc/group ]; then',
  '  while IFS=: read -r n _ i members || [ -n "$n" ]; do',
  '    case ",$members," in *",$name,"*) groups=${groups:+$groups,}$i ;; esac',
  '  done < /etc/group',
  'fi',
  'groups=${groups:-$gid}',
  '[ "$sethome" = 1 ] && export HOME="$home"',
  'cur_uid= cur_gid=',
  'while read -r k a b _; do case $k in Uid:) cur_uid=$b ;; Gid:) cur_gid=$b ;; esac; done < /proc/$$/status',
  'if [ "$uid" = "$cur_uid" ] && [ "$gid" = "$cur_gid" ]; then exec "$@"; fi',
  'verify=\'while read -r k a b c d _; do case $k in Uid:) u="$a $b $c $d" ;; Gid:) g="$a $b $c $d" ;; esac; done < /proc/$$/status; [ "$u" = "$1 $1 $1 $1" ] && [ "$g" = "$2 $2 $2 $2" ]\'',
  'works() { "$@" /bin/sh -c "$verify" berth-verify "$uid" "$gid" </dev/null >/dev/null 2>&1; }',
  'found=',
  'has() { command -v "$1" >/dev/null 2>&1 && found="$found $1"; }',
  'if has setpriv && works setpriv --reuid="$uid" --regid="$gid" --groups="$groups" --; then',
  '  exec setpriv --reuid="$uid" --regid="$gid" --groups="$groups" -- "$@"',
  'fi',
  'if has chroot && works chroot --userspec="$uid:$gid" --groups="$groups" --skip-chdir /; then',
  '  exec chroot --userspec="$uid:$gid" --groups="$groups" --skip-chdir / "$@"',
  'fi',
  'if has nsenter && works nsenter -S "$uid" -G "$gid" --; then exec nsenter -S "$uid" -G "$gid" -- "$@"; fi',
  'if has su-exec && works su-exec "$uid:$gid"; then exec su-exec "$uid:$gid" "$@"; fi',
  'if has gosu && works gosu "$uid:$gid"; then exec gosu "$uid:$gid" "$@"; fi',
  'if has chpst; then',
  '  if works chpst -u "$uid:$gid"; then exec chpst -u "$uid:$gid" "$@"; fi',
  '  if works chpst -u ":$uid:$gid"; then exec chpst -u ":$uid:$gid" "$@"; fi',
  'fi',
  // "--" before the user: su's getopt would otherwise take the command's own options (-c) as its.
  'if [ -n "$name" ] && [ "$gid" = "$pwgid" ] && has su && works su -m -s /bin/sh -c \'exec "$0" "$@"\' -- "$name"; then',
  '  exec su -m -s /bin/sh -c \'exec "$0" "$@"\' -- "$name" "$@"',
  'fi',
  'if [ -n "$found" ]; then why="found${found}, but none switched to uid $uid gid $gid here"; else why="the image has none of the tools berth looks for"; fi',
  '[ "$cur_uid" = 0 ] || why="$why (commands here run as uid $cur_uid, which cannot become another user)"',
  `fail "cannot run as user $spec: $why; looked for: ${USER_SWITCH_TOOLS.join(', ')}"`,
].join('\n');

/** What the launcher's refusals start with (after "berth: "), on the command's stderr (stdout with a terminal). */
const LAUNCHER_REFUSAL = /^berth: (unable to find (user|group) .*|cannot run as user .*)$/m;
/** What runtimes say when the user or group is not in the image (runc, crun, kubelet). */
const RUNTIME_UNKNOWN_USER = /unable to find (user|group)|no matching entries in (passwd|group)|unknown user|no such user|user .* not found/i;

/** `argv` run as `user` by the launcher. HOME is the user's unless `env` (the spec's and the exec's) sets it. */
export function launchAsUser(argv: readonly string[], user: string, env: Readonly<Record<string, string>>): readonly string[] {
  return ['/bin/sh', '-c', LAUNCHER, 'berth-user', user, 'HOME' in env ? '0' : '1', ...argv];
}

/**
 * A run as `user` that never became the command: the user or group is unknown, or (the
 * launcher) the image cannot switch users. The caller's input or image, not the command's
 * result: a ConfigError on opts.user saying what to do. Undefined for any other result.
 */
export function userFailure(
  user: string,
  result: Pick<ExecResult, 'exitCode' | 'stdout' | 'stderr'>,
  ctx: { operation: Operation; backend: string; environmentId?: string },
): ConfigError | undefined {
  if (result.exitCode !== 126) return undefined;
  const output = `${result.stdout}\n${result.stderr}`;
  const refusal = LAUNCHER_REFUSAL.exec(output)?.[1]?.trim();
  if (refusal?.startsWith('cannot run as user')) {
    return new ConfigError({
      ...ctx,
      path: 'opts.user',
      message: `${refusal}. Install one of them in the image (e.g. apt-get install util-linux, apk add setpriv or su-exec), or run the command as the image's user`,
    });
  }
  if (refusal || RUNTIME_UNKNOWN_USER.test(output)) {
    const why = refusal ?? output.trim().slice(0, 200);
    return new ConfigError({
      ...ctx,
      path: 'opts.user',
      message: `cannot run as user "${user}": the image has no such user or group (${why}); give a uid such as '1000', or a user in the image's /etc/passwd (and a group in /etc/group)`,
    });
  }
  return undefined;
}
