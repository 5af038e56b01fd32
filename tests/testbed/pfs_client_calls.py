"""POSIX calls on corun's striped file system through pfs_client's LD_PRELOAD library.

Run by tests/testbed/test_pfs_client.py on a client host of a netns cluster, as

    LD_PRELOAD=.../libcorun_pfs.so CORUN_PFS_PREFIX=/pfs CORUN_PFS_VOLFILES=a:b python3 pfs_client_calls.py PREFIX WHAT

WHAT is `calls` (open, write, read, lseek, pread, pwrite, fstat, stat, ftruncate, holes, access,
unlink, mkdir, rename, rmdir, statvfs and their errors, each checked here; prints the sizes it
expects the datafiles to have) or `pattern NAME SIZE` (writes kernels/pfs_read's data pattern,
seed 1, into NAME, for `pfs_read --read --check` to verify) or `check-pattern NAME SIZE`
(reads NAME, written by `pfs_read --write`, and compares every word) or `create-race NAME COUNT
START` (opens NAME-0 .. NAME-<COUNT-1> with O_CREAT, the k-th at the epoch time START + k / 4 s,
as every process started with the same arguments does: IOR's ranks opening their shared file).
Prints one JSON object;
any mismatch is an AssertionError and exit status 1.
"""

import errno
import json
import os
import sys

MASK = (1 << 64) - 1
MIX_MUL = 0x9E3779B97F4A7C15


def mix64(x):
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & MASK
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & MASK
    x ^= x >> 33
    return x


def pattern(off, length, seed=1, file_id=0):
    """pfs_read's data: the 8-byte word at offset o is mix64(o ^ seed * MIX_MUL ^ file_id << 56)."""
    words = (mix64(o ^ ((seed * MIX_MUL) & MASK) ^ (file_id << 56)) for o in range(off, off + length, 8))
    return b"".join(w.to_bytes(8, "little") for w in words)


def expect_error(code, fn, *args):
    try:
        fn(*args)
    except OSError as exc:
        assert exc.errno == code, (fn.__name__, args, exc)
        return
    raise AssertionError(f"{fn.__name__}{args} did not fail with {errno.errorcode[code]}")


def calls(prefix):
    name = f"{prefix}/calls.dat"
    data = os.urandom(3 * 65536 + 1000)  # 3 strips and a bit: both servers, an odd end
    fd = os.open(name, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    for i in range(0, len(data), 10000):  # writes that cross strip boundaries
        assert os.write(fd, data[i : i + 10000]) == len(data[i : i + 10000])
    assert os.lseek(fd, 0, os.SEEK_CUR) == len(data)
    assert os.lseek(fd, 0, os.SEEK_END) == len(data)
    assert os.fstat(fd).st_size == len(data)
    os.lseek(fd, 0, os.SEEK_SET)
    back = b"".join(iter(lambda: os.read(fd, 7777), b""))  # reads to the end of the file
    assert back == data, "read back differs"
    assert os.pread(fd, 100, 65536 - 50) == data[65536 - 50 : 65536 + 50]
    assert os.pwrite(fd, b"x" * 20, 131072 - 10) == 20
    data = data[: 131072 - 10] + b"x" * 20 + data[131072 + 10 :]
    assert os.pread(fd, len(data) + 50, 0) == data  # a short read at the end
    os.fsync(fd)
    os.close(fd)
    st = os.stat(name)
    assert st.st_size == len(data) and st.st_blksize == 65536
    # truncate down, then up: the new end reads as zeros
    os.truncate(name, 70000)
    fd = os.open(name, os.O_RDWR)
    assert os.fstat(fd).st_size == 70000
    os.ftruncate(fd, 200000)
    assert os.pread(fd, 200000, 0) == data[:70000] + bytes(130000)
    # a hole: a strip written far away; the strips before it read as zeros
    os.pwrite(fd, b"end", 5 * 65536)
    assert os.fstat(fd).st_size == 5 * 65536 + 3
    assert os.pread(fd, 65536, 3 * 65536) == bytes(65536)
    os.close(fd)
    assert os.access(name, os.R_OK) and os.access(prefix, os.F_OK)
    assert os.stat(prefix).st_mode & 0o170000 == 0o040000  # the prefix is the root folder
    vfs = os.statvfs(prefix)
    assert vfs.f_blocks > 0 and vfs.f_bsize > 0
    expect_error(errno.ENOENT, os.open, f"{prefix}/absent.dat", os.O_RDONLY)
    expect_error(errno.ENOENT, os.stat, f"{prefix}/absent.dat")
    expect_error(errno.EOPNOTSUPP, os.open, f"{prefix}/append.dat", os.O_CREAT | os.O_WRONLY | os.O_APPEND)
    expect_error(errno.EXDEV, os.rename, name, "/tmp/calls.dat")
    os.mkdir(f"{prefix}/d")
    os.rename(name, f"{prefix}/d/moved.dat")
    assert os.stat(f"{prefix}/d/moved.dat").st_size == 5 * 65536 + 3
    os.unlink(f"{prefix}/d/moved.dat")
    os.rmdir(f"{prefix}/d")
    expect_error(errno.ENOENT, os.stat, f"{prefix}/d")
    # the striped file the sizes below describe, kept for the caller to look at on the bricks
    fd = os.open(f"{prefix}/kept.dat", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.write(fd, os.urandom(5 * 65536 + 100))  # strips 0, 2, 4 on server 0; 1, 3, 5 (100 bytes) on 1
    os.close(fd)
    return {"calls": "ok", "kept_sizes": [3 * 65536, 2 * 65536 + 100]}


def write_pattern(prefix, name, size):
    fd = os.open(f"{prefix}{name}", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    for off in range(0, size, 1 << 20):
        os.write(fd, pattern(off, min(1 << 20, size - off)))
    os.close(fd)
    return {"written": size}


def check_pattern(prefix, name, size):
    fd = os.open(f"{prefix}{name}", os.O_RDONLY)
    assert os.fstat(fd).st_size == size
    for off in range(0, size, 1 << 20):
        assert os.read(fd, 1 << 20) == pattern(off, min(1 << 20, size - off)), f"differs at {off}"
    assert os.read(fd, 10) == b""
    os.close(fd)
    return {"checked": size}


def create_race(prefix, name, count, start):
    import time

    for k in range(count):
        time.sleep(max(0.0, start + k / 4 - time.time()))
        fd = os.open(f"{prefix}{name}-{k}", os.O_CREAT | os.O_RDWR, 0o644)
        os.close(fd)
    return {"opened": count}


def main(argv):
    prefix, what = argv[1], argv[2]
    if what == "calls":
        out = calls(prefix)
    elif what == "pattern":
        out = write_pattern(prefix, argv[3], int(argv[4]))
    elif what == "create-race":
        out = create_race(prefix, argv[3], int(argv[4]), float(argv[5]))
    else:
        out = check_pattern(prefix, argv[3], int(argv[4]))
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv)
