#!/bin/bash
# A fresh clone tried as a new user would (bench/README.md, 21): run from the root of a fresh
# clone with the README's setup done. Times each step of the README on a CPU and prints the load
# beside it: the dry runs, then the main job at `--preset tiny --model n_layers=4` (the README's
# CPU form; the default cpu-s is priced in days on a 2-core CPU and refused). Each step's stated
# ranges (plan lines, verify's fresh-seed line, live lines' time left) go to first_day.<step>.err;
# the load is sampled every 3 minutes into first_day.uptime.log.
set -u
(while true; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)" >> first_day.uptime.log; sleep 180; done) &
sampler=$!
trap 'kill $sampler' EXIT
step() {
  local name=$1; shift
  echo "### $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg) :: $*"
  local t0; t0=$(date +%s.%N)
  "$@" 2> "first_day.$name.err"
  local rc=$?
  echo "### rc=$rc wall=$(echo "$(date +%s.%N) - $t0" | bc) s; stated: $(grep -aE 'estimate|fresh seeds' "first_day.$name.err" | head -3)"
}
step study-dry tlmsearch study --dry-run > /dev/null
step search-dry tlmsearch search --trials 16 --name first --dry-run > /dev/null
step search-cpus tlmsearch search --trials 16 --name first     # refused on a 2-core CPU: priced beyond 12 h
step plan tlmsearch plan
step search tlmsearch search --trials 16 --name first --preset tiny --model n_layers=4
step status tlmsearch status runs/first
step verify tlmsearch verify runs/first --top-k 3
step report tlmsearch report runs/first
step export tlmsearch export runs/first --format native
echo "### end $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
