"""The first code a sandboxed sample runs: it locks the process's file system view, then runs the
sample. Copied into the sample's own temporary directory and run by a bare interpreter
(``python -I -S guard.py sample.py``), so it uses the standard library only.

Landlock (Linux 5.13 and newer, no privilege needed) restricts this process and everything it
starts, irrevocably: files may be written only inside the sample's directory, and read only there
and below the interpreter's own directories and the system's libraries -- so a sample cannot
write outside its directory or read a key file in a home directory. Where the kernel lacks
Landlock the sample still runs, and the sandbox's probe reports the missing layer.
"""

import ctypes
import os
import sys

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
#: every file-system right of Landlock ABI 1 (bits 0..12), and TRUNCATE (bit 14) from ABI 3
ABI1_RIGHTS = (1 << 13) - 1
TRUNCATE = 1 << 14
READ_ONLY = EXECUTE | READ_FILE | READ_DIR
#: read-only roots besides the interpreter's own prefixes
SYSTEM_ROOTS = ("/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", "/etc/localtime", "/dev/null", "/dev/urandom")


def lock_files(workdir):
    """Apply the Landlock rules; returns "" on success, else why not."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return "Landlock is not available in this kernel"
    handled = ABI1_RIGHTS | (TRUNCATE if abi >= 3 else 0)
    attr = ctypes.c_uint64(handled)
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
    if ruleset < 0:
        return "Landlock refused a ruleset: " + os.strerror(ctypes.get_errno())

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    roots = {workdir: handled}
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *SYSTEM_ROOTS):
        roots.setdefault(prefix, READ_ONLY)
    for path, rights in roots.items():
        try:
            descriptor = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        is_dir = os.path.isdir(path)
        rule = PathBeneath(allowed_access=rights if is_dir else rights & (EXECUTE | READ_FILE | WRITE_FILE | TRUNCATE), parent_fd=descriptor)
        libc.syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0))
        os.close(descriptor)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return "no_new_privs refused: " + os.strerror(ctypes.get_errno())
    if libc.syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
        return "Landlock refused to restrict: " + os.strerror(ctypes.get_errno())
    os.close(ruleset)
    return ""


def main():
    workdir = os.getcwd()
    problem = lock_files(workdir) if os.environ.get("ARENA_SANDBOX_FILES", "lock") == "lock" else "switched off"
    os.environ.pop("ARENA_SANDBOX_FILES", None)
    with open(os.path.join(workdir, "guard.txt"), "w") as note:
        note.write(problem or "locked")
    sample = sys.argv[1]
    with open(sample) as handle:
        source = handle.read()
    sys.argv = [sample]
    exec(compile(source, sample, "exec"), {"__name__": "__main__", "__file__": sample})


if __name__ == "__main__":
    main()
