#!/usr/bin/env bash
# Checks the packages tools/packages.sh wrote in DIST_DIR.
#
#   bash tools/packages-check.sh DIST_DIR VERSION     (make test-dist, make test-packages)
#
# Every .rpm (rpm -qp, Debian's rpm): name, version, architecture, licence; its files with
# owners and modes; /etc/otelcol-gym/* flagged %config(noreplace); the scriptlets are
# deploy/packages/*.sh; the binary is the release archive's. Every .deb (dpkg-deb): the same
# fields, files, conffiles and maintainer scripts.
#
# Then the amd64 .deb is installed with dpkg in a clean Debian root (debootstrap minbase with
# systemd and procps; built once and cached under _build/pkgtest/, DEBIAN_MIRROR and DEBIAN_SUITE choose
# it): the system user, the files, the conffiles dpkg registered, the state directory, the unit
# enabled, verified and its hardening scored by systemd-analyze in the root. The unit's
# ExecStart, with its EnvironmentFile, runs in that root as the unit's User, in network and pid
# namespaces of its own (the default configuration's fixed loopback ports collide with nothing):
# its health check must answer, its checkpoint land in the state directory, and SIGHUP
# (ExecReload) must leave it serving; SIGTERM must end it cleanly. Last, dpkg --purge must remove
# it all but the user.
# Needs root (debootstrap, chroot, unshare); GYMEVENTS names the gymevents binary.
set -euo pipefail
cd "$(dirname "$0")/.."
dist=$(realpath "$1")
version=$2
gymevents=$(realpath "${GYMEVENTS:-_build/gymevents}")
# The Debian mirror this machine's apt uses (its deb822 sources, else sources.list), unless
# DEBIAN_MIRROR names one.
apt_mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' "$f" | grep -m1 -v security && return 0
	done
	sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\).*/\2/p' /etc/apt/sources.list 2>/dev/null | grep -m1 -v security
}
mirror=${DEBIAN_MIRROR:-$(apt_mirror || true)}
[ -n "$mirror" ] || { echo "packages-check: no Debian mirror in /etc/apt: set DEBIAN_MIRROR" >&2; exit 1; }
suite=${DEBIAN_SUITE:-bookworm}
fail() { echo "packages-check: $*" >&2; exit 1; }

work=$(mktemp -d)
cleanup() {
	if [ -n "${runner:-}" ]; then kill -KILL "$runner" 2>/dev/null || true; wait "$runner" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

for tool in rpm rpm2cpio cpio dpkg-deb debootstrap unshare nsenter ip; do
	command -v "$tool" >/dev/null || fail "$tool not found (.ci/run installs rpm, debootstrap)"
done

# The binaries of the release archive of ARCH, which both packages must carry unchanged.
binaries="otelcol-gym gymrun gymevents"
archive_sum() {
	tar -xzOf "$dist/otelcol-gym_${version}_linux_$1.tar.gz" "otelcol-gym_${version}_linux_$1/$2" | sha256sum | cut -d' ' -f1
}
# same_binaries ROOT PACKAGE: every binary under ROOT/usr/bin is the archive's.
same_binaries() {
	local b
	for b in $binaries; do
		[ "$(sha256sum <"$1/usr/bin/$b" | cut -d' ' -f1)" = "$(archive_sum "$arch" "$b")" ] ||
			fail "$2: /usr/bin/$b is not the binary of $name.tar.gz"
	done
}

want_files="/etc/otelcol-gym
/etc/otelcol-gym/config.yaml
/etc/otelcol-gym/otelcol-gym.conf
/usr/bin/gymevents
/usr/bin/gymrun
/usr/bin/otelcol-gym
/usr/lib/systemd/system/otelcol-gym.service
/usr/share/doc/otelcol-gym/README.md"

for arch in amd64 arm64; do
	name=otelcol-gym_${version}_linux_${arch}

	# --- rpm ---
	rpmf=$dist/$name.rpm
	[ -f "$rpmf" ] || fail "$rpmf missing"
	case $arch in amd64) rarch=x86_64 ;; arm64) rarch=aarch64 ;; esac
	got=$(rpm -qp --qf '%{NAME} %{VERSION} %{RELEASE} %{ARCH} %{OS} %{LICENSE}' "$rpmf")
	[ "$got" = "otelcol-gym $version 1 $rarch linux Apache-2.0" ] || fail "$rpmf: $got"
	got=$(rpm -qpl "$rpmf")
	[ "$got" = "$want_files" ] || fail "$rpmf lists:
$got
want:
$want_files"
	# FILEFLAGS: c config, n noreplace.
	got=$(rpm -qp --qf '[%{FILENAMES} %{FILEMODES:perms} %{FILEUSERNAME}:%{FILEGROUPNAME} %{FILEFLAGS:fflags}\n]' "$rpmf")
	want="/etc/otelcol-gym drwxr-xr-x root:root 
/etc/otelcol-gym/config.yaml -rw-r--r-- root:root cn
/etc/otelcol-gym/otelcol-gym.conf -rw-r--r-- root:root cn
/usr/bin/gymevents -rwxr-xr-x root:root 
/usr/bin/gymrun -rwxr-xr-x root:root 
/usr/bin/otelcol-gym -rwxr-xr-x root:root 
/usr/lib/systemd/system/otelcol-gym.service -rw-r--r-- root:root 
/usr/share/doc/otelcol-gym/README.md -rw-r--r-- root:root "
	[ "$got" = "$want" ] || fail "$rpmf files:
$got
want:
$want"
	for s in PREIN:preinstall POSTIN:postinstall PREUN:preremove POSTUN:postremove; do
		tag=${s%%:*} file=deploy/packages/${s#*:}.sh
		[ "$(rpm -qp --qf "%{$tag}" "$rpmf")" = "$(cat "$file")" ] || fail "$rpmf: %{$tag} is not $file"
	done
	mkdir -p "$work/rpm-$arch"
	(cd "$work/rpm-$arch" && rpm2cpio "$rpmf" | cpio -idm --quiet)
	same_binaries "$work/rpm-$arch" "$rpmf"
	cmp -s "$work/rpm-$arch/etc/otelcol-gym/config.yaml" config/otelcol-gym.yaml ||
		fail "$rpmf: /etc/otelcol-gym/config.yaml is not config/otelcol-gym.yaml"

	# --- deb ---
	deb=$dist/$name.deb
	[ -f "$deb" ] || fail "$deb missing"
	got=$(dpkg-deb -f "$deb" Package Version Architecture Depends)
	want="Package: otelcol-gym
Version: $version-1
Architecture: $arch
Depends: procps"
	[ "$got" = "$want" ] || fail "$deb control: $got"
	got=$(dpkg-deb -c "$deb" | awk '$6 !~ /\/$/ {print $1, $2, $6}' | sed 's| \./| /|')
	want="-rw-r--r-- root/root /etc/otelcol-gym/config.yaml
-rw-r--r-- root/root /etc/otelcol-gym/otelcol-gym.conf
-rwxr-xr-x root/root /usr/bin/gymevents
-rwxr-xr-x root/root /usr/bin/gymrun
-rwxr-xr-x root/root /usr/bin/otelcol-gym
-rw-r--r-- root/root /usr/lib/systemd/system/otelcol-gym.service
-rw-r--r-- root/root /usr/share/doc/otelcol-gym/README.md"
	[ "$got" = "$want" ] || fail "$deb files:
$got
want:
$want"
	mkdir -p "$work/deb-$arch"
	dpkg-deb -e "$deb" "$work/deb-$arch/DEBIAN"
	got=$(cat "$work/deb-$arch/DEBIAN/conffiles")
	want="/etc/otelcol-gym/config.yaml
/etc/otelcol-gym/otelcol-gym.conf"
	[ "$got" = "$want" ] || fail "$deb conffiles: $got"
	for s in preinst:preinstall postinst:postinstall prerm:preremove postrm:postremove; do
		cmp -s "$work/deb-$arch/DEBIAN/${s%%:*}" "deploy/packages/${s#*:}.sh" ||
			fail "$deb: ${s%%:*} is not deploy/packages/${s#*:}.sh"
	done
	dpkg-deb -x "$deb" "$work/deb-$arch"
	same_binaries "$work/deb-$arch" "$deb"
done
echo "packages-check: rpm and deb metadata and files ok"

# --- the amd64 .deb in a clean Debian root ---
[ "$(uname -m)" = x86_64 ] || { echo "packages-check: install test skipped (not x86_64)"; exit 0; }
if [ "$(id -u)" != 0 ]; then
	[ "${CI:-}" != true ] || fail "the install test needs root (debootstrap, chroot, unshare)"
	echo "packages-check: install test skipped (needs root: debootstrap, chroot, unshare)"; exit 0
fi
# systemd: the postinst enables the unit with systemctl, systemd-analyze checks it; procps: the
# package's one dependency (/bin/kill of ExecReload), which dpkg -i does not fetch.
include=systemd,procps
cache=_build/pkgtest/$suite-minbase-${include//,/-}
if [ ! -f "$cache.tar" ]; then
	echo "packages-check: debootstrap $suite (minbase, $include) from $mirror, once, into $cache.tar"
	rm -rf "$cache.tmp"
	mkdir -p _build/pkgtest
	start=$(date +%s)
	debootstrap --variant=minbase --include="$include" "$suite" "$cache.tmp" "$mirror" >"$cache.log" 2>&1 ||
		{ tail -20 "$cache.log" >&2; fail "debootstrap failed ($cache.log)"; }
	rm -rf "$cache.tmp"/var/cache/apt/archives/*.deb
	tar -C "$cache.tmp" -cf "$cache.tar.part" . && mv "$cache.tar.part" "$cache.tar"
	rm -rf "$cache.tmp"
	echo "packages-check: debootstrap took $(( $(date +%s) - start ))s"
fi
root=$work/root
mkdir "$root"
tar -C "$root" -xf "$cache.tar"
in_root() { chroot "$root" "$@"; }

cp "$dist/otelcol-gym_${version}_linux_amd64.deb" "$root/tmp/otelcol-gym.deb"
in_root dpkg -i /tmp/otelcol-gym.deb || fail "dpkg -i failed"
[ "$(in_root dpkg-query -W -f='${Status} ${Version}' otelcol-gym)" = "install ok installed $version-1" ] ||
	fail "dpkg-query: otelcol-gym not installed"

# The system user: a system id, no login, home the state directory.
IFS=: read -r _ _ uid gid _ home shell < <(in_root getent passwd otelcol-gym) || fail "no user otelcol-gym"
[ "$(in_root getent group otelcol-gym | cut -d: -f3)" = "$gid" ] || fail "otelcol-gym's group is not its primary group"
sys_max=$(awk '$1 == "SYS_UID_MAX" {print $2}' "$root/etc/login.defs")
[ "$uid" -lt "${sys_max:-999}" ] && [ "$uid" -gt 0 ] || fail "uid $uid is not a system id"
[ "$home" = /var/lib/otelcol-gym ] && [ "$shell" = /usr/sbin/nologin ] || fail "home $home, shell $shell"
[ "$(stat -c '%u:%g %a' "$root/var/lib/otelcol-gym")" = "$uid:$gid 750" ] ||
	fail "/var/lib/otelcol-gym: $(stat -c '%U:%G %a' "$root/var/lib/otelcol-gym")"

# The files, and the conffiles dpkg registered (with the md5 of what it installed).
cmp -s "$root/etc/otelcol-gym/config.yaml" config/otelcol-gym.yaml || fail "config.yaml differs"
# gymrun, installed beside it, summarises a run's files on the installed system.
cp -r testdata/rollouts/run1 "$root/tmp/run1"
in_root gymrun summary --json /tmp/run1 | grep -q '"schema": "gymrun.summary/v1"' || fail "gymrun summary failed in the installed root"
cmp -s "$root/usr/lib/systemd/system/otelcol-gym.service" deploy/packages/otelcol-gym.service || fail "unit differs"
got=$(in_root dpkg-query -W -f='${Conffiles}\n' otelcol-gym | awk 'NF {print $1, $2, $3}')
want=" /etc/otelcol-gym/config.yaml $(md5sum <config/otelcol-gym.yaml | cut -d' ' -f1)
 /etc/otelcol-gym/otelcol-gym.conf $(md5sum <deploy/packages/otelcol-gym.conf | cut -d' ' -f1)"
want=$(printf '%s\n' "$want" | awk 'NF {print $1, $2, $3}')
[ "$got" = "$want" ] || fail "conffiles:
$got
want:
$want"

# Enabled by postinst (systemctl works offline in a chroot), not started (no systemd runs there).
[ "$(in_root systemctl is-enabled otelcol-gym.service)" = enabled ] || fail "otelcol-gym.service not enabled"
[ -L "$root/etc/systemd/system/multi-user.target.wants/otelcol-gym.service" ] || fail "no multi-user.target.wants link"
in_root systemd-analyze verify --man=no /usr/lib/systemd/system/otelcol-gym.service ||
	fail "systemd-analyze verify found problems in the unit"
# The hardening, scored by systemd (0 best, 10 worst): the unit scores 1.8; a lost option fails.
in_root systemd-analyze security --offline=yes --threshold=20 otelcol-gym.service >"$work/security" ||
	{ cat "$work/security" >&2; fail "the unit's exposure is above 2.0 (systemd-analyze security)"; }

# The unit's command line, as systemd runs it: EnvironmentFile's variables, $VAR split on
# whitespace, as User:Group, in the root.
unit=$root/usr/lib/systemd/system/otelcol-gym.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
env_file=$(sed -n 's/^EnvironmentFile=//p' "$unit")
[ "$(sed -n 's/^User=//p' "$unit")" = otelcol-gym ] || fail "the unit's User is not otelcol-gym"
mapfile -t envs < <(env -i sh -c 'set -a; . "$0"; env' "$root$env_file" | grep -v '^PWD=\|^SHLVL=\|^_=')
mapfile -t args < <(set -a; . "$root$env_file"; eval "printf '%s\n' $exec_start")
echo "packages-check: ExecStart: ${args[*]}; environment: ${envs[*]}"
log=$work/collector.log
# Network and pid namespaces of its own (only its loopback), its own /proc in the root.
pid=
unshare --net --pid --mount --fork --kill-child=KILL sh -c '
	root=$0 user=$1; shift
	ip link set lo up && mount -t proc proc "$root/proc" && exec chroot --userspec="$user" "$root" "$@"
' "$root" "$uid:$gid" env -i PATH=/usr/sbin:/usr/bin "${envs[@]}" "${args[@]}" >"$log" 2>&1 &
runner=$!
health=http://127.0.0.1:13133/
# The wait ends as soon as the health check answers or the collector exits; the bound is for a
# hung start only (a loaded CI machine takes tens of seconds to start it).
# unshare's child exists once the namespaces do: before, nsenter would enter the host's network
# (and might find another collector on its loopback).
for _ in $(seq 3000); do
	pid=$(pgrep -P "$runner") && break
	kill -0 "$runner" 2>/dev/null || { cat "$log" >&2; fail "unshare exited"; }
	sleep 0.1
done
[ -n "$pid" ] || fail "no collector process"
[ "$(readlink "/proc/$pid/ns/net")" != "$(readlink /proc/self/ns/net)" ] || fail "the collector is in the host's network"
nsenter -t "$pid" -n "$gymevents" wait "$health" --timeout 300s --pid "$pid" ||
	{ cat "$log" >&2; fail "the health check of the installed collector did not answer"; }
[ "$(awk '$1 == "Uid:" {print $2}' "/proc/$pid/status")" = "$uid" ] || fail "the collector does not run as otelcol-gym"
[ -n "$(find "$root/var/lib/otelcol-gym" -mindepth 1 -user "$uid" -print -quit)" ] ||
	{ cat "$log" >&2; fail "nothing written to /var/lib/otelcol-gym"; }
# ExecReload: SIGHUP reloads the configuration; the collector keeps serving.
kill -HUP "$pid"
sleep 1
nsenter -t "$pid" -n "$gymevents" wait "$health" --timeout 300s --pid "$pid" ||
	{ cat "$log" >&2; fail "no health check after SIGHUP"; }
kill -0 "$pid" 2>/dev/null || fail "SIGHUP ended the collector"
kill -TERM "$pid"
rc=0; wait "$runner" || rc=$?; runner=
[ "$rc" = 0 ] || { cat "$log" >&2; fail "the collector exited $rc on SIGTERM"; }
echo "packages-check: the installed unit's command line served its health check as otelcol-gym"

# Purge: files, conffiles, state and the enablement go; the user stays.
in_root dpkg --purge otelcol-gym || fail "dpkg --purge failed"
for f in /usr/bin/otelcol-gym /etc/otelcol-gym /usr/lib/systemd/system/otelcol-gym.service \
	/var/lib/otelcol-gym /etc/systemd/system/multi-user.target.wants/otelcol-gym.service; do
	[ ! -e "$root$f" ] && [ ! -L "$root$f" ] || fail "$f left after dpkg --purge"
done
in_root getent passwd otelcol-gym >/dev/null || fail "the user went with the package"
echo "packages-check: $dist ok"
