#!/usr/bin/env bash
# Fails when a file of core/ includes a header of a higher layer (docs/design.md, "Layers").
# A layer may include its own headers and those of the layers below it; the SDK's headers
# (induct/*, options_yaml.hpp) sit below every layer.
set -euo pipefail
cd "$(dirname "$0")/.."

# The layers, lowest first: the one statement of the order (docs/design.md repeats it).
layers=(util data format plugin train probe store exec config report study cli)

rank() {
  local i
  for i in "${!layers[@]}"; do
    [ "${layers[$i]}" = "$1" ] && { echo "$i"; return; }
  done
  echo -1
}

status=0
for dir in core/*/; do
  layer=$(basename "$dir")
  own=$(rank "$layer")
  if [ "$own" -lt 0 ]; then
    echo "check_layers: core/$layer/ is in no layer; add it to scripts/check_layers.sh and docs/design.md"
    status=1
    continue
  fi
  while IFS=: read -r file line text; do
    target=$(sed -E 's/^#include "([a-z_]+)\/.*/\1/' <<<"$text")
    other=$(rank "$target")
    [ "$other" -lt 0 ] && continue  # not a layer of core/ (e.g. induct/ of the SDK)
    if [ "$other" -gt "$own" ]; then
      echo "$file:$line: $layer includes $target, a higher layer: $text"
      status=1
    fi
  done < <(grep -rnE '^#include "[a-z_]+/' "$dir" --include='*.hpp' --include='*.cpp' || true)
done
[ "$status" -eq 0 ] && echo "check_layers: core/ includes only its own layer and those below (${layers[*]})"
exit "$status"
