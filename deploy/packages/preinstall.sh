#!/bin/sh
# Before the files are unpacked (deb preinst, rpm %pre): the service's system user and group,
# which own the state directory. Kept when the package is removed, as Debian and Fedora keep
# system users (a new one could inherit files of the old one's id).
set -e
if ! getent group otelcol-gym >/dev/null; then
	groupadd --system otelcol-gym
fi
if ! getent passwd otelcol-gym >/dev/null; then
	useradd --system --gid otelcol-gym --no-create-home --home-dir /var/lib/otelcol-gym \
		--shell /usr/sbin/nologin --comment "otelcol-gym collector" otelcol-gym
fi
