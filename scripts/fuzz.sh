#!/usr/bin/env bash
# Runs every Fuzz* target for the given time each (default 10s).
set -euo pipefail
T=${1:-10s}
cd "$(dirname "$0")/.."
status=0
while IFS= read -r line; do
  file=${line%%:*}
  name=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/' <<<"${line#*:}")
  pkg=./$(dirname "$file")
  echo "fuzz $pkg $name ($T)"
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$T" "$pkg" >/tmp/fuzz.$$.log 2>&1; then
    cat /tmp/fuzz.$$.log
    status=1
  fi
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' pkg internal cmd 2>/dev/null | sort)
rm -f /tmp/fuzz.$$.log
exit $status
