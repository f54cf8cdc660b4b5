"""Runs as PID 1 of fresh mount and PID namespaces (``unshare``, see ``_sandbox``): sets up the
container's filesystem the way a runtime would, then becomes the container's process.

A read-only bind of the root filesystem, a tmpfs on ``/tmp``, ``/proc`` of the new PID namespace, a
``/dev`` holding only the usual character devices, then the requested bind mounts; chroot, working
directory, user and group, and ``exec`` of the command with exactly the given environment (the
command is looked up in that environment's ``PATH``, as runc does). Standard library only: it runs
with ``python -I`` from this machine's interpreter, before the chroot.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True)


def main(spec: dict[str, object]) -> None:
    root = str(spec["root"])
    # Every path below is inside the container's root (its /tmp, its /dev/shm), none of this machine's.
    mount("--bind", root, root)
    if spec["read_only"]:
        mount("-o", "remount,bind,ro", root)
    mount("-t", "tmpfs", "-o", f"mode=1777,nosuid,nodev,size={spec['tmp_size']}", "tmpfs", f"{root}/tmp")  # noqa: S108
    mount("-t", "proc", "-o", "nosuid,nodev,noexec", "proc", f"{root}/proc")
    mount("-t", "tmpfs", "-o", "mode=755,nosuid,size=1m", "tmpfs", f"{root}/dev")
    for name in DEVICES:
        open(f"{root}/dev/{name}", "w").close()
        mount("--bind", f"/dev/{name}", f"{root}/dev/{name}")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):  # fmt: skip
        os.symlink(target, f"{root}/dev/{name}")
    os.mkdir(f"{root}/dev/shm")  # noqa: S108 — POSIX semaphores (multiprocessing) live there
    mount("-t", "tmpfs", "-o", "mode=1777,nosuid,nodev,size=16m", "tmpfs", f"{root}/dev/shm")  # noqa: S108
    mounts = spec["mounts"]
    assert isinstance(mounts, list)
    for target, source, read_only in mounts:
        point = f"{root}{target}"
        if os.path.isdir(source):
            os.makedirs(point, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(point), exist_ok=True)
            open(point, "a").close()
        mount("--bind", source, point)
        if read_only:
            mount("-o", "remount,bind,ro", point)
    os.chroot(root)
    os.chdir(str(spec["workdir"]))
    uid, gid = (int(part) for part in str(spec["user"]).split(":"))
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    argv = spec["argv"]
    env = spec["env"]
    assert isinstance(argv, list) and isinstance(env, dict)
    os.execvpe(argv[0], argv, env)  # noqa: S606 — the container's entrypoint, exactly as given


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
