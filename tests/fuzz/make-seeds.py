#!/usr/bin/env python3
"""Write the seed corpus of the fuzz targets (tests/fuzz/corpus/TARGET/).

Run from anywhere: python3 tests/fuzz/make-seeds.py [TERN]. TERN (default:
the repository's ./tern) gives the default spec (`tern spec`, plain and
--rootless); the other seeds are written out here: typical option strings,
a state.json of each shape, valid migration frames (type: 4 bytes, length:
8 bytes, both big-endian, then the payload; see tern-migrate-protocol(7)),
a pagemap image. The rootfs-sync seeds (a manifest and a change stream, tern's
private format) come from the fuzz target itself, built by run-fuzz.sh
(TERN_FUZZ_WRITE_SEEDS=DIR makes it write them and exit). Seeds are small: the fuzzer finds the rest."""
import json
import os
import struct
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(os.path.dirname(here))
tern = sys.argv[1] if len(sys.argv) > 1 else os.path.join(top, "tern")


def put(target, name, data):
    d = os.path.join(here, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def spec(rootless):
    with tempfile.TemporaryDirectory() as d:
        args = [tern, "spec"] + (["--rootless"] if rootless else [])
        subprocess.run(args, cwd=d, check=True)
        with open(os.path.join(d, "config.json")) as f:
            return f.read()


# ---- config.json ----
default = spec(False)
rootless = spec(True)
put("config", "default.json", default)
put("config", "rootless.json", rootless)
c = json.loads(default)
c["process"]["rlimits"] = [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024},
                           {"type": "RLIMIT_CORE", "hard": 0, "soft": 0}]
c["process"]["scheduler"] = {"policy": "SCHED_OTHER", "nice": 5}
c["process"]["ioPriority"] = {"class": "IOPRIO_CLASS_BE", "priority": 4}
c["linux"]["cgroupsPath"] = "system.slice:tern:c1"
c["linux"]["personality"] = {"domain": "LINUX32"}
c["linux"]["resources"] = {
    "memory": {"limit": 67108864, "swap": 134217728, "reservation": 33554432},
    "cpu": {"shares": 512, "quota": 50000, "period": 100000, "cpus": "0-1", "mems": "0"},
    "pids": {"limit": 100},
    "blockIO": {"weight": 500, "throttleReadBpsDevice": [{"major": 8, "minor": 0, "rate": 1048576}]},
    "hugepageLimits": [{"pageSize": "2MB", "limit": 2097152}],
    "devices": [{"allow": False, "access": "rwm"},
                {"allow": True, "type": "c", "major": 1, "minor": 3, "access": "rw"},
                {"allow": True, "type": "b", "major": 8, "access": "r"}],
    "unified": {"memory.high": "50000000"},
}
c["mounts"].append({"destination": "/data", "type": "bind", "source": "/srv",
                    "options": ["rbind", "ro", "nosuid", "rprivate", "idmap"],
                    "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}],
                    "gidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}]})
c["mounts"].append({"destination": "/scratch", "type": "tmpfs", "source": "tmpfs",
                    "options": ["mode=1777", "size=64m", "tmpcopyup", "rro", "rnosuid"]})
put("config", "full.json", json.dumps(c, indent=1))
# runtime-spec 1.3's intelRdt and a deadline scheduler (intel-rdt.c,
# proc-attrs.c)
r = json.loads(default)
r["process"]["scheduler"] = {"policy": "SCHED_DEADLINE", "runtime": 2000000,
                             "deadline": 20000000, "period": 40000000,
                             "flags": ["SCHED_FLAG_RESET_ON_FORK", "SCHED_FLAG_DL_OVERRUN"]}
r["process"]["ioPriority"] = {"class": "IOPRIO_CLASS_IDLE", "priority": 0}
r["linux"]["intelRdt"] = {"closID": "guaranteed", "l3CacheSchema": "L3CODE:0=7f0\nL3DATA:0=1f",
                          "memBwSchema": "MB:0=20;1=70",
                          "schemata": ["L3:0=7f0;1=1f", "L2:0=f;1=f;2=f;3=f", "MB:0=20;1=70"],
                          "enableMonitoring": True}
put("config", "rdt-sched.json", json.dumps(r, indent=1))
n = json.loads(default)  # runtime-spec 1.3: NUMA memory policy, exec CPU affinity
n["ociVersion"] = "1.3.0"
n["process"]["execCPUAffinity"] = {"initial": "0", "final": "0-1"}
n["linux"]["memoryPolicy"] = {"mode": "MPOL_INTERLEAVE", "nodes": "0-1,3",
                              "flags": ["MPOL_F_STATIC_NODES"]}
put("config", "numa.json", json.dumps(n, indent=1))
resources = c["linux"]["resources"]

# ---- state.json ----
put("state", "runc-created.json", json.dumps({
    "ociVersion": "1.0.2-dev", "id": "t1", "pid": 6801, "status": "created",
    "bundle": "/tmp/ls/b", "rootfs": "/tmp/ls/b/rootfs",
    "created": "2026-12-02T09:41:34.076018009Z", "annotations": {"a.b": "c\"d"}, "owner": ""}))
put("state", "tern-disk.json", json.dumps({
    "ociVersion": "1.2.0", "id": "c1", "status": "running", "pid": 4242, "bundle": "/b",
    "annotations": {"k": "v"}, "rootfs": "/b/rootfs", "created": "2026-12-05T10:00:00.000000001Z",
    "owner": "", "pid_start_time": 123456, "cgroup_path": "/tern/c1",
    "cgroup_paths": {"/sys/fs/cgroup/memory": "/tern/c1", "/sys/fs/cgroup/unified": "/tern/c1"},
    "systemd_cgroup": False, "own_cgroup": True, "config_path": "/run/tern/c1/config.json",
    "detached_stdio": False}))
put("state", "hook.json", '{"ociVersion":"1.2.0","id":"t1","status":"stopped","bundle":"/b"}')

# ---- kill SIGNAL ----
for i, s in enumerate(["KILL", "SIGTERM", "9", "RTMIN+3", "rtmax-2", "sigusr1", "64", "SIGRTMIN"]):
    put("signal", "sig%d" % i, s)

# ---- mount options (one per line) ----
for i, o in enumerate(["ro\nnosuid\nnodev\nnoexec\nrbind\nrprivate",
                       "bind\nidmap\nrslave",
                       "mode=755\nsize=65536k\nnr_inodes=1k",
                       "rro\nrnosuid\nrnodev\nrnoexec\nrrelatime\nratime",
                       "tmpcopyup\nstrictatime\nnoatime\nlazytime",
                       "ridmap\nrshared\nunbindable\nsync\ndirsync\nremount\nmand",
                       "rw\nsuid\ndev\nexec\natime\nnostrictatime\nloud\nsilent"]):
    put("mount-options", "opts%d" % i, o)

# ---- mountinfo lines ----
put("mountinfo", "typical",
    "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro\n"
    "23 22 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "24 23 0:25 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "25 24 0:26 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup rw,memory\n"
    "26 22 0:5 / /dev rw,nosuid shared:2 - devtmpfs udev rw,size=4017476k,nr_inodes=1004369,mode=755\n"
    "27 22 0:48 / /run/user/0 rw,nosuid,nodev,relatime shared:300 - tmpfs tmpfs rw,size=803496k,mode=700\n")
put("mountinfo", "escaped",
    "36 35 98:0 /mnt1 /mnt\\040with\\040space rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
    "37 36 0:5 / /proc rw,nosuid shared:2 propagate_from:1 - proc proc rw\n")

# ---- cgroup resources (tern update --resources) ----
put("cgroup", "full.json", json.dumps(resources))
put("cgroup", "small.json", '{"memory":{"limit":-1,"swap":-1},"cpu":{"quota":-1},"pids":{"limit":-1}}')
put("cgroup", "rt.json", '{"cpu":{"realtimeRuntime":950000,"realtimePeriod":1000000,"idle":1},'
    '"memory":{"kernel":1,"swappiness":10,"disableOOMKiller":true,"checkBeforeUpdate":true},'
    '"rdma":{"mlx4_0":{"hcaHandles":3,"hcaObjects":10000}},'
    '"blockIO":{"weightDevice":[{"major":8,"minor":0,"weight":500,"leafWeight":300}]}}')

# ---- cgroup paths: cgroupsPath, then exec --cgroup specs ----
for i, s in enumerate(["system.slice:tern:abc\nsub",
                       ":tern:abc\nmemory:sub\npids:sub/a",
                       "machine-a-b.slice:pfx:name\nmemory,pids:a/b\ncpu:c",
                       "-.slice:x:y.scope\n../escape",
                       "/plain/path\nmemory:"]):
    put("cgroup-path", "p%d" % i, s)

# ---- cgroup counter files (NUL between files; order: fuzz-cgroup-stats.c) ----
stats = [
    "anon 4096\nfile 8192\nkernel_stack 16384\nslab 0\nsock 0\nshmem 0\npgfault 12\n",  # memory.stat
    "123456\n", "max\n", "234567\n",  # memory.current, .max, .peak
    "low 0\nhigh 0\nmax 2\noom 1\noom_kill 1\n",  # memory.events
    "0\n", "max\n",  # memory.swap.current, .max
    "usage_usec 1000\nuser_usec 600\nsystem_usec 400\nnr_periods 5\nnr_throttled 1\nthrottled_usec 10\n",
    "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n8:16 rbytes=1\n",  # io.stat
    "3\n", "max\n",  # pids.current, .max
    "99999\n", "100 200 300\n",  # cpuacct.usage, .usage_percpu
    "cpu user system\n0 50 50\n1 100 100\n2 150 150\n",  # cpuacct.usage_all
    "user 10\nsystem 20\n",  # cpuacct.stat
    "9223372036854771712\n", "4096\n", "8192\n", "0\n", "4096\n", "0\n",
    "8:0 Read 4096\n8:0 Write 0\n8:0 Sync 0\n8:0 Async 4096\n8:0 Total 4096\nTotal 4096\n",
    "8:0 Read 1\n8:0 Total 1\nTotal 1\n",
    "8:0 Read 4096\nTotal 4096\n", "8:0 Read 1\n", "8:0 Read 0\n", "8:0 1024\n",
    "2097152\n", "0\n", "0\n", "0\n",
]
put("cgroup-stats", "all", "\0".join(stats))
put("cgroup-stats", "v2-only", "\0".join(stats[:11]))

# ---- exec overrides ----
put("exec-opts", "user", "u 1000:1000\ng 10\ng 20\ne PATH=/bin\ne FOO=bar\nw /tmp\nc CAP_NET_ADMIN\nsh\n-c\ntrue")
put("exec-opts", "uid-only", "u 0\nid")
put("exec-opts", "caps", "c CAP_SYS_ADMIN\nc cap_chown\ne HOME\nls")

# ---- exec --process FILE ----
p = json.loads(default)["process"]
p["rlimits"] = [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 512},
                {"type": "RLIMIT_NPROC", "hard": 100, "soft": 100}]
p["scheduler"] = {"policy": "SCHED_BATCH", "nice": 0, "flags": ["SCHED_FLAG_RESET_ON_FORK"]}
p["ioPriority"] = {"class": "IOPRIO_CLASS_IDLE", "priority": 0}
put("process", "process.json", json.dumps(p, indent=1))
put("process", "minimal.json", '{"args":["sh"],"cwd":"/","user":{"uid":0,"gid":0}}')
put("process", "affinity.json",
    '{"args":["sh"],"cwd":"/","execCPUAffinity":{"initial":"1","final":"0-1"}}')

# ---- checkpoint/restore options (one argument per line) ----
put("criu-opts", "cgmode", "--manage-cgroups-mode\nsoft\n--tcp-established\n--ext-unix-sk")
put("criu-opts", "empty-ns", "--empty-ns\nnetwork\n--shell-job\n--file-locks\n--auto-dedup")
put("criu-opts", "paths", "--image-path=/tmp/img\n--work-path\n/tmp/w\n--parent-path\n../p\n--lazy-pages")
put("criu-opts", "bad", "--manage-cgroups-mode=strict\n--empty-ns=ipc")


# ---- migration frames ----
def frame(t, payload):
    if isinstance(payload, (dict, list)):
        payload = json.dumps(payload)
    if isinstance(payload, str):
        payload = payload.encode()
    return struct.pack(">IQ", t, len(payload)) + payload


HELLO, ERROR, OFFER, ACCEPT, MANIFEST, RDATA, RDONE, IFILE, IDATA, IDONE, PSERVER, RUNNING, DONE, PROGRESS = range(1, 15)


def hello(role):
    return frame(HELLO, {"magic": "tern-migrate", "version": 2, "role": role})


small_config = json.dumps(json.loads(default), separators=(",", ":"))
# read by the target (even size): the source's messages
to_target = hello("source") + frame(OFFER, {
    "id": "c1", "config": small_config, "mode": "post-copy", "post_copy": True, "pre_copy": False,
    "tcp_established": False, "memory_bytes": 1048576}) + frame(PSERVER, {
    "address": "192.0.2.1", "port": 7000, "cert": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}) + \
    frame(IFILE, {"name": "core-1.img", "size": 4}) + frame(IDATA, b"\x00\x01\x02\x03") + frame(DONE, {})
if len(to_target) % 2:
    to_target += frame(PROGRESS, {"event": "x"})
    if len(to_target) % 2:
        to_target += frame(PROGRESS, {"event": "xy"})
put("migrate-messages", "to-target", to_target)
# read by the source (odd size): the target's messages
to_source = hello("target") + frame(ACCEPT, {"id": "c1", "mode": "pre-copy", "cert": "PEM"}) + \
    frame(MANIFEST, b"\x00" * 8) + frame(RUNNING, {"ran_for_ms": 12}) + frame(ERROR, "gave up\x07\n")
if len(to_source) % 2 == 0:
    to_source += b"\x00"
put("migrate-messages", "to-source", to_source)
put("migrate-messages", "wrong-version", frame(HELLO, {"magic": "tern-migrate", "version": 1, "role": "source"}))

# ---- image stream (no HELLO: tern_mig_images_recv reads right after it) ----
pagemap = bytes([0x19, 0x43, 0x56, 0x54, 0x25, 0x40, 0x08, 0x56, 2, 0, 0, 0, 0x08, 0x01,
                 10, 0, 0, 0, 0x08, 0x80, 0x20, 0x10, 0x00, 0x20, 0x02, 0x28, 0xac, 0x02,
                 6, 0, 0, 0, 0x08, 0x01, 0x10, 0x03, 0x20, 0x06,
                 6, 0, 0, 0, 0x08, 0x02, 0x10, 0x02, 0x20, 0x02,
                 4, 0, 0, 0, 0x10, 0x04, 0x20, 0x04])
put("pagemap", "pagemap-1.img", pagemap)
put("pagemap", "head-only.img", pagemap[:14])
images = frame(IFILE, {"name": "pre.img", "size": 3, "dir": "pre-1"}) + frame(IDATA, "abc") + \
    frame(IFILE, {"name": "pre.img", "size": 2, "dir": "pre-2"}) + frame(IDATA, "de") + frame(IDONE, {}) + \
    frame(IFILE, {"name": "pagemap-1.img", "size": len(pagemap)}) + frame(IDATA, pagemap) + \
    frame(IFILE, {"name": "pages-1.img", "size": 6, "part": True}) + frame(IDATA, "123") + frame(IDATA, "456") + \
    frame(IFILE, {"name": "pages-1.img", "size": 2, "part": True}) + frame(IDATA, "78") + \
    frame(IFILE, {"name": "empty.img", "size": 0}) + frame(IDATA, "") + frame(IDONE, {})
put("migrate-images", "pre-and-final", images)
put("migrate-images", "one", frame(IFILE, {"name": "core-1.img", "size": 1}) + frame(IDATA, "x") +
    frame(IDONE, {}) + frame(IDONE, {}))

# ---- rootfs sync: the fuzz target writes a real manifest and stream ----
rootfs_bin = os.path.join(top, "tests/.work/fuzz/build/fuzz-rootfs-sync")
if os.path.exists(rootfs_bin):
    d = os.path.join(here, "corpus", "rootfs-sync")
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ, TERN_FUZZ_WRITE_SEEDS=d)
    subprocess.run([rootfs_bin], env=env, check=True)
else:
    print("make-seeds.py: no %s (tests/fuzz/run-fuzz.sh --build-only): rootfs-sync seeds not written"
          % rootfs_bin, file=sys.stderr)
