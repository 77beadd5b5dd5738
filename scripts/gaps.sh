#!/usr/bin/env bash
# gaps.sh CMD...: runs CMD (stdout+stderr), prefixes each line with seconds since start, and at
# the end prints the largest gap between lines (start and end count as lines).
start=$EPOCHREALTIME last=$start max=0 maxat=""
while IFS= read -r line; do
  now=$EPOCHREALTIME
  gap=$(awk -v a="$now" -v b="$last" 'BEGIN{printf "%.1f", a-b}')
  el=$(awk -v a="$now" -v b="$start" 'BEGIN{printf "%7.1f", a-b}')
  if awk -v g="$gap" -v m="$max" 'BEGIN{exit !(g>m)}'; then max=$gap maxat="before line at $el: $line"; fi
  printf '%s %s\n' "$el" "$line"
  last=$now
done < <("$@" 2>&1; echo "EXIT $?")
echo "largest gap: ${max}s ($maxat)"
