#!/bin/sh
# After the files are unpacked (deb postinst "configure" [OLD_VERSION]; rpm %post 1 on install,
# 2 on upgrade). On a first install the unit is enabled; Debian's convention also starts a
# daemon on install, Fedora's and RHEL's do not: the .deb starts it, the .rpm leaves it to
# `systemctl start otelcol-gym`. An upgrade restarts a running service on the new binary.
# Outside a running systemd (a chroot, an image build) nothing is started.
set -e
case "$1" in
configure) format=deb; if [ -z "${2:-}" ]; then first=1; else first=0; fi ;;
1) format=rpm; first=1 ;;
[0-9]*) format=rpm; first=0 ;;
*) exit 0 ;; # deb abort-upgrade, abort-remove, ...
esac

# The state directory, for a collector started by hand as the user too; under systemd,
# StateDirectory= creates it (and fixes its owner) as well.
install -d -o otelcol-gym -g otelcol-gym -m 0750 /var/lib/otelcol-gym

command -v systemctl >/dev/null 2>&1 || exit 0
running=0
if [ -d /run/systemd/system ]; then
	running=1
	systemctl daemon-reload || true
fi
if [ "$first" = 1 ]; then
	systemctl enable otelcol-gym.service || true
	if [ "$running" = 1 ] && [ "$format" = deb ]; then
		systemctl start otelcol-gym.service ||
			echo "otelcol-gym: the service did not start: journalctl -u otelcol-gym" >&2
	fi
elif [ "$running" = 1 ]; then
	systemctl try-restart otelcol-gym.service || true
fi
exit 0
