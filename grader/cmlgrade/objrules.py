"""What the object checks refuse (objcheck.py applies it to what objread.py
reads): the tables of names, sections, headers and instructions a student
object may not define, call or hold, each with what it is and what to do
instead, and the tests that tell the allowed forms of a refused call apart
(a cudaMemcpy between device buffers, the CUDA compiler's host stub of a
__device__ function). Nothing here reads a file."""
from __future__ import annotations

import re

# What the C and C++ runtime libraries export (runtime_exports) is allowed unless it matches one of these:
# (regex over the plain or mangled name, what it is, what to do instead). An optional leading __ and the
# fortified _chk/_2 forms are covered.
_C = r"^_*(?:{})(?:64)?(?:_chk|_2|_unlocked)?$"
REFUSED_CALLS: list[tuple[re.Pattern, str, str]] = [(re.compile(p), what, fix) for p, what, fix in [
    (_C.format("dlopen|dlmopen|dlsym|dlvsym|dlinfo|dladdr1?|dl_iterate_phdr|libc_dlopen_mode|libc_dlsym"),
     "loads other code", "link nothing at run time: write the step's code in your file"),
    (_C.format("open|openat|creat|fopen|freopen|fdopen|fmemopen|open_memstream|tmpfile|tmpnam(?:_r)?|tempnam|"
               "mkstemps?|mkostemps?|mkdtemp|opendir|fdopendir|readdir(?:_r)?|scandir(?:at)?|glob|nftw|ftw|"
               "x?stat|lstat|fstat|fstatat|[fl]?xstat|statx|statv?fs|fstatv?fs|access|faccessat|euidaccess|eaccess|"
               "unlink|unlinkat|remove|rename|renameat2?|mkdir|mkdirat|rmdir|chdir|fchdir|chroot|chmod|fchmod|"
               "fchmodat|chown|fchown|lchown|fchownat|link|linkat|symlink|symlinkat|readlink|readlinkat|realpath|"
               "truncate|ftruncate|read|pread|readv|preadv2?|write|pwrite|writev|pwritev2?|lseek|dup[23]?|"
               "close|close_range|fcntl|ioctl|pipe2?|mkfifo|mkfifoat|mknod|mknodat|mmap|munmap|mremap|mprotect|"
               "pkey_mprotect|memfd_create|sendfile|splice|vmsplice|tee|copy_file_range|fsync|fdatasync|sync|"
               "syncfs|flock|lockf|utimes?|futimens|utimensat|inotify_\\w+|fanotify_\\w+|posix_fadvise|"
               "fallocate|posix_fallocate|mount|umount2?|setmntent|getmntent|shm_open|shm_unlink|shmget|shmat|"
               "shmdt|shmctl|mq_\\w+|semget|semop|semctl|msgget|msgsnd|msgrcv|msgctl|process_vm_\\w+"),
     "file or shared-memory access",
     "student code reads its inputs from the arguments and leaves its results in device memory; print with "
     "printf to see values"),
    (r"St1[34]basic_[io]?fstream|St13basic_filebuf|St10filesystem|St25__basic_file",
     "file access through C++ file streams or std::filesystem",
     "student code reads its inputs from the arguments; print with printf or std::cout to see values"),
    (_C.format("fork|vfork|_Fork|clone3?|execve|execveat|execv|execvp|execvpe|execl|execlp|execle|fexecve|"
               "system|popen|pclose|posix_spawnp?|wait|waitpid|waitid|wait[34]|kill|killpg|tgkill|tkill|"
               "sigqueue|raise|ptrace|setsid|setpgid|setpgrp|daemon|prctl|arch_prctl|setrlimit|prlimit|"
               "setpriority|nice|unshare|setns|personality|seccomp|set[res]*[ug]id|setgroups|capset|"
               "pthread_create|pthread_atfork|pthread_kill|pthread_sigqueue|pthread_detach|thrd_create|"
               "signal|sigaction|sigset|sysv_signal|bsd_signal|ssignal|sigprocmask|pthread_sigmask|alarm|"
               "ualarm|setitimer|timer_create|timer_settime|timerfd_\\w+|signalfd|eventfd|syscall|"
               "setcontext|swapcontext"),
     "process, thread or signal control",
     "student code runs only inside the launch it was called for: no processes, threads or signals"),
    (r"St6thread|St6system|NSt3jthread", "a thread of its own (std::thread)",
     "student code runs only inside the launch it was called for: no threads"),
    (_C.format("socket|socketpair|connect|bind|listen|accept4?|send|sendto|sendmsg|sendmmsg|recv|recvfrom|"
               "recvmsg|recvmmsg|getaddrinfo|gethostbyname\\w*|getsockopt|setsockopt|shutdown"),
     "network access", "student code talks to no other process"),
    (_C.format("setenv|unsetenv|putenv|clearenv"),
     "changes the environment", "the kit reads its settings from the environment: leave it as it is"),
    (_C.format("exit|_exit|_Exit|quick_exit|at_quick_exit|on_exit"),
     "leaves the program", "return an error code (cudaError_t) from the interface's function instead"),
]]
# Plain names that resolve outside the libraries read by runtime_exports: the linker's and the start files'.
LINKER_NAMES = frozenset("_GLOBAL_OFFSET_TABLE_ __dso_handle __tls_get_addr _DYNAMIC __ehdr_start".split())
# Data of the C library a student's global variable must not replace (runtime_exports lists its functions
# and variables too; these are also refused where that list cannot be read).
LIBC_DATA = frozenset("""stdin stdout stderr environ __environ optarg optind opterr optopt errno
program_invocation_name program_invocation_short_name timezone daylight tzname signgam""".split())
# CUDA runtime functions that hand out other code (driver entry points).
REFUSED_CUDA = re.compile(r"^cuda(GetDriverEntryPoint\w*|GetExportTable|GetProcAddress)$")
# Memory the host can read, declared by the student's file: a __managed__ variable (registered by the CUDA
# compiler's code; on the CPU path cuda_runtime.h puts it in a section of its own).
MANAGED_REGISTRATION = "__cudaRegisterManagedVar"
# The CPU path compiles kernels with -fsanitize=alignment: the compiler's
# check of a misaligned vector access calls these, which the CPU runtime
# implements (common/cpu/src/cml_cpu_runtime.c: the launch fails with
# cudaErrorMisalignedAddress, as on a GPU).
CPU_ALIGNMENT_HANDLERS = frozenset(("__ubsan_handle_type_mismatch_v1", "__ubsan_handle_type_mismatch_v1_abort"))
MANAGED_SECTION = ".cml_cpu_managed"
# A launcher works on device data and leaves it there: a copy to or from the
# host, or memory the host can read, is how a sum or a transpose would be done
# on the CPU instead (no reference uses them; lab 02 fills __constant__ with
# cudaMemcpyToSymbol, which stays allowed).
HOST_DATA = re.compile(r"^cuda(Memcpy|MemcpyAsync|Memcpy2D\w*|Memcpy3D\w*|MemcpyFromSymbol\w*|MemcpyPeer\w*|"
                       r"MemcpyFromArray\w*|MemcpyToArray\w*|MemcpyBatch\w*|MallocManaged|MallocHost|HostAlloc|"
                       r"HostRegister|HostGetDevicePointer|LaunchHostFunc|StreamAddCallback|MemPrefetchAsync)$")
# What a compiler's own load-time function may refer to: <iostream>'s std::ios_base::Init object (GCC < 13
# makes one per file that includes it), the CPU path's race-check start, the file's own static data.
BENIGN_INIT_REFS = frozenset("""_ZNSt8ios_base4InitC1Ev _ZNSt8ios_base4InitD1Ev __cxa_atexit __dso_handle
__tsan_init .bss .data""".split())
# Only the CUDA compiler's registration function may run at load time and
# register an exit handler.
REGISTRATION = re.compile(r"__sti____cudaRegisterAll|__nv_cudaEntityRegisterCallback|__cudaUnregisterBinaryUtil")
# (__tsan_ and __ubsan_: the hooks of the CPU path's instrumentation, which its runtime implements: a student's
# own would switch off its race, bounds or alignment checks)
KIT_PREFIX = re.compile(r"^(cml_|criterion_|cr_|__wrap_|__real_|__tsan_|__ubsan_)")
# The CPU path's runtime (cml_cpu_*) is what translated student code calls (launches, barriers, warp
# operations), except these, refused with why: the bank and sector counts a lab's counters read, and the doors that lift
# the runtime's guard on device memory for its own copies (host code calling them would read a kernel's
# data on the host: the CPU path's __managed__).
_DOOR = ("opens device memory to host code: the CPU path's runtime does that for its own copies only",
         "read and write device memory in kernels")
_OWN = ("the kit's own code", "write the step yourself")
# (the runtime's bank model is lab 01's steps 1-3 written by the kit: a model file may not answer with it)
CPU_RUNTIME_REFUSED = {"cml_cpu_bank_totals": _OWN, "cml_cpu_conflict_degree": _OWN, "cml_cpu_set_bank_model": _OWN,
                       "cml_cpu_sector_counts": _OWN, "cml_cpu_device_open": _DOOR, "cml_cpu_device_close": _DOOR}
CTOR_SECTIONS = (".ctors", ".dtors", ".fini_array", ".preinit_array")
LIBRARY_NAMESPACE = re.compile(r"^_ZN\d*(3cub|6thrust)|CUB_\d+_|THRUST_\d+_")
# Libraries a lab's student code must not call (the technique is the lab's to write), by their symbols;
# NVTX comes in with CUB and Thrust.
LIBRARY_CALL = re.compile(r"^(cublas|cusparse|cufft|curand|cusolver|cutensor|nvtx|_ZN\d*(3cub|6thrust|4nvtx3))",
                          re.I)
NEW_DELETE = re.compile(r"^_Z(nw|na|dl|da)")
# placement new and delete: inline in <new>, emitted (weak) by some compilers; the standard lets no one replace them
PLACEMENT_NEW = frozenset("_ZnwmPv _ZnamPv _ZdlPvS_ _ZdaPvS_".split())
# Headers of the libraries a lab's student code must not use (CUB, Thrust, cuBLAS ...), as compiled.
LIBRARY_HEADER = re.compile(r"/(cub|thrust|cublas\w*|cusparse\w*|cufft\w*|cutlass|cute)(/|\.h)")
# An instruction that enters the kernel without the C library (inline assembly).
SYSCALL = re.compile(r"^(syscall|sysenter|int\s+\$0x80)\b")


# cudaMemcpy(dst, src, bytes, kind) and cudaMemcpyAsync(..., kind, stream): the kind is the 4th argument (%ecx)
DEVICE_COPIES = frozenset({"cudaMemcpy", "cudaMemcpyAsync"})
KIND_DEVICE_TO_DEVICE = 3


def device_to_device(before: list[str]) -> bool:
    """Whether the instructions before a cudaMemcpy call set its kind
    (%ecx, the 4th argument on x86-64) to cudaMemcpyDeviceToDevice: the
    last instruction that writes %ecx/%rcx must load the constant 3 (any
    other way of setting it, cudaMemcpyDefault included, cannot be told
    and counts as a copy to or from the host)."""
    for ins in reversed(before):
        op, _, args = ins.partition(" ")
        dest = args.strip().rsplit(",", 1)[-1].strip()
        if dest in ("%ecx", "%rcx", "%cx", "%cl"):
            return op.startswith("mov") and args.strip().startswith(f"${KIND_DEVICE_TO_DEVICE:#x},")
        if op.startswith("call"):
            return False   # %ecx does not survive a call
    return False


def _device_stub(code: list[str]) -> bool:
    """The host body the CUDA compiler gives a __device__ function: exit(1)
    and nothing else."""
    # host compilers that default to -fcf-protection (Ubuntu's gcc) open it with endbr64, and some
    # align the stack with a push/pop pair: up to 8 instructions, one call, the last
    body = [c for c in code if not c.startswith(("endbr64", "nop"))]
    return (2 <= len(body) <= 8 and any("$0x1," in c for c in body) and body[-1].startswith("call")
            and sum(c.startswith("call") for c in body) == 1
            and not any(c.startswith(("jmp", "ret", "j")) for c in body))


def _refused_call(name: str) -> tuple[str, str] | None:
    """(what it is, what to do instead) when a referenced name is a
    capability student code may not use, else None."""
    for pat, what, fix in REFUSED_CALLS:
        if pat.search(name):
            return what, fix
    return None
