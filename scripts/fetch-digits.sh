#!/bin/bash
# Puts scikit-learn's copy of the UCI handwritten digits (digits.csv.gz, 1,797 rows) at /var/cache/jdist/digits.csv.gz
# for jdist-djl's digits example and its tests: the one file is taken from Debian's python3-sklearn package
# (apt-get download + dpkg -x), without installing the package or its dependencies. Needs root (apt). Does nothing when
# the file is there already or python3-sklearn is installed.
set -euo pipefail
DEST=/var/cache/jdist/digits.csv.gz
INSTALLED=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
[ -f "$DEST" ] || [ -f "$INSTALLED" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "fetch-digits: needs root (apt-get download python3-sklearn); or set JDIST_DIGITS to a copy of digits.csv.gz" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download python3-sklearn >/dev/null 2>&1 || { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2; apt-get download python3-sklearn >&2; }
dpkg -x python3-sklearn_*.deb x
mkdir -p "$(dirname "$DEST")"
install -m 0644 "x$INSTALLED" "$DEST"
echo "fetch-digits: $DEST" >&2
