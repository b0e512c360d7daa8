#!/usr/bin/env python3
"""Tables of bench/criu-phases.sh: criu-phases.py OUTDIR [CRIU].

Reads OUTDIR/times.tsv (one line per timed command: pass, runtime,
operation, round, start and end in us, the criu logs it made with their
birth and change times), the criu logs, the strace files and the perf
trace summaries, and prints markdown: per operation the median (min-max)
in ms of each phase over the rounds of the main pass.
"""
import json
import os
import re
import statistics
import sys

# criu's log messages that open each phase (the first line matching the
# regular expression, searched after the previous phase's line); a phase
# runs until the next one opens. A phase whose message is not in a log is
# shown as "-" and its time falls into the phase before it.
DUMP_PHASES = [
    ("start-up in log (cpu, kdat cache, options)", None),
    ("pre-freeze (cgroup props, irmap)", r"Dumping processes \(pid"),
    ("freeze + seize", r"Detected cgroup V1 freezer|freezing cgroup|SEIZE "),
    ("collect mounts, netns sockets, pidns", r"net: Lock network"),
    ("task: vmas, fds, regs, files", r"Dumping task \(pid"),
    ("memory pages (drain + write)", r"Dumping pages \(type"),
    ("core, task cgroups, parasite cure, mm", r"Dumping core \(pid"),
    ("dump mounts (tmpfs tar of /dev)", r"mnt: Dumping mountpoints"),
    ("pstree + namespaces (ipc, uts, net)", r"Dumping file-locks"),
    ("cgroup image, inventory, net unlock", r"Namespaces dump complete"),
    ("unfreeze / kill + stats", r"Unfreezing tasks|Killing|Dumping finished"),
    ("after 'Dumping finished'", r"Dumping finished successfully"),
]
RESTORE_PHASES = [
    ("start-up in log (cpu, kdat cache, cgroups)", None),
    ("read images, plan (pstree, fds, mounts)", r"Running pre-restore scripts"),
    ("fork root task, new namespaces", r"Forking task with"),
    ("uts, ipc (, net) namespaces", r"Restoring namespaces"),
    ("mounts (incl. tmpfs untar of /dev)", r"^\(\S+\)\s+1: mnt"),
    ("files, vmas, memory, creds", r"Running post-setup-namespaces scripts"),
    ("restorer blob (pie) until restored", r"Restore via sigreturn"),
    ("post-restore: net unlock, ghosts, resume", r"Running post-restore scripts"),
    ("after 'Restore finished'", r"Restore finished successfully"),
]

# tern's own figures (--format json of snapshot, rollback, clone)
TERN_STATS = {
    "frozen_ms": "tern's json: frozen_ms",
    "fs_ms": "tern's json: fs_ms (rootfs record / put back)",
    "criu_ms": "tern's json: criu_ms (tern's clock around criu, its start included)",
}


def tern_stats(out, x):
    p = os.path.join(out, "logs", "%s-%s-%s-%s.out" % (x["pass_"], x["r"], x["op"], x["n"]))
    try:
        with open(p) as f:
            return json.loads(f.read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return {}


TS = re.compile(r"^\((\d+)\.(\d+)\)")

OPS = [
    ("tern", "snapshot", "tern snapshot (1st)", "dump"),
    ("tern", "snapshot2", "tern snapshot (2nd)", "dump"),
    ("tern", "checkpoint", "tern checkpoint", "dump"),
    ("runc", "checkpoint-lr", "runc checkpoint --leave-running", "dump"),
    ("tern", "rollback", "tern rollback (cold)", "restore"),
    ("tern", "clone", "tern clone (cold, one)", "restore"),
    ("tern", "restore", "tern restore -d", "restore"),
    ("runc", "restore", "runc restore -d", "restore"),
]


def logname(path):
    """dump.log, restore.log, ... of OUTDIR/logs/PASS-RT-OP-ROUND.K.NAME"""
    return re.sub(r"^.*?-\d+\.\d+\.", "", os.path.basename(path))


def log_lines(path):
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            m = TS.match(line)
            if m:
                out.append((int(m.group(1)) + int(m.group(2)) / 1e6, line.rstrip("\n")))
    return out


def phases(path, table):
    lines = log_lines(path)
    if not lines:
        return None
    marks = [0.0]
    pos = 0
    for _, rx in table[1:]:
        r = re.compile(rx)
        found = None
        for i in range(pos, len(lines)):
            if r.search(lines[i][1]):
                found = i
                break
        if found is None:
            marks.append(None)
        else:
            marks.append(lines[found][0])
            pos = found
    end = lines[-1][0]
    res = {}
    for k, (name, _) in enumerate(table):
        if marks[k] is None:
            res[name] = None
            continue
        nxt = end
        for j in range(k + 1, len(table)):
            if marks[j] is not None:
                nxt = marks[j]
                break
        res[name] = (nxt - marks[k]) * 1000
    return res, end * 1000


def gaps(path, top=8, min_ms=1.0):
    lines = log_lines(path)
    g = []
    for i in range(1, len(lines)):
        d = (lines[i][0] - lines[i - 1][0]) * 1000
        if d >= min_ms:
            g.append((d, lines[i - 1][1][:110], lines[i][1][:110]))
    g.sort(reverse=True)
    return g[:top]


def fmt(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    med = statistics.median(vals)
    if len(vals) == 1:
        return "%.1f" % med
    return "%.1f (%.1f-%.1f)" % (med, min(vals), max(vals))


def main():
    out = sys.argv[1]
    rows = []
    with open(os.path.join(out, "times.tsv")) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            logs = []
            if len(p) > 6 and p[6]:
                for x in p[6].split(","):
                    path, b, m = x.split("@")
                    logs.append((path, float(b), float(m)))
            rows.append(dict(pass_=p[0], r=p[1], op=p[2], n=p[3], t0=int(p[4]) / 1e6,
                             t1=int(p[5]) / 1e6, logs=logs))

    env = open(os.path.join(out, "env.txt")).read()
    print("## Run\n\n```\n" + env.strip() + "\n```\n")

    for kind in ("dump", "restore"):
        table = DUMP_PHASES if kind == "dump" else RESTORE_PHASES
        ops = [o for o in OPS if o[3] == kind]
        cols = {}
        for r, op, title, _ in ops:
            sel = [x for x in rows if x["pass_"] == "main" and x["r"] == r and x["op"] == op]
            if not sel:
                continue
            c = {"wall": [], "pre": [], "span": [], "post": [], "other": [], "outside": [],
                 "n": len(sel)}
            for name, _ in table:
                c[name] = []
            for k in TERN_STATS:
                c[k] = []
            for x in sel:
                c["wall"].append((x["t1"] - x["t0"]) * 1000)
                st = tern_stats(out, x)
                for k in TERN_STATS:
                    c[k].append(st.get(k))
                main_log = [l for l in x["logs"]
                            if logname(l[0]) in ("dump.log", "restore.log")]
                if not main_log:
                    continue
                path, b, m = main_log[0]
                ph = phases(path, table)
                if ph is None:
                    continue
                res, span = ph
                c["span"].append(span)
                if x is not None and tern_stats(out, x).get("criu_ms") is not None:
                    c["outside"].append(tern_stats(out, x)["criu_ms"] - span)
                c["pre"].append((b - x["t0"]) * 1000)
                c["post"].append((x["t1"] - b) * 1000 - span)
                for name, _ in table:
                    c[name].append(res[name])
                c["other"].append(", ".join(logname(l[0]) for l in x["logs"]))
            cols[title] = c
        if not cols:
            continue
        titles = list(cols)
        print("## criu %s: median (min-max) ms over %s rounds\n" %
              (kind, "/".join(str(cols[t]["n"]) for t in titles)))
        print("| phase | " + " | ".join(titles) + " |")
        print("|---|" + "---|" * len(titles))
        print("| **wall, command** | " + " | ".join("**%s**" % fmt(cols[t]["wall"]) for t in titles) + " |")
        for k, label in TERN_STATS.items():
            if any(v is not None for t in titles for v in cols[t][k]):
                print("| %s | " % label + " | ".join(fmt(cols[t][k]) for t in titles) + " |")
        if any(cols[t]["outside"] for t in titles):
            print("| criu_ms minus criu's log span: criu's exec, loading, RPC, exit (and a "
                  "lazy-pages daemon's start) | " + " | ".join(fmt(cols[t]["outside"]) for t in titles) + " |")
        print("| pre: start until criu's log opens (coarse clock) | " +
              " | ".join(fmt(cols[t]["pre"]) for t in titles) + " |")
        print("| **criu log, first to last line** | " +
              " | ".join("**%s**" % fmt(cols[t]["span"]) for t in titles) + " |")
        for name, rx in table:
            print("| &nbsp;&nbsp;%s%s | " % (name, (" [`%s`]" % rx.replace("|", "\\|")) if rx else " [log open]") +
                  " | ".join(fmt(cols[t][name]) for t in titles) + " |")
        print("| post: criu's last line until the command returns (coarse clock) | " +
              " | ".join(fmt(cols[t]["post"]) for t in titles) + " |")
        print("| criu logs the command made | " +
              " | ".join(sorted(set(cols[t]["other"]))[0] if cols[t]["other"] else "-" for t in titles) + " |")
        print()

    # the biggest silent gaps of one log of each operation (round 1)
    print("## Largest gaps between two log lines (round 1 of the main pass)\n")
    for r, op, title, kind in OPS:
        sel = [x for x in rows if x["pass_"] == "main" and x["r"] == r and x["op"] == op and x["n"] == "1"]
        for x in sel:
            for path, _, _ in x["logs"]:
                print("### %s: %s\n\n```" % (title, os.path.basename(path)))
                for d, a, b in gaps(path):
                    print("%6.1f ms  after: %s\n           before: %s" % (d, a, b))
                print("```\n")

    # trace pass
    st = [x for x in rows if x["pass_"] == "trace"]
    if st:
        print("## Trace pass (perf trace of sched_process_exec/exit, no ptrace): one round\n")
        print("Times from the runtime's exec (perf's own start-up left out); "
              "`exit` is the process's last thread.\n")
        for x in st:
            f = os.path.join(out, "logs", "trace-%s-%s-%s.perf" % (x["r"], x["op"], x["n"]))
            if not os.path.exists(f):
                continue
            print("### %s %s\n\n```" % (x["r"], x["op"]))
            ev = parse_perf_sched(f)
            for t, pid, what in ev:
                print("%8.1f ms  %7s  %s" % (t, pid, what))
            for path, b, m in x["logs"]:
                lines = log_lines(path)
                if lines:
                    print("          %s: its lines span %.1f ms" % (logname(path), lines[-1][0] * 1000))
            print("```\n")

    for name in ("perf-trace-snapshot.txt", "perf-trace-rollback.txt"):
        p = os.path.join(out, name)
        if os.path.exists(p):
            print("## %s (perf trace -s; per process, syscalls above 0.5 ms in all)\n\n```" % name)
            print(perf_summary(p))
            print("```\n")


def parse_perf_sched(path):
    """exec and (whole-process) exit events of a perf trace, ms from the first"""
    ev = []
    rx = re.compile(r"^\s*([\d.]+)\s+\S+/(\d+)\s+sched:(sched_process_exec|sched_process_exit)\((.*)\)")
    for line in open(path, errors="replace"):
        m = rx.match(line)
        if not m:
            continue
        t, pid, kind, args = float(m.group(1)), m.group(2), m.group(3), m.group(4)
        if kind == "sched_process_exec":
            fm = re.search(r'filename: "([^"]*)"', args)
            ev.append((t, pid, "exec " + (fm.group(1) if fm else "?")))
        elif "group_dead: 1" in args:
            cm = re.search(r'comm: "([^"]*)"', args)
            ev.append((t, pid, "exit (%s)" % (cm.group(1) if cm else "?")))
    if not ev:
        return ev
    t0 = ev[0][0]
    return [(t - t0, p, w) for t, p, w in ev]


def perf_summary(path):
    out = []
    cur = None
    for line in open(path, errors="replace"):
        s = line.rstrip("\n")
        m = re.match(r"^\s*(\S.*) \((\d+)\), (\d+) events", s)
        if m:
            cur = s.strip()
            out.append(cur)
            continue
        m = re.match(r"^\s+(\w+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+", s)
        if m and cur and float(m.group(4)) >= 0.5:
            out.append("    %-20s calls %6s  total %8.2f ms" % (m.group(1), m.group(2), float(m.group(4))))
    return "\n".join(out)


if __name__ == "__main__":
    main()
