#!/usr/bin/env python3
# The system-call filter of an agent run under bubblewrap (docs/operations.md "Agent isolation"), as the classic BPF
# program `bwrap --seccomp FD` loads: one per architecture a release ships, written to seccomp/agent-linux-<arch>.bpf
# (<arch> as Node names it: x64, arm64) and committed, so a checkout and a release need no libseccomp; this script
# needs its Python binding (Debian: apt-get install python3-seccomp). test/node/syscall-filter.test.ts runs it again
# where the binding is present and compares.
#
#   python3 scripts/seccomp/generate.py [DIR]     (DIR: seccomp/ of this repository by default)
#
# What it allows is Docker's default profile for a container without capabilities (moby's profiles/seccomp/default.json:
# its list for every architecture, and arch_prctl and modify_ldt on x86_64), less what reaches the run's own launcher
# (ptrace, process_vm_readv, process_vm_writev) and io_uring, plus a few calls newer than that list that C libraries
# use and fall back from. The calls named in DENIED are answered EPERM, as by a kernel that refuses them; clone3 and
# io_uring ENOSYS, so glibc falls back to the clone the filter can inspect, and libuv to its thread pool; every other
# call (not in the list, or newer than it) ENOSYS, as by a kernel that lacks it. A call of another ABI than the
# architecture's own (i386 and x32 on x86_64, arm on arm64) kills the process.
import errno
import os
import sys

import seccomp

ARCHES = {'x64': seccomp.Arch.X86_64, 'arm64': seccomp.Arch.AARCH64}

# moby profiles/seccomp/default.json, the calls every container gets whatever its capabilities (its first list), less
# ptrace, process_vm_readv and process_vm_writev (its second, for kernels from 4.8) and io_uring_*.
DOCKER = '''
accept accept4 access adjtimex alarm bind brk capget capset chdir chmod chown chown32 clock_adjtime clock_adjtime64
clock_getres clock_getres_time64 clock_gettime clock_gettime64 clock_nanosleep clock_nanosleep_time64 close
close_range connect copy_file_range creat dup dup2 dup3 epoll_create epoll_create1 epoll_ctl epoll_ctl_old
epoll_pwait epoll_pwait2 epoll_wait epoll_wait_old eventfd eventfd2 execve execveat exit exit_group faccessat
faccessat2 fadvise64 fadvise64_64 fallocate fanotify_mark fchdir fchmod fchmodat fchown fchown32 fchownat fcntl
fcntl64 fdatasync fgetxattr flistxattr flock fork fremovexattr fsetxattr fstat fstat64 fstatat64 fstatfs fstatfs64
fsync ftruncate ftruncate64 futex futex_time64 futex_waitv futimesat getcpu getcwd getdents getdents64 getegid
getegid32 geteuid geteuid32 getgid getgid32 getgroups getgroups32 getitimer getpeername getpgid getpgrp getpid
getppid getpriority getrandom getresgid getresgid32 getresuid getresuid32 getrlimit get_robust_list getrusage getsid
getsockname getsockopt get_thread_area gettid gettimeofday getuid getuid32 getxattr inotify_add_watch inotify_init
inotify_init1 inotify_rm_watch io_cancel ioctl io_destroy io_getevents io_pgetevents io_pgetevents_time64 ioprio_get
ioprio_set io_setup io_submit ipc kill landlock_add_rule landlock_create_ruleset landlock_restrict_self lchown
lchown32 lgetxattr link linkat listen listxattr llistxattr _llseek lremovexattr lseek lsetxattr lstat lstat64 madvise
membarrier memfd_create memfd_secret mincore mkdir mkdirat mknod mknodat mlock mlock2 mlockall mmap mmap2 mprotect
mq_getsetattr mq_notify mq_open mq_timedreceive mq_timedreceive_time64 mq_timedsend mq_timedsend_time64 mq_unlink
mremap msgctl msgget msgrcv msgsnd msync munlock munlockall munmap name_to_handle_at nanosleep newfstatat _newselect
open openat openat2 pause pidfd_open pidfd_send_signal pipe pipe2 pkey_alloc pkey_free pkey_mprotect poll ppoll
ppoll_time64 prctl pread64 preadv preadv2 prlimit64 process_mrelease pselect6 pselect6_time64 pwrite64 pwritev
pwritev2 read readahead readlink readlinkat readv recv recvfrom recvmmsg recvmmsg_time64 recvmsg remap_file_pages
removexattr rename renameat renameat2 restart_syscall rmdir rseq rt_sigaction rt_sigpending rt_sigprocmask
rt_sigqueueinfo rt_sigreturn rt_sigsuspend rt_sigtimedwait rt_sigtimedwait_time64 rt_tgsigqueueinfo sched_getaffinity
sched_getattr sched_getparam sched_get_priority_max sched_get_priority_min sched_getscheduler sched_rr_get_interval
sched_rr_get_interval_time64 sched_setaffinity sched_setattr sched_setparam sched_setscheduler sched_yield seccomp
select semctl semget semop semtimedop semtimedop_time64 send sendfile sendfile64 sendmmsg sendmsg sendto setfsgid
setfsgid32 setfsuid setfsuid32 setgid setgid32 setgroups setgroups32 setitimer setpgid setpriority setregid setregid32
setresgid setresgid32 setresuid setresuid32 setreuid setreuid32 setrlimit set_robust_list setsid setsockopt
set_thread_area set_tid_address setuid setuid32 setxattr shmat shmctl shmdt shmget shutdown sigaltstack signalfd
signalfd4 sigprocmask sigreturn socketcall socketpair splice stat stat64 statfs statfs64 statx symlink symlinkat sync
sync_file_range syncfs sysinfo tee tgkill time timer_create timer_delete timer_getoverrun timer_gettime
timer_gettime64 timer_settime timer_settime64 timerfd_create timerfd_gettime timerfd_gettime64 timerfd_settime
timerfd_settime64 times tkill truncate truncate64 ugetrlimit umask uname unlink unlinkat utime utimensat
utimensat_time64 utimes vfork vmsplice wait4 waitid waitpid write writev
'''.split()

# Docker's for these architectures alone.
DOCKER_BY_ARCH = {'x64': ['arch_prctl', 'modify_ldt'], 'arm64': ['sync_file_range2']}

# Newer than Docker's list, each of the process's own: glibc 2.39's fchmodat (AT_SYMLINK_NOFOLLOW) and shadow stack,
# the futex2 calls, page cache statistics of its own files.
NEWER = ['fchmodat2', 'map_shadow_stack', 'cachestat', 'futex_wake', 'futex_wait', 'futex_requeue']

# Answered EPERM: what Docker gives only to a container with a capability (its later lists) and what reaches past the
# run: keyrings the next run of the uid reads, namespaces (a user namespace of its own: the kernel's whole surface as
# its root), mounts of either API, kernel modules and images, BPF and perf, userfaultfd (a tool of kernel exploits),
# and what reaches another process of the uid (the run's launcher): ptrace, process_vm_*, kcmp, pidfd_getfd,
# process_madvise.
DENIED = '''
add_key keyctl request_key
unshare setns
mount umount umount2 pivot_root chroot fsopen fsmount fsconfig fspick move_mount open_tree mount_setattr
init_module finit_module delete_module kexec_load kexec_file_load
bpf perf_event_open userfaultfd lookup_dcookie fanotify_init open_by_handle_at quotactl quotactl_fd
ptrace process_vm_readv process_vm_writev kcmp pidfd_getfd process_madvise
reboot acct swapon swapoff iopl ioperm settimeofday stime clock_settime clock_settime64 vhangup syslog
sethostname setdomainname get_mempolicy mbind set_mempolicy set_mempolicy_home_node
'''.split()

# Answered ENOSYS: what runtimes probe and fall back from (glibc's threads and posix_spawn to clone; libuv to its
# thread pool), which EPERM would fail instead.
UNIMPLEMENTED = ['clone3', 'io_uring_setup', 'io_uring_enter', 'io_uring_register']

# clone(2) with any of these (its first argument on both architectures) makes a namespace. CLONE_NEWTIME shares its
# bit with the exit signal in clone(2) and is clone3's and unshare's alone, both refused above.
CLONE_NEW = {
    'CLONE_NEWNS': 0x00020000,
    'CLONE_NEWCGROUP': 0x02000000,
    'CLONE_NEWUTS': 0x04000000,
    'CLONE_NEWIPC': 0x08000000,
    'CLONE_NEWUSER': 0x10000000,
    'CLONE_NEWPID': 0x20000000,
    'CLONE_NEWNET': 0x40000000,
}

# personality(2): Linux's own, PER_LINUX32 and UNAME26 and the query (Docker's values); others (READ_IMPLIES_EXEC,
# ADDR_NO_RANDOMIZE) EPERM.
PERSONALITIES = [0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF]

# AF_VSOCK: a socket to the hypervisor, which Docker refuses.
AF_VSOCK = 40


def known(arch, name):
    """The call's number on `arch`, or None where it has none (libseccomp gives a negative pseudo-number)."""
    try:
        number = seccomp.resolve_syscall(arch, name)
    except (ValueError, RuntimeError):
        return None
    return number if number >= 0 else None


def build(arch_name):
    arch = ARCHES[arch_name]
    f = seccomp.SyscallFilter(seccomp.ERRNO(errno.ENOSYS))
    # A filter starts with the host's architecture: the one asked for takes its place (a release is built on any host).
    if seccomp.system_arch() != arch & 0xFFFFFFFF:
        f.add_arch(arch)
        f.remove_arch(seccomp.Arch.NATIVE)
    f.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
    # A binary tree of the call numbers, not a list: a few comparisons a call, whichever it is.
    f.set_attr(seccomp.Attr.CTL_OPTIMIZE, 2)
    rules = 0

    def rule(action, name, *args):
        nonlocal rules
        if known(arch, name) is None:
            return
        f.add_rule(action, name, *args)
        rules += 1

    for name in sorted(set(DOCKER + DOCKER_BY_ARCH[arch_name] + NEWER)):
        rule(seccomp.ALLOW, name)
    for name in DENIED:
        rule(seccomp.ERRNO(errno.EPERM), name)
    # UNIMPLEMENTED: the default's answer (libseccomp refuses a rule that repeats it); in no list above.
    assert not set(UNIMPLEMENTED) & set(DOCKER + NEWER + DENIED)
    rule(seccomp.ALLOW, 'clone', seccomp.Arg(0, seccomp.MASKED_EQ, sum(CLONE_NEW.values()), 0))
    for flag in CLONE_NEW.values():
        rule(seccomp.ERRNO(errno.EPERM), 'clone', seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    for persona in PERSONALITIES:
        rule(seccomp.ALLOW, 'personality', seccomp.Arg(0, seccomp.EQ, persona))
    # Below the values above in libseccomp's tree: every other persona.
    rule(seccomp.ERRNO(errno.EPERM), 'personality', seccomp.Arg(0, seccomp.GE, 0))
    rule(seccomp.ALLOW, 'socket', seccomp.Arg(0, seccomp.NE, AF_VSOCK))
    rule(seccomp.ERRNO(errno.EPERM), 'socket', seccomp.Arg(0, seccomp.EQ, AF_VSOCK))
    return f


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, '..', '..', 'seccomp')
    os.makedirs(out, exist_ok=True)
    for arch_name in ARCHES:
        path = os.path.join(out, f'agent-linux-{arch_name}.bpf')
        with open(path, 'wb') as file:
            build(arch_name).export_bpf(file)
        print(f'{os.path.relpath(path)}: {os.path.getsize(path)} bytes')


if __name__ == '__main__':
    main()
