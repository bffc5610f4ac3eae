"""How the plugin runs berth: ``--ek berth=...``, else ``$BERTH_COMMAND``, else the berth this
package carries (``bin/berth.mjs``, one file holding berth's CLI and backends, run by Node.js
>= 20.18: ``node`` on PATH or ``$BERTH_NODE``), else ``berth`` on PATH (an install from a checkout,
which has no bundle unless ``npm run bundle`` made one)."""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

BUNDLE = Path(__file__).parent / "bin" / "berth.mjs"
# The oldest Node.js berth runs on (its packages' "engines").
MIN_NODE = (20, 18)
NODE_HELP = "install Node.js 20.18 or later (https://nodejs.org, or your distribution's nodejs package) or point $BERTH_NODE at one"


def berth_command(explicit: str | None) -> list[str]:
    text = explicit or os.environ.get("BERTH_COMMAND")
    if text:
        return shlex.split(text)
    if BUNDLE.is_file():
        return [node_binary(os.environ.get("BERTH_NODE") or shutil.which("node")), str(BUNDLE)]
    found = shutil.which("berth")
    if not found:
        raise ValueError(
            f"berth_harbor: this install of the plugin carries no berth ({BUNDLE} is missing: an install from a "
            "checkout; the wheel has it) and no `berth` is on PATH: install the wheel, or run `npm run bundle` in "
            "the checkout, or give --ek berth='node /path/to/berth.js'"
        )
    return [found]


@functools.lru_cache(maxsize=8)
def node_binary(node: str | None) -> str:
    """``node`` if it is a Node.js berth runs on; else a ValueError saying what to install."""
    if not node:
        raise ValueError(f"berth_harbor: berth runs on Node.js and no `node` is on PATH: {NODE_HELP}")
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError as error:
        raise ValueError(f"berth_harbor: {node} does not run ({error}): {NODE_HELP}") from error
    version = out.stdout.strip()
    found = re.fullmatch(r"v(\d+)\.(\d+)\.\d+.*", version)
    if not found:
        raise ValueError(f"berth_harbor: {node} --version printed {version or out.stderr.strip()!r}, not a Node.js version: {NODE_HELP}")
    if (int(found[1]), int(found[2])) < MIN_NODE:
        raise ValueError(f"berth_harbor: {node} is Node.js {version}, and berth needs {MIN_NODE[0]}.{MIN_NODE[1]} or later: {NODE_HELP}")
    return node
