#!/usr/bin/env bash
# Checks a built otelcol-gym image (make image): the image's config (user, entry point, default
# configuration, OCI labels and time), its root filesystem (the static binary, the default
# configuration, LICENSE, NOTICE, the SBOM; no shell, no CA bundle), the public roots the binary
# embeds, and the binary itself, run from the mounted root: it lists its components and
# validates deploy/'s configs. Then it runs the image as containers (buildah run with runc): the
# default configuration as the image's user; TLS from inside the container to a loopback server
# whose certificate comes from a private root (refused without that root, accepted with it);
# and a collector serving the events it is sent.
#
#   VERSION=0.1.0 SOURCE_DATE_EPOCH=... bash deploy/image-check.sh ghcr.io/gym-telemetry/otelcol-gym:0.1.0
set -euo pipefail
image=${1:?usage: image-check.sh IMAGE}
version=${VERSION:?VERSION (builder-config.yaml dist.version)}
epoch=${SOURCE_DATE_EPOCH:?SOURCE_DATE_EPOCH (the time of the image)}
repo=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "image-check: $*" >&2; exit 1; }
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)

got=$(buildah inspect --type image --format '{{.OCIv1.Config.User}} {{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.Cmd}}' "$image")
[ "$got" = '10001:10001 [/otelcol-gym] [--config /etc/otelcol-gym/config.yaml]' ] ||
	fail "user, entry point and command are $got, want 10001:10001 [/otelcol-gym] [--config /etc/otelcol-gym/config.yaml]"
# The OCI labels, and the image's own time: SOURCE_DATE_EPOCH, so that a rebuild gives the same image.
buildah inspect --type image "$image" | python3 -c '
import json, re, sys
oci, version, created = json.load(sys.stdin)["OCIv1"], sys.argv[1], sys.argv[2]
labels = oci["config"]["Labels"]
want = {"org.opencontainers.image.licenses": "Apache-2.0", "org.opencontainers.image.version": version,
        "org.opencontainers.image.source": "https://github.com/gym-telemetry/otelcol-gym",
        "org.opencontainers.image.created": created, "org.opencontainers.image.title": "otelcol-gym"}
for k, v in want.items():
    assert labels.get(k) == v, "label %s is %r, want %r" % (k, labels.get(k), v)
assert re.fullmatch("[0-9a-f]{40}", labels.get("org.opencontainers.image.revision", "")), labels
assert oci["created"].replace("+00:00", "Z") == created, "image created %s, want %s" % (oci["created"], created)
' "$version" "$created" || fail "OCI labels or time"

ctr=$(buildah from --pull=never "$image")
trap 'buildah umount "$ctr" >/dev/null 2>&1 || true; buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
mnt=$(buildah mount "$ctr")
# Every file with its owner: root's but the storage directory, which the image's user owns. No
# shell, no CA bundle (/etc/ssl, /etc/pki): the binary's embedded roots are the only ones.
files=$(cd "$mnt" && find . -mindepth 1 -not -path ./dev -not -path ./proc -not -path ./sys -printf '%p %U\n' | LC_ALL=C sort | tr '\n' ',')
want="./etc 0,./etc/group 0,./etc/otelcol-gym 0,./etc/otelcol-gym/config.yaml 0,./etc/passwd 0,./otelcol-gym 0,./usr 0,./usr/share 0,./usr/share/doc 0,./usr/share/doc/otelcol-gym 0,./usr/share/doc/otelcol-gym/LICENSE 0,./usr/share/doc/otelcol-gym/NOTICE 0,./usr/share/doc/otelcol-gym/sbom.cdx.json 0,./var 0,./var/lib 0,./var/lib/otelcol-gym 10001,"
[ "$files" = "$want" ] || fail "the image root holds
$files
want
$want"
cmp -s "$mnt/etc/otelcol-gym/config.yaml" "$repo/config/otelcol-gym.yaml" || fail "/etc/otelcol-gym/config.yaml is not config/otelcol-gym.yaml"
cmp -s "$mnt/usr/share/doc/otelcol-gym/LICENSE" "$repo/LICENSE" || fail "the image's LICENSE differs"
cmp -s "$mnt/usr/share/doc/otelcol-gym/NOTICE" "$repo/NOTICE" || fail "the image's NOTICE differs"
grep -qx 'otelcol-gym:x:10001:10001:.*' "$mnt/etc/passwd" || fail "no otelcol-gym user 10001 in /etc/passwd"
go version -m "$mnt/otelcol-gym" | grep -q 'CGO_ENABLED=0' || fail "the binary is not built with CGO_ENABLED=0"
# The SBOM describes the binary in the image: its modules, the roots module among them, dated
# SOURCE_DATE_EPOCH, no random serial number.
python3 - "$mnt/usr/share/doc/otelcol-gym/sbom.cdx.json" "$version" "$created" <<'PY' || fail "the image's SBOM"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["bomFormat"] == "CycloneDX", doc.get("bomFormat")
assert "serialNumber" not in doc, "a random serial number makes the SBOM differ each build"
assert doc["metadata"]["timestamp"] == sys.argv[3], doc["metadata"]["timestamp"]
assert doc["metadata"]["component"]["version"] == "v" + sys.argv[2], doc["metadata"]["component"]
names = {c["name"] for c in doc.get("components", [])}
for want in ("go.opentelemetry.io/collector/otelcol", "go.opentelemetry.io/collector/receiver/otlpreceiver",
             "golang.org/x/crypto/x509roots/fallback"):
    assert want in names, want + " missing"
PY
# The public roots: golang.org/x/crypto/x509roots/fallback is linked in (its init hands Go the
# roots, used where no CA bundle exists, as here), and its bundle holds the roots of Let's
# Encrypt (ISRG Root X1), DigiCert (Global Root G2, most clouds' endpoints) and Amazon (Root CA
# 1): their DER encodings, found in the binary by their well-known SHA-256 fingerprints.
go version -m "$mnt/otelcol-gym" | grep -q $'\tdep\tgolang.org/x/crypto/x509roots/fallback\t' ||
	fail "the binary does not link golang.org/x/crypto/x509roots/fallback"
python3 - "$mnt/otelcol-gym" <<'PY' || fail "the binary lacks public roots"
import hashlib, sys
want = {
    "96bcec06264976f37460779acf28c5a7cfe8a3c0aae11a8ffcee05c0bddf08c6": "ISRG Root X1",
    "cb3ccbb76031e5e0138f8dd39a23f9de47ffc35e43c1144cea27d46a5ab1cb5f": "DigiCert Global Root G2",
    "8ecde6884f3d87b1125ba31ac3fcb13d7016de7f57cc904fe1cb97c6ae98196e": "Amazon Root CA 1",
}
data = open(sys.argv[1], "rb").read()
found = set()
i = data.find(b"\x30\x82")  # a certificate: SEQUENCE (long length) { tbsCertificate SEQUENCE ...
while i != -1:
    if data[i + 4:i + 6] == b"\x30\x82":
        h = hashlib.sha256(data[i:i + 4 + int.from_bytes(data[i + 2:i + 4], "big")]).hexdigest()
        if h in want:
            found.add(h)
    i = data.find(b"\x30\x82", i + 1)
missing = [want[h] for h in want if h not in found]
assert not missing, "not embedded: %s" % missing
PY
"$mnt/otelcol-gym" components | grep -q 'name: gym' || fail "components does not list the gym receiver"
"$mnt/otelcol-gym" validate --config "$repo/deploy/agent.yaml" || fail "validate deploy/agent.yaml"
"$mnt/otelcol-gym" validate --config "$repo/deploy/gateway.yaml" || fail "validate deploy/gateway.yaml"
size="$(du -sm "$mnt" | cut -f1) MiB"
echo "image-check: $image: user 10001, entry point /otelcol-gym on /etc/otelcol-gym/config.yaml, labels (version $version, Apache-2.0, created $created), one static binary with Mozilla's roots (ISRG Root X1, DigiCert Global Root G2, Amazon Root CA 1), no shell, no CA bundle, SBOM; components and validate OK (size $size)"

# Then run it as containers (runc: crun refuses this machine's hybrid cgroups), each with the
# image's own user and root. ctrpid TOKEN finds the collector of the container run with
# OTELCOL_GYM_CHECK=TOKEN in its environment (no pgrep: procps is not on every machine).
runtime=$(command -v runc) || fail "runc is missing (apt-get install runc)"
work=$(mktemp -d)
run_ctr=$(buildah from --pull=never "$image")
runner=""; tls_server=""
trap 'kill "$runner" "$tls_server" 2>/dev/null || true; buildah umount "$ctr" >/dev/null 2>&1 || true; buildah rm "$ctr" "$run_ctr" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
ctrpid() {
	local d
	for _ in $(seq 600); do
		for d in /proc/[0-9]*; do
			tr '\0' '\n' 2>/dev/null <"$d/environ" | grep -qx "OTELCOL_GYM_CHECK=$1" || continue
			[ "$(readlink "$d/exe" 2>/dev/null)" = /otelcol-gym ] || continue
			echo "${d#/proc/}"; return 0
		done
		sleep 0.1
	done
	return 1
}
check_user() { # PID: the image's user, in a pid namespace of its own
	local uid
	uid=$(awk '/^Uid:/ {print $2}' "/proc/$1/status")
	[ "$uid" = 10001 ] || fail "the container's collector runs as uid $uid, want 10001"
	[ "$(readlink "/proc/$1/ns/pid")" != "$(readlink /proc/self/ns/pid)" ] || fail "the container shares the host's pid namespace"
}

# 1. The image as it is: its command (the default configuration), its user, a network namespace
# of its own with loopback only. The health check answers inside it (read from the host, in the
# container's network namespace) and the gym receiver's checkpoint lands in the image's storage
# directory, written by the image's user.
buildah run --runtime "$runtime" --network none --env OTELCOL_GYM_CHECK=default "$run_ctr" -- \
	/otelcol-gym --config /etc/otelcol-gym/config.yaml >"$work/default.log" 2>&1 &
runner=$!
pid=$(ctrpid default) || { cat "$work/default.log" >&2; fail "the default configuration's collector did not start"; }
check_user "$pid"
[ "$(readlink "/proc/$pid/ns/net")" != "$(readlink /proc/self/ns/net)" ] || fail "--network none shares the host's network"
nsenter --net="/proc/$pid/ns/net" python3 -c '
import sys, time, urllib.request
deadline = time.monotonic() + 60
while True:
    try:
        sys.exit(0 if urllib.request.urlopen("http://127.0.0.1:13133/", timeout=5).status == 200 else 1)
    except OSError as e:
        if time.monotonic() > deadline:
            sys.exit("health check: %s" % e)
        time.sleep(0.2)
' || { cat "$work/default.log" >&2; fail "the default configuration's health check did not answer"; }
owners=$(find "/proc/$pid/root/var/lib/otelcol-gym" -mindepth 1 -printf '%U\n' | sort -u | tr '\n' ' ')
[ "$owners" = "10001 " ] || fail "the storage directory holds files of uids '$owners', want the checkpoint of 10001"
kill -TERM "$pid"
wait "$runner" || fail "the default configuration's collector did not exit cleanly: $(tail -5 "$work/default.log")"
runner=""
echo "image-check: $image on its default configuration: uid 10001, own network namespace, health check 200, checkpoint in /var/lib/otelcol-gym"

# 2. TLS from inside the container, to a server on the host's loopback whose certificate comes
# from a private root (made here, offline). No public root can be used offline (a certificate
# under one needs its private key), so the public roots are proven above, by fingerprint, and
# here the verification path they feed: without the private root, the collector in the image
# refuses the server with "x509: certificate signed by unknown authority" (it verifies, against
# the roots it has); given the root through SSL_CERT_FILE (the system pool, which the embedded
# roots fill when no such file exists) or through tls.ca_file, it accepts it.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=otelcol-gym image-check private root" \
	-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
	-keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
	-keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n' >"$work/server.ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -days 2 \
	-extfile "$work/server.ext" -out "$work/server.pem" 2>/dev/null
read -r http_port prom_port tls_port < <(python3 -c 'import socket
s=[socket.socket() for _ in range(3)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
# The server: HTTPS on 127.0.0.1 only; GET /config.yaml serves a configuration, POSTs (OTLP)
# answer 200; every request line is written to requests.log.
cat >"$work/served.yaml" <<'YAML'
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:0
exporters:
  debug: {}
service:
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [debug]
YAML
python3 - "$tls_port" "$work" <<'PY' &
import http.server, ssl, sys
port, work = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def record(self):
        with open(work + "/requests.log", "a") as f:
            f.write("%s %s\n" % (self.command, self.path))
    def do_GET(self):
        self.record()
        body = open(work + "/served.yaml", "rb").read()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.record()
        self.send_response(200); self.send_header("Content-Type", "application/x-protobuf"); self.send_header("Content-Length", "0"); self.end_headers()
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(work + "/server.pem", work + "/server.key")
srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
PY
tls_server=$!
touch "$work/requests.log"
chmod 0755 "$work"; chmod 0644 "$work"/*
served=https://127.0.0.1:$tls_port/config.yaml
ok=""
for _ in $(seq 100); do
	if buildah run --runtime "$runtime" --network host --volume "$work:/check:ro" "$run_ctr" -- \
		/otelcol-gym validate --config "$served" >"$work/untrusted.log" 2>&1; then
		fail "validate --config $served succeeded without the server's root: the binary does not verify"
	fi
	grep -q 'x509: certificate signed by unknown authority' "$work/untrusted.log" && { ok=1; break; }
	sleep 0.2 # the server is not listening yet
done
[ -n "$ok" ] || fail "validate --config $served did not fail on the unknown root: $(tail -3 "$work/untrusted.log")"
buildah run --runtime "$runtime" --network host --volume "$work:/check:ro" --env SSL_CERT_FILE=/check/ca.pem "$run_ctr" -- \
	/otelcol-gym validate --config "$served" >"$work/trusted.log" 2>&1 ||
	fail "validate --config $served with SSL_CERT_FILE naming its root failed: $(tail -3 "$work/trusted.log")"
grep -qx "GET /config.yaml" "$work/requests.log" || fail "the server never served its configuration"
echo "image-check: --config https:// from the container: refused under a private root (x509: certificate signed by unknown authority), accepted with SSL_CERT_FILE naming it"

# 3. The collector at work: the host's network so that it listens on 127.0.0.1 only, a config
# mounted at /check. Events go in over HTTP; the Prometheus exporter must show them, the
# otlp_http exporter given the private root as tls.ca_file must deliver to the TLS server, the
# one without it must be refused with the unknown authority and deliver nothing.
cat >"$work/config.yaml" <<YAML
receivers:
  gym:
    http:
      endpoint: 127.0.0.1:$http_port
exporters:
  prometheus:
    endpoint: 127.0.0.1:$prom_port
  otlp_http/trusted:
    endpoint: https://127.0.0.1:$tls_port/trusted
    tls:
      ca_file: /check/ca.pem
  otlp_http/untrusted:
    endpoint: https://127.0.0.1:$tls_port/untrusted
    retry_on_failure:
      enabled: false
    sending_queue:
      enabled: false
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [gym]
      exporters: [prometheus, otlp_http/trusted, otlp_http/untrusted]
YAML
chmod 0644 "$work/config.yaml"
buildah run --runtime "$runtime" --network host --volume "$work:/check:ro" --env OTELCOL_GYM_CHECK=run "$run_ctr" -- \
	/otelcol-gym --config /check/config.yaml >"$work/log" 2>&1 &
runner=$!
python3 - "$http_port" "$prom_port" "$work" <<'PY' || { cat "$work/log" >&2; fail "the running container did not serve the events it was sent"; }
import re, sys, time, urllib.request
http_port, prom_port, work = sys.argv[1], sys.argv[2], sys.argv[3]
body = (b'{"event":"resource","attributes":{"service.name":"nemo-gym/driver","service.instance.id":"image-check-0"}}\n'
        + b'{"event":"rollout.completed","outcome":"scored","dispatch_name":"math"}\n' * 3)
deadline = time.monotonic() + 60
while True:
    try:
        req = urllib.request.Request("http://127.0.0.1:%s/v1/events" % http_port, body, {"Content-Type": "application/x-ndjson"})
        urllib.request.urlopen(req, timeout=5).read()
        break
    except OSError as e:
        if time.monotonic() > deadline:
            sys.exit("no answer on :%s: %s" % (http_port, e))
        time.sleep(0.2)
want = re.compile(r'^gym_rollout_completed_total\{[^}]*nemo_gym_rollout_outcome="scored"[^}]*\} 3$', re.M)
while True:
    try:
        text = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % prom_port, timeout=5).read().decode()
    except OSError:
        text = ""
    requests = open(work + "/requests.log").read()
    log = open(work + "/log").read()
    if (want.search(text) and "POST /trusted/v1/metrics\n" in requests
            and re.search(r'otlp_http/untrusted.*x509: certificate signed by unknown authority', log)):
        break
    if time.monotonic() > deadline:
        sys.exit("after 60 s: gym_rollout_completed_total 3 %s, the trusted exporter delivered %s, the untrusted one refused %s:\n%s"
                 % (bool(want.search(text)), "POST /trusted/v1/metrics" in requests, "x509: certificate signed by unknown authority" in log, text[-2000:]))
    time.sleep(0.2)
assert "/untrusted" not in requests, "the exporter without the root delivered:\n" + requests
PY
pid=$(ctrpid run) || fail "cannot find the container's collector process"
check_user "$pid"
kill -TERM "$pid"
wait "$runner" || fail "the container did not exit cleanly on SIGTERM: $(tail -5 "$work/log")"
runner=""
grep -q "Shutdown complete" "$work/log" || fail "no clean shutdown in the container's log: $(tail -5 "$work/log")"
echo "image-check: $image ran as a container (runc): uid 10001, own pid namespace, served 3 rollouts on 127.0.0.1, otlp_http over TLS delivered with tls.ca_file and refused without (unknown authority), clean shutdown on SIGTERM"
