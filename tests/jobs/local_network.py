"""What a local cluster (scripts/cluster-local.sh, scripts/pbs-local.sh) may leave behind on
this machine: its network namespaces and links. Shared by the tests that start one."""

from __future__ import annotations

import subprocess
from pathlib import Path


def run_script(script: Path, *args: str, env: dict[str, str] | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``bash SCRIPT ARGS...``, its output captured, never raising on a non-zero exit."""
    return subprocess.run(["bash", str(script), *args], env=env, capture_output=True, text=True,
                          check=False, timeout=timeout)


def network_leftovers(ns_prefix: str, *link_marks: str) -> list[str]:
    """The namespaces named ``ns_prefix*`` and the links whose line holds any of ``link_marks``
    (the bridge's and the veths' names), one "netns NAME" or "link NAME" each."""
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    found = [f"netns {ln.split()[0]}" for ln in netns.stdout.splitlines()
             if ln.startswith(ns_prefix)]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=False)
    found += [f"link {ln.split(':')[1].strip()}" for ln in links.stdout.splitlines()
              if any(mark in ln for mark in link_marks)]
    return found
