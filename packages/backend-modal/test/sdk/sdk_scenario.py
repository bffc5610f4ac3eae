"""Modal's official Python SDK (pinned: requirements-sdk.lock.txt) on its default path, against berth's
Modal simulator: the scenario of issue 21. Run by ../sdk-scenario.test.ts, which starts the simulator
and sets the environment:

  MODAL_SERVER_URL, MODAL_TOKEN_ID, MODAL_TOKEN_SECRET  the simulator and its token
  MODAL_CONFIG_PATH                                     a file that does not exist: no ~/.modal.toml
  SDK_PRIVATE_IMAGE                                     a tag of the loopback registry's private image
  SDK_REGISTRY_SECRET                                   a named secret holding that registry's credentials
  SDK_ALLOWED, SDK_DENIED                               host:port of two listeners on this machine (an
                                                        outbound CIDR allowlist lets the first out only)

Nothing is monkeypatched: the SDK trusts the simulator's CA through its own certifi bundle (the test
puts a copy that includes the CA first on PYTHONPATH).

Strict: every step must pass. Each prints one line, `STEP {"name", "ok", "secs", "value" | "error"}`
(JSON), and the script exits 1 if any failed. A step whose prerequisite failed fails too.
"""

import json
import os
import sys
import time
import traceback

import certifi
import modal
from modal.exception import AuthError, ImageBuildError

REGISTRY = "127.0.0.1:5000"
PRIVATE = os.environ["SDK_PRIVATE_IMAGE"]
SECRET = os.environ["SDK_REGISTRY_SECRET"]
LOCAL = "berth-test/busybox:latest"
THREE_MIB = 3 * 1024 * 1024
state = {}
failed = []


def emit(**fields):
    print("STEP " + json.dumps(fields, default=repr), flush=True)


def step(name, needs=()):
    def run(fn):
        t = time.monotonic()
        missing = [n for n in needs if n not in state]
        try:
            if missing:
                raise AssertionError(f"needs {missing}, which failed")
            state[name] = fn()
            emit(name=name, ok=True, secs=round(time.monotonic() - t, 2), value=state[name])
        except BaseException as e:  # noqa: BLE001 - every failure is reported, the script goes on
            failed.append(name)
            emit(name=name, ok=False, secs=round(time.monotonic() - t, 2), error=f"{type(e).__module__}.{type(e).__name__}: {e}")
            traceback.print_exc(file=sys.stderr)
        return fn

    return run


def expect_failure(fn, kind):
    try:
        fn()
    except kind as e:
        return f"{type(e).__name__}: {e}"
    raise AssertionError(f"expected {kind.__name__}")


emit(name="sdk", ok=True, secs=0, value={"modal": modal.__version__, "certifi": certifi.where()})


@step("wrong_token")
def _():
    client = modal.Client.from_credentials("ak-wrong", "as-wrong")
    return expect_failure(lambda: modal.App.lookup("sdk-scenario", create_if_missing=True, client=client), AuthError)


@step("app_lookup")
def _():
    app = modal.App.lookup("sdk-scenario", create_if_missing=True)
    assert app.app_id.startswith("ap-"), app.app_id
    return app.app_id


@step("environment")
def _():
    return modal.Environment.from_context().hydrate().object_id


def build(ref, secret=None):
    image = modal.Image.from_registry(ref, secret=secret)
    image.build(modal.App.lookup("sdk-scenario"))
    return image.object_id


@step("image_local", needs=["app_lookup"])
def _():
    return build(LOCAL)


@step("image_private_no_secret", needs=["app_lookup"])
def _():
    return expect_failure(lambda: build(PRIVATE), ImageBuildError)


@step("image_private_named_secret", needs=["app_lookup"])
def _():
    return build(PRIVATE, modal.Secret.from_name(SECRET))


@step("image_private_dict_secret", needs=["app_lookup"])
def _():
    creds = {"REGISTRY_USERNAME": "berth", "REGISTRY_PASSWORD": "berth-test-secret"}
    return build(PRIVATE, modal.Secret.from_dict(creds))


@step("image_not_found", needs=["app_lookup"])
def _():
    return expect_failure(lambda: build(f"{REGISTRY}/berth/does-not-exist:nope", modal.Secret.from_name(SECRET)), ImageBuildError)


@step("sandbox_create", needs=["app_lookup", "image_local"])
def _():
    sb = modal.Sandbox.create(
        "sh", "-c", "echo out-line; echo err-line >&2; sleep 600",
        app=modal.App.lookup("sdk-scenario"),
        image=modal.Image.from_registry(LOCAL),
        timeout=300,
        workdir="/tmp",
        tags={"suite": "sdk-scenario"},
        env={"SB_ENV": "from-create"},
        secrets=[modal.Secret.from_dict({"SB_SECRET": "from-dict"})],
    )
    state["sb"] = sb
    return sb.object_id


def sandbox():
    return state["sb"]


@step("exec_env_workdir", needs=["sandbox_create"])
def _():
    p = sandbox().exec("sh", "-c", 'echo "$FOO:$SB_ENV:$SB_SECRET:$(pwd)"', env={"FOO": "bar"}, workdir="/etc")
    out = p.stdout.read()
    rc = p.wait()
    assert (rc, out) == (0, "bar:from-create:from-dict:/etc\n"), (rc, out)
    return out


@step("exec_stdin", needs=["sandbox_create"])
def _():
    p = sandbox().exec("cat")
    p.stdin.write(b"hello stdin\n")
    p.stdin.write_eof()
    p.stdin.drain()
    out = p.stdout.read()
    rc = p.wait()
    assert (rc, out) == (0, "hello stdin\n"), (rc, out)
    return out


@step("exec_timeout", needs=["sandbox_create"])
def _():
    t = time.monotonic()
    rc = sandbox().exec("sleep", "30", timeout=2).wait()
    secs = time.monotonic() - t
    # The SDK's own deadline (-1) and the server's kill (SIGKILL: 137) come due together; either way
    # the command did not run its 30 s.
    assert rc in (-1, 137) and secs < 15, (rc, secs)
    return {"returncode": rc, "secs": round(secs, 1)}


@step("exec_3mib", needs=["sandbox_create"])
def _():
    p = sandbox().exec("sh", "-c", f"head -c {THREE_MIB} /dev/zero | tr '\\0' 'a'", text=False)
    data = p.stdout.read()
    rc = p.wait()
    assert rc == 0 and len(data) == THREE_MIB and data == b"a" * THREE_MIB, (rc, len(data))
    return len(data)


@step("tags", needs=["sandbox_create"])
def _():
    sandbox().set_tags({"suite": "sdk-scenario", "k": "v"})
    tags = sandbox().get_tags()
    assert tags == {"suite": "sdk-scenario", "k": "v"}, tags
    return tags


@step("list", needs=["sandbox_create"])
def _():
    app_id = modal.App.lookup("sdk-scenario").app_id
    found = [s.object_id for s in modal.Sandbox.list(app_id=app_id, tags={"k": "v"})]
    assert found == [sandbox().object_id], found
    return found


@step("sandbox_stdout", needs=["sandbox_create"])
def _():
    line = next(iter(sandbox().stdout))
    assert line == "out-line\n", line
    return line


@step("poll_running", needs=["sandbox_create"])
def _():
    rc = sandbox().poll()
    assert rc is None, rc
    return rc


@step("snapshot_filesystem", needs=["sandbox_create"])
def _():
    # The SDK's snapshot (the router's TaskSnapshotFilesystem), a sandbox started from it, then ImageDelete.
    assert sandbox().exec("sh", "-c", "echo snap > /tmp/snapped").wait() == 0
    image = sandbox().snapshot_filesystem()
    copy = modal.Sandbox.create("sleep", "600", app=modal.App.lookup("sdk-scenario"), image=image, timeout=120)
    p = copy.exec("cat", "/tmp/snapped")
    out = p.stdout.read()
    assert (p.wait(), out) == (0, "snap\n"), out
    copy.terminate()
    modal.experimental.image_delete(image.object_id)
    return image.object_id


@step("terminate", needs=["sandbox_create"])
def _():
    sandbox().terminate()
    return "terminated"


@step("wait", needs=["terminate"])
def _():
    sandbox().wait(raise_on_termination=False)
    assert sandbox().returncode == 137, sandbox().returncode
    return sandbox().returncode


@step("poll_after", needs=["terminate"])
def _():
    rc = sandbox().poll()
    assert rc == 137, rc
    return rc


@step("output_after_exit", needs=["terminate"])
def _():
    err = sandbox().stderr.read()
    # A handle made from the id alone: it finds the task and the router after the end.
    out = modal.Sandbox.from_id(sandbox().object_id).stdout.read()
    assert (out, err) == ("out-line\n", "err-line\n"), (out, err)
    return {"stdout": out, "stderr": err}


@step("cidr_allowlist", needs=["app_lookup", "image_local"])
def _():
    # Modal's outbound CIDR allowlist, as the SDK makes it: the first listener's address only.
    allowed_host, allowed_port = os.environ["SDK_ALLOWED"].split(":")
    denied_host, denied_port = os.environ["SDK_DENIED"].split(":")
    sb = modal.Sandbox.create(
        "sleep", "600", app=modal.App.lookup("sdk-scenario"), image=modal.Image.from_registry(LOCAL), timeout=120,
        outbound_cidr_allowlist=[f"{allowed_host}/32"],
    )
    try:
        seen = {}
        for name, host, port in (("allowed", allowed_host, allowed_port), ("denied", denied_host, denied_port)):
            p = sb.exec("sh", "-c", f"printf %s sdk-cidr-{name} | nc -w 3 {host} {port}")
            seen[name] = p.wait()
        assert seen["allowed"] == 0 and seen["denied"] != 0, seen
        return {k: ("reached" if v == 0 else "blocked") for k, v in seen.items()}
    finally:
        sb.terminate()


@step("i6pn", needs=["app_lookup", "image_local"])
def _():
    # Modal's private networking as the SDK makes it (Sandbox._experimental_create(i6pn=True)): each
    # container resolves its own address as i6pn.modal.local; one reaches the other there, while an
    # empty outbound allowlist keeps the public network away ("keep i6pn while blocking public egress").
    app = modal.App.lookup("sdk-scenario")
    image = modal.Image.from_registry(LOCAL)
    server = modal.Sandbox._experimental_create(
        "sh", "-c", "mkdir -p /w && echo i6pn-hello > /w/index.html && exec httpd -f -p 8080 -h /w",
        app=app, image=image, timeout=120, i6pn=True, outbound_cidr_allowlist=[],
    )
    client = modal.Sandbox._experimental_create("sleep", "600", app=app, image=image, timeout=120, i6pn=True, outbound_cidr_allowlist=[])
    try:
        def own_address(sb):
            p = sb.exec("sh", "-c", "awk '$2 == \"i6pn.modal.local\" {print $1; exit}' /etc/hosts")
            out = p.stdout.read().strip()
            assert p.wait() == 0 and out.startswith("fdaa"), out
            return out
        address = own_address(server)
        assert own_address(client) != address
        p = client.exec("sh", "-c", f"for i in 1 2 3 4 5 6 7 8 9 10; do wget -q -O - 'http://[{address}]:8080/' && exit 0; sleep 0.3; done; exit 1")
        got = p.stdout.read()
        assert p.wait() == 0 and got == "i6pn-hello\n", got
        return {"prefix": address.split(":")[0], "reached": got.strip()}
    finally:
        server.terminate()
        client.terminate()


print(f"DONE failed={json.dumps(failed)}", flush=True)
sys.exit(1 if failed else 0)
