#!/bin/sh
# After the files are removed (deb postrm "remove", "purge", "upgrade", ...; rpm %postun 0 on
# erase, 1 on upgrade): systemd forgets the unit. `dpkg --purge` also deletes the state
# directory (the checkpoint, Gym's spans and logs); an rpm erase keeps it, as rpm keeps files it
# did not install. The user and group stay (preinstall.sh says why).
set -e
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || true
fi
if [ "$1" = purge ]; then
	rm -rf /var/lib/otelcol-gym
fi
exit 0
