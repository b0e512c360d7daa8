#!/usr/bin/env bats
# linux.seccomp and 32-bit (i386) system calls made with int $0x80 from a
# 64-bit process: the filter sees them as AUDIT_ARCH_I386.
#
# Some kernels refuse int $0x80 altogether (IA32 emulation off: the
# development machine's kernel gives the process a general protection
# fault even outside any container). There the test cannot run and says so;
# scripts/test.sh also runs this file in the cgroup v2 qemu guest, on
# Debian's own kernel, with TERN_REQUIRE_COMPAT32=1, where a kernel without
# int $0x80 is a failure, not a skip.

# Every test here also runs on pure cgroup v2 in scripts/test.sh's qemu
# guests (they run the tests tagged vm:v2).
# bats file_tags=vm:v2

load helpers
load seccomp-helpers

# require_compat32: int $0x80 works on this kernel, outside any container.
require_compat32() {
	local out rc=0
	out=$("$BASE_ROOTFS/bin/seccomp-call" -32 getpid 2>&1) || rc=$?
	[ "$rc" -eq 0 ] && [[ "$out" == "getpid: ok "* ]] && return 0
	if [ -n "${TERN_REQUIRE_COMPAT32:-}" ]; then
		echo "int \$0x80 does not work on this kernel (exit $rc: $out)" >&2
		return 1
	fi
	skip "THIS KERNEL REFUSES int \$0x80 (IA32 emulation off, exit $rc): tested in the cgroup v2 qemu guest instead"
}

@test "seccomp: architectures: a 32-bit syscall is filtered by the x86 rules, or killed when x86 is not listed" {
	require_compat32
	seccomp "{\"defaultAction\": \"SCMP_ACT_ALLOW\",
		\"architectures\": [\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_X86\", \"SCMP_ARCH_X32\"],
		\"syscalls\": [$(rule getppid SCMP_ACT_ERRNO '{errnoRet: 42}')]}"
	set_args /bin/seccomp-call -32 getppid , getpid
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "getppid: errno 42" ]
	[[ "${lines[1]}" == "getpid: ok "* ]]
	# x86 not in the filter: any i386 syscall gets the bad-arch action (kill)
	update_config '.linux.seccomp.architectures = ["SCMP_ARCH_X86_64"]'
	run_container
	[ "$status" -eq "$SIGSYS_STATUS" ]
	[ -z "$output" ]
	# and without the filter the same calls just work
	update_config 'del(.linux.seccomp)'
	run_container
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "getppid: ok "* ]]
}


@test "seccomp: architectures: an i386 syscall above every i386 syscall the profile names gets ENOSYS, by the i386 numbers" {
	require_compat32
	# runc runs much of its own init under the filter: this allow list
	# is too short for it
	is_tern || skip "runc needs more syscalls after loading the filter"
	# What a static glibc program needs (as in seccomp.bats). The highest
	# i386 number among them is rseq's, 386 (x86_64: 334): i386 nr 1000
	# and clone3 (435) are newer than the profile, ENOSYS; i386 nr 350
	# (finit_module) is below 386, not listed, so EPERM, though on x86_64
	# 350 would be above 334
	seccomp "{\"defaultAction\": \"SCMP_ACT_ERRNO\",
		\"architectures\": [\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_X86\", \"SCMP_ARCH_X32\"],
		\"syscalls\": [{\"names\": [\"execve\",\"brk\",\"arch_prctl\",\"set_tid_address\",
			\"set_robust_list\",\"rseq\",\"prlimit64\",\"readlink\",\"getrandom\",\"mprotect\",
			\"newfstatat\",\"fstat\",\"write\",\"exit_group\",\"exit\",\"mmap\",\"munmap\",
			\"uname\",\"getpid\"], \"action\": \"SCMP_ACT_ALLOW\"}]}"
	set_args /bin/seccomp-call -32 nr:1000 , nr:435 0 0 , nr:350 0 0 0 , getppid , getpid
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "nr:1000: errno 38" ]
	[ "${lines[1]}" = "nr:435 0 0: errno 38" ]
	[ "${lines[2]}" = "nr:350 0 0 0: errno 1" ]
	[ "${lines[3]}" = "getppid: errno 1" ]
	[[ "${lines[4]}" == "getpid: ok "* ]]
}
