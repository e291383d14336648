#!/bin/bash
# A fresh clone tried as a new user would (bench/README.md, 21): run from the root of a fresh
# clone with the README's setup done. Times each step of the README on a CPU and prints the load
# beside it: the dry runs, then the main job at `--preset tiny --model n_layers=4` (the README's
# CPU form; the default cpu-s is priced in days on a 2-core CPU and refused).
set -u
step() {
  echo "### $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg) :: $*"
  local t0; t0=$(date +%s.%N)
  "$@"
  local rc=$?
  echo "### rc=$rc wall=$(echo "$(date +%s.%N) - $t0" | bc) s"
}
step tlmsearch study --dry-run > /dev/null
step tlmsearch search --trials 16 --name first --dry-run > /dev/null
step tlmsearch search --trials 16 --name first             # refused on a 2-core CPU: priced beyond 12 h
step tlmsearch plan
step tlmsearch search --trials 16 --name first4 --preset tiny --model n_layers=4
step tlmsearch status runs/first4
step tlmsearch verify runs/first4 --top-k 3
step tlmsearch report runs/first4
step tlmsearch export runs/first4 --format native
echo "### end $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
