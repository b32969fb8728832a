#!/bin/sh
# Before the files are removed (deb prerm "remove" or "upgrade"; rpm %preun 0 on erase, 1 on
# upgrade): on a removal, not an upgrade, the service is stopped and disabled.
set -e
case "$1" in
remove | 0) ;;
*) exit 0 ;;
esac
command -v systemctl >/dev/null 2>&1 || exit 0
if [ -d /run/systemd/system ]; then
	systemctl stop otelcol-gym.service || true
fi
systemctl disable otelcol-gym.service >/dev/null 2>&1 || true
exit 0
