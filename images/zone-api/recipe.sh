# Sourced by images/build: the zone HTTP API sidecar - the same server the integration tests use
# (tests/support/zone_api.py), run by serve.py with bindcar's environment contract, plus Debian's
# rndc and python3.
recipe() {
  local root=$1 repo=$2
  quiet in_root "$root" groupadd --system --gid 53 bind
  quiet in_root "$root" useradd --system --uid 53 --gid 53 --home-dir /var/cache/bind --no-create-home \
    --shell /usr/sbin/nologin bind
  quiet in_root "$root" apt-get install -y -qq python3 bind9-utils
  install -d -m 0755 "$root/opt/zone-api"
  install -m 0644 "$repo/tests/support/zone_api.py" "$root/opt/zone-api/zone_api.py"
  install -m 0644 "$HERE/zone-api/serve.py" "$root/opt/zone-api/serve.py"
  quiet in_root "$root" python3 -c 'import http.server, json, re, threading'
}
