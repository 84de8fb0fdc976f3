#!/usr/bin/env bash
# Registers and stack bytes of every kernel in a built extension, one line each:
#   REG <registers> STACK <bytes> <kernel, demangled>
#   bash tests/perf/rowwise/kernel_resources.sh path/to/_C.abi3.so | grep BackwardSpec
# CUOBJDUMP names another cuobjdump (default: the one on PATH).
set -u
"${CUOBJDUMP:-cuobjdump}" --dump-resource-usage "$1" | grep -A1 "Function" | paste - - \
  | sed 's/.*Function \([^ :]*\).*REG:\([0-9]*\) STACK:\([0-9]*\).*/\2 \3 \1/' \
  | while read -r regs stack name; do
      echo "REG $regs STACK $stack $(echo "$name" | c++filt | sed 's/(anonymous namespace):://g' | cut -c1-120)"
    done | sort -u
