#!/usr/bin/env bash
# check.sh is the one prepared script the GPU machine runs (CUDA 13 driver,
# NVRTC, cuBLAS, PyTorch, no Go), over the binaries deploy/device/build.sh
# made here and the device tool carried (.devbin/):
#
#   run  command: OUT=$OUT deploy/device/check.sh   carry: [".devbin"]   timeout_s: 560
#
# Steps, each under `timeout` so that a hang costs its limit and no more
# (the limits add up to 480 s, 8 minutes):
#   nvidia-smi                                              10 s
#   the device tests, GLMBENCH_REQUIRE_CUDA=1 -test.v:
#     engine/cudaexec (-run Device, NVRTC's first compile included) 75 s and
#     its op tests' cuda subtests 30 s,
#     internal/cuda 30 s, engine (-run Device) 30 s
#   the benchmarks (BENCH, default Device: BenchmarkDeviceMatMulT, the GEMM
#     beside cuBLAS, and BenchmarkDeviceDecode, tok/s at batch 1, 64, 256
#     for nano, tiny, gpu, each with CUDA graphs and with direct launches;
#     BENCHTIME iterations, default 10x):
#     engine/cudaexec 130 s, internal/cuda (all its benchmarks) 20 s
#   PyTorch's fp32 GEMM at the same sizes (gemm_torch.py)    20 s
#   glmbench serve --device cuda, then glmbench run --phases all against it
#     (each phase capped at PHASE_CAP)                      135 s
# Everything goes to $OUT, in at most 8 files (what the device tool brings
# back): summary.log (each step's exit status and seconds, nvidia-smi),
# tests.log, bench.log, torch.log, serve.log, run.log, report.md, report.json.
# It exits 0 when every step did, else 1.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
OUT=${OUT:-/tmp/glmbench-device}
DEVBIN=${DEVBIN:-.devbin}
BENCH=${BENCH:-Device}
BENCHTIME=${BENCHTIME:-10x}
SERVE_PRESET=${SERVE_PRESET:-nano}
PHASE_CAP=${PHASE_CAP:-10s}
mkdir -p "$OUT"
summary=$OUT/summary.log
: >"$summary"
failed=0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$work/bin
mkdir -p "$bin"
for f in "$DEVBIN"/*.gz; do
	[[ -e $f ]] || { echo "check.sh: no binaries in $DEVBIN: run deploy/device/build.sh and carry $DEVBIN" | tee -a "$summary"; exit 1; }
	b=$(basename "$f" .gz)
	gunzip -c "$f" >"$bin/$b" && chmod +x "$bin/$b"
done
echo "binaries of commit $(cat "$DEVBIN/COMMIT" 2>/dev/null || echo unknown), checked $(date -u +%FT%TZ)" | tee -a "$summary"

# step NAME LIMIT LOG CMD... runs CMD under timeout, appends its output to
# LOG and its exit status and seconds to the summary.
step() {
	local name=$1 limit=$2 log=$3
	shift 3
	local began rc
	began=$(date +%s)
	echo "=== $name (limit ${limit}s): $*" >>"$log"
	timeout -k 5 "$limit" "$@" >>"$log" 2>&1
	rc=$?
	echo "$name: exit $rc in $(($(date +%s) - began)) s (limit ${limit} s)" | tee -a "$summary"
	if ((rc != 0)); then
		failed=1
	fi
	return 0
}

# "${in[@]}" DIR CMD... runs CMD in DIR (a command timeout can run, unlike
# a function): a test binary reads its package's files relative to the
# package, as go test runs it.
# shellcheck disable=SC2016 # $1 and $@ are the inner shell's.
in=(bash -c 'cd "$1" && shift && exec "$@"' in)

step nvidia-smi 10 "$summary" nvidia-smi

export GLMBENCH_REQUIRE_CUDA=1
tests=$OUT/tests.log
: >"$tests"
# The device's own tests, then the op tests' GPU subtests (their emulator
# and fake-driver twins ran in CI, without a GPU).
step "test engine/cudaexec -run Device" 75 "$tests" "${in[@]}" engine/cudaexec "$bin/cudaexec.test" -test.v -test.run Device -test.timeout 70s
step "test engine/cudaexec -run LaunchOps/^cuda$|TopKSelect/^cuda$" 30 "$tests" "${in[@]}" engine/cudaexec "$bin/cudaexec.test" -test.v -test.run 'LaunchOps/^cuda$|TopKSelect/^cuda$' -test.timeout 25s
step "test internal/cuda" 30 "$tests" "${in[@]}" internal/cuda "$bin/cuda.test" -test.v -test.timeout 25s
step "test engine -run Device" 30 "$tests" "${in[@]}" engine "$bin/engine.test" -test.v -test.run Device -test.timeout 25s

bench=$OUT/bench.log
: >"$bench"
step "bench engine/cudaexec" 130 "$bench" "${in[@]}" engine/cudaexec "$bin/cudaexec.test" -test.run '^$' -test.bench "$BENCH" -test.benchtime "$BENCHTIME" -test.timeout 125s
step "bench internal/cuda" 20 "$bench" "${in[@]}" internal/cuda "$bin/cuda.test" -test.run '^$' -test.bench . -test.benchtime "$BENCHTIME" -test.timeout 15s

export PYTHONUNBUFFERED=1
: >"$OUT/torch.log"
step "torch gemm" 20 "$OUT/torch.log" python3 deploy/device/gemm_torch.py

# serve_and_run serves the preset on the GPU and runs the four phases
# against it; the report's Markdown and JSON come back beside the logs. It
# runs through bash -c, under step's timeout.
# shellcheck disable=SC2317 # reached through bash -c.
serve_and_run() {
	local ready=$work/ready.json pid base rc
	timeout -k 5 130 "$bin/glmbench" serve --device cuda --model-preset "$SERVE_PRESET" --host 127.0.0.1 --port 0 \
		--ready-file "$ready" >"$OUT/serve.log" 2>&1 &
	pid=$!
	for _ in $(seq 1 90); do
		[[ -s $ready ]] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	if [[ ! -s $ready ]]; then
		echo "serve was not ready within 45 s, or exited: see serve.log" >&2
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 1
	fi
	base=$(sed -n 's/.*"base_url":"\([^"]*\)".*/\1/p' "$ready")
	# SIGINT at the limit: run writes the report of what it measured.
	timeout -s INT -k 5 80 "$bin/glmbench" run --phases all --endpoint "$base" --phase-cap "$PHASE_CAP" --summary full --out "$work/run"
	rc=$?
	kill -INT "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	cp "$work/run/report.md" "$work/run/report.json" "$OUT/" 2>/dev/null
	return "$rc"
}
: >"$OUT/run.log"
export -f serve_and_run
export bin work OUT SERVE_PRESET PHASE_CAP
step "serve --device cuda + run --phases all" 135 "$OUT/run.log" bash -c serve_and_run

echo "check.sh: $([[ $failed == 0 ]] && echo "every step passed" || echo "a step failed: see above")" | tee -a "$summary"
exit "$failed"
