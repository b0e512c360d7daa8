/* criu's cache of its kernel probes, kept where criu will not keep it.
 *
 * Each criu run first probes the kernel (kerndat: userfaultfd, pagemap,
 * a veth in a new netns, iptables...), tens of ms here, and two or three
 * criu runs fall inside a migration's downtime. criu saves the result in
 * /run/criu.kdat and reads it back on later runs, but it saves only when
 * /run is a tmpfs, so that a reboot drops it. On a host whose /run is on a
 * disk it probes every time.
 *
 * tern then makes the cache itself: `criu check` in a private mount
 * namespace whose /run is a tmpfs, and the file it saved copied to the
 * host's /run/criu.kdat with the boot's id (/proc/sys/kernel/random/
 * boot_id) in an xattr of tern's (trusted.tern.boot_id). A file that has
 * not this boot's id is made anew, before any criu of tern's reads it.
 * criu reads the file wherever it lies; its own magic refuses a file made
 * by another criu build.
 *
 * A criu started by another program between a reboot and tern's first
 * criu would read a stale file: only where /run survives reboots, which
 * the FHS forbids. */
#pragma once

/* Best effort, never an error: the worst case is criu probing as before.
 * Cheap when the cache is there (a statfs, an open, a getxattr). */
void tern_criu_kdat_prepare(const char *criu);
