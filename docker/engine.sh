#!/usr/bin/env bash
# Make sure a Docker engine answers: install Debian's docker.io when dockerd is missing and
# start dockerd when none runs (as root; a machine without systemd, like CI, needs this).
# The engine we start keeps its own networks inside 198.19.240.0/20 (benchmarking addresses this
# machine does not route), away from the lab's 198.19.<n>.0/24 networks.
set -euo pipefail

say() { echo "$*" >&2; }

if docker info >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  say "no Docker engine answers, and starting one needs root (the docker tests will be skipped)"
  exit 0
fi
if ! command -v dockerd >/dev/null; then
  say "installing Debian's docker.io"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker.io >/dev/null
fi
if command -v systemctl >/dev/null && systemctl start docker 2>/dev/null && docker info >/dev/null 2>&1; then
  say "started docker.service"
  exit 0
fi
log=/var/log/kinspect-dockerd.log
say "starting dockerd (log: $log)"
# The daemon outlives this script: it must not keep the caller's descriptors (a lock file a
# wrapper holds, make's jobserver pipe), or whoever waits on them waits forever.
nohup dockerd --bip 198.19.255.1/24 \
  --default-address-pool base=198.19.240.0/20,size=24 </dev/null >"$log" 2>&1 \
  3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    say "dockerd answers"
    exit 0
  fi
  sleep 0.5
done
say "error: dockerd did not answer within 30 s; last lines of $log:"
tail -5 "$log" >&2
exit 1
