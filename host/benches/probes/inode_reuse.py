#!/usr/bin/env python3
"""What a broadcast's writes cost a disk when they create no inode.

A probe of system-call sequences, not of teamhost: 100 inboxes, each
written as teamhost's group commit writes it (lock, read, new version,
one `syncfs` for all, put in place, unlock), in two ways, alternating:

- "new inodes": the reference's protocol as teamhost keeps it: the lock
  directory made with `mkdir` and removed with `rmdir`, each new version a
  new file renamed over the inbox (two inodes made and two freed per
  inbox);
- "reused inodes": the same steps with nothing made or freed: the lock
  directory is a kept one renamed in (`renameat2(RENAME_NOREPLACE)`, as
  exclusive as `mkdir`) and out again, and each new version is written
  over a kept spare and exchanged with the inbox
  (`renameat2(RENAME_EXCHANGE)`).

teamhost does not use the second way for files Claude Code reads: a
reader that opened the inbox before an exchange would read the spare
while the next write rewrites it (see `host/src/durable.rs`). This probe
measures what that would buy, on tmpfs (the code's own cost) and on a
disk. Usage: inode_reuse.py DIR [SAMPLES]   (Linux, x86_64)
"""
import ctypes
import json
import os
import statistics
import sys
import time

LIBC = ctypes.CDLL(None, use_errno=True)
SYS_RENAMEAT2 = 316  # x86_64
AT_FDCWD = -100
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
INBOXES = 100
MESSAGE = {"from": "team-lead", "text": "x" * 120,
           "timestamp": "2026-12-02T00:00:00.000Z", "read": False}


def renameat2(old, new, flags):
    if LIBC.syscall(SYS_RENAMEAT2, AT_FDCWD, old.encode(), AT_FDCWD,
                    new.encode(), flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), old, new)


def syncfs(fd):
    if LIBC.syncfs(fd) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def inbox(team, i):
    return f"{team}/m{i:03}.json"


def prepare(team):
    os.makedirs(team, exist_ok=True)
    for i in range(INBOXES):
        path = inbox(team, i)
        for name in (path, path + ".spare"):
            with open(name, "w") as f:
                f.write("[]")
        if not os.path.isdir(path + ".lockspare"):
            os.mkdir(path + ".lockspare")


def next_version(path):
    """The inbox with one more message (kept short, as a team reading its
    mail keeps it)."""
    with open(path) as f:
        entries = json.load(f)
    entries = entries[-4:] + [MESSAGE]
    return json.dumps(entries, indent=2).encode()


def new_inodes(team):
    staged = []
    for i in range(INBOXES):
        path = inbox(team, i)
        os.mkdir(path + ".lock")
        body = next_version(path)
        tmp = f"{path}.tmp.{i:08x}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, body)
        staged.append((path, tmp, fd))
    syncfs(staged[0][2])
    for path, tmp, fd in staged:
        os.close(fd)
        os.rename(tmp, path)
        os.rmdir(path + ".lock")


def reused_inodes(team):
    staged = []
    now = time.time()
    for i in range(INBOXES):
        path = inbox(team, i)
        # Fresh, as a lock just made is (a lock's age says whether it is stale).
        os.utime(path + ".lockspare", (now, now))
        renameat2(path + ".lockspare", path + ".lock", RENAME_NOREPLACE)
        body = next_version(path)
        fd = os.open(path + ".spare", os.O_WRONLY)
        os.write(fd, body)
        os.ftruncate(fd, len(body))
        staged.append((path, fd))
    syncfs(staged[0][1])
    for path, fd in staged:
        renameat2(path + ".spare", path, RENAME_EXCHANGE)
        os.close(fd)
        os.rename(path + ".lock", path + ".lockspare")


def main():
    base = sys.argv[1]
    samples = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    teams = {"new inodes": (new_inodes, f"{base}/new"),
             "reused inodes": (reused_inodes, f"{base}/reused")}
    times = {name: [] for name in teams}
    for _, team in teams.values():
        prepare(team)
    for _ in range(samples):
        for name, (write, team) in teams.items():
            start = time.perf_counter()
            write(team)
            times[name].append((time.perf_counter() - start) * 1e3)
    print(f"{INBOXES} inboxes, {samples} samples each, alternating, in {base}")
    for name, ms in times.items():
        ms.sort()
        print(f"{name:>14}: median {statistics.median(ms):6.2f} ms, "
              f"p90 {ms[int(len(ms) * 0.9)]:6.2f} ms")


if __name__ == "__main__":
    main()
