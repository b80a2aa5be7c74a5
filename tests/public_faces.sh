#!/usr/bin/env bash
# The front ends use the engine only through its two public headers: every `#include "X"` under app/, ui/ and
# python/ that names a file of engine/ must be speculum.h or speculum_tools.h. Prints each offending include and fails; with --self-test,
# also checks that a planted internal include is caught.
set -euo pipefail
root=$(cd "${1:?usage: public_faces.sh REPOSITORY_ROOT [--self-test]}" && pwd)

violations() {  # $1: the repository root to check
  grep -rnoE '^#include "[^"]+"' "$1/app" $(for d in ui python; do [ -d "$1/$d" ] && echo "$1/$d"; done) --include='*.cpp' --include='*.h' | while IFS= read -r hit; do
    header=${hit#*#include \"}
    header=${header%\"}
    [ -f "$1/engine/$header" ] || continue
    case "$header" in speculum.h | speculum_tools.h) ;; *) echo "${hit%%:#include*}: includes engine-internal \"$header\"" ;; esac
  done
}

found=$(violations "$root")
if [ -n "$found" ]; then
  echo "$found"
  echo "app/, ui/ and python/ must use the engine through speculum.h and speculum_tools.h only"
  exit 1
fi
faces=$(grep -rlE '^#include "speculum(_tools)?\.h"' "$root/app" "$root/ui" | wc -l)
[ "$faces" -gt 0 ] || { echo "no file under app/ includes a public header: is $root the repository?"; exit 1; }
echo "app/ and ui/: $faces files include the public headers, none an internal one"

if [ "${2:-}" = --self-test ]; then
  planted=$(mktemp -d)
  trap 'rm -rf "$planted"' EXIT
  mkdir -p "$planted/app/cli" "$planted/engine/models"
  touch "$planted/engine/models/transformer.h" "$planted/engine/speculum.h"
  printf '#include "speculum.h"\n#include "models/transformer.h"\n' > "$planted/app/cli/planted.cpp"
  [ -n "$(violations "$planted")" ] || { echo "self-test: a planted internal include went unnoticed"; exit 1; }
  echo "self-test: a planted internal include is caught"
fi
