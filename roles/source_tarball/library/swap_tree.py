#!/usr/bin/python3
"""Ansible module: put a finished build (a staging folder) in place of the installed one at once.

With an installed tree, the two folders are exchanged in one renameat2(RENAME_EXCHANGE) call,
so the installation path always holds a whole build, the old or the new one, even if the
machine stops in between; the old build, now at the staging path, is then removed. Without
one, the staging folder is renamed into place. Both paths must be on one file system (the
staging folder sits beside the installation). Used by roles/source_tarball/tasks/install.yml.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil

from ansible.module_utils.basic import AnsibleModule

AT_FDCWD = -100
RENAME_EXCHANGE = 2


def exchange(a: str, b: str) -> None:
    """Swap the paths A and B atomically (Linux >= 3.15, glibc >= 2.28)."""
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE)
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), a)


def swap(staging: str, dest: str) -> None:
    if not os.path.isdir(staging):
        raise OSError(errno.ENOENT, "no staging folder", staging)
    if os.path.lexists(dest):
        exchange(staging, dest)
        shutil.rmtree(staging)
    else:
        os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
        os.rename(staging, dest)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "role": {"type": "str", "required": True},
            "staging": {"type": "path", "required": True},
            "dest": {"type": "path", "required": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    if not module.check_mode:
        try:
            swap(p["staging"], p["dest"])
        except OSError as exc:
            module.fail_json(
                msg=f"{p['role']}: cannot put {p['staging']} in place of {p['dest']} ({exc.strerror}: {exc.filename})"
            )
    module.exit_json(changed=True, dest=p["dest"])


if __name__ == "__main__":
    main()
