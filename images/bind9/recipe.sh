# Sourced by images/build: Debian bookworm's named 9.18, run as uid/gid 53 (ISC's image's `bind`),
# with the arguments the agent's Deployment gives it (`-g -c /etc/bind/named.conf`, agent/desired/
# workloads.py). With a read-only root filesystem named writes only to volumes the generated pod
# mounts: /var/cache/bind (its directory: zone files, managed keys, the NZD of added zones) and
# /run/named (pid file, session key); /etc/bind/named.conf and /etc/bind/keys/ come from the
# ConfigMap and the RNDC Secret.
recipe() {
  local root=$1
  quiet in_root "$root" groupadd --system --gid 53 bind
  quiet in_root "$root" useradd --system --uid 53 --gid 53 --home-dir /var/cache/bind --no-create-home \
    --shell /usr/sbin/nologin bind
  quiet in_root "$root" apt-get install -y -qq bind9
  # the package's postinst made a key for the system named; an image must not carry a secret
  rm -f "$root/etc/bind/rndc.key"
  install -d -o 53 -g 53 -m 0775 "$root/var/cache/bind" "$root/run/named"
  install -d -m 0755 "$root/etc/bind/keys"
  in_root "$root" named -V | head -1 >&2
}
