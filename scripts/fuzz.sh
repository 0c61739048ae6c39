#!/usr/bin/env bash
# Runs every Fuzz* target of the module for the given time each (default 10s).
set -euo pipefail
T=${1:-10s}
cd "$(dirname "$0")/.."
status=0
count=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# "file.go:func FuzzName(" → package directory and target name.
while IFS=: read -r file decl; do
  name=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(.*/\1/' <<<"$decl")
  # Run it from its own module: deploy/ is one apart from the tool's.
  dir=$(dirname "$file")
  mod=.
  d=$dir
  while [ "$d" != . ]; do
    if [ -f "$d/go.mod" ]; then mod=$d; break; fi
    d=$(dirname "$d")
  done
  rel=${dir#"$mod"}
  pkg=./${rel#/}
  echo "fuzz ./$dir $name ($T)"
  count=$((count + 1))
  ok=1
  for attempt in 1 2 3; do
    if (cd "$mod" && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$T" "$pkg") >"$log" 2>&1; then
      ok=1
      break
    fi
    ok=0
    # Go before 1.27 can fail a target with a bare "context deadline
    # exceeded" when -fuzztime ends while a worker is mid-call
    # (go.dev/issue/75804): no input failed and none is written. Such a
    # run is tried again, up to three runs in all (on a busy 2-core
    # machine it has struck twice in a row); anything else fails at once.
    if [ "$attempt" -lt 3 ] && grep -q '^    context deadline exceeded$' "$log" &&
      ! grep -qE 'Failing input written|panic:|--- FAIL: .*\(|_test\.go:[0-9]+:' <(grep -v "^--- FAIL: ${name} " "$log"); then
      echo "fuzz.sh: $name: the fuzzing engine's deadline race (go.dev/issue/75804), no failing input: running it again"
      continue
    fi
    break
  done
  if [ "$ok" = 0 ]; then
    cat "$log"
    status=1
  elif grep -q "no fuzz tests to fuzz" "$log"; then
    echo "fuzz.sh: $name in ./$dir was not found by go test" >&2
    status=1
  fi
done < <(grep -rE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(' pkg internal cmd deploy 2>/dev/null | sort)
echo "fuzz.sh: $count targets, $T each"
exit $status
