#!/usr/bin/env bash
# Run one pytest node N times in a row with a CPU hog (a busy loop) beside it; stop at the first
# failure. Shows that a timing test holds on a busy machine (HOGS=2 runs one per core here):
#   scripts/repeat_under_load.sh 20 'tests/test_http_client.py::test_role_chunk_is_not_a_token_and_timestamps_follow_the_injected_wait'
set -uo pipefail
count=$1; shift
python=${PYTHON:-.venv/bin/python}
hogs=()
for _ in $(seq "${HOGS:-1}"); do "$python" -c 'while True: pass' & hogs+=($!); done
log=$(mktemp)
trap 'kill "${hogs[@]}" 2>/dev/null; rm -f "$log"' EXIT
passed=0
for i in $(seq "$count"); do
    if "$python" -m pytest -q -p no:cacheprovider "$@" >"$log" 2>&1; then
        passed=$((passed + 1))
    else
        echo "run $i of $count FAILED under load:"; tail -30 "$log"; exit 1
    fi
done
echo "$passed of $count runs passed with ${HOGS:-1} CPU hog(s) beside them on $(nproc) cores: $*"
