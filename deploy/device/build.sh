#!/usr/bin/env bash
# build.sh builds, on a machine with Go, what deploy/device/check.sh runs on
# a GPU machine that has none: the test binaries of ./engine/cudaexec,
# ./internal/cuda and ./engine (its Device tests) and the glmbench binary,
# cgo-free, stripped (-s -w, -trimpath) and gzipped into one folder of the
# repository that git ignores (.devbin/ by default, added to
# .git/info/exclude), for the device tool to carry:
#
#   deploy/device/build.sh            # then, with the device tool:
#   run  command: OUT=$OUT deploy/device/check.sh   carry: [".devbin"]   timeout_s: 560
#
# The device tool sends the working tree and the carried paths, 64 MiB in
# all; build.sh fails if the folder would not leave room for the tree.
set -euo pipefail

root=$(git rev-parse --show-toplevel)
cd "$root"
out=${1:-.devbin}
case $out in
/* | *..*) echo "build.sh: the folder must be a path inside the repository, not $out" >&2; exit 2 ;;
esac

exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qxF "/$out/" "$exclude" 2>/dev/null || echo "/$out/" >>"$exclude"

rm -rf "$out"
mkdir -p "$out"
export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
flags=(-trimpath "-ldflags=-s -w")

# Each test binary must exist: a package with no test files would give none.
for pkg in engine/cudaexec internal/cuda engine; do
	name=$(basename "$pkg").test
	go test -c "${flags[@]}" -o "$out/$name" "./$pkg"
	if [[ ! -f $out/$name ]]; then
		echo "build.sh: ./$pkg built no test binary (no test files?)" >&2
		exit 1
	fi
done
go build "${flags[@]}" -o "$out/glmbench" ./cmd/glmbench

gzip -9 "$out"/*
git rev-parse HEAD >"$out/COMMIT"

# What travels: the tree (tracked and untracked files git does not ignore)
# and the carried folder, under the device tool's 64 MiB.
carried=$(du -sb "$out" | cut -f1)
tree=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
ls -l "$out"
echo "build.sh: $out holds $((carried / 1024)) KiB, the tree $((tree / 1024)) KiB (limit 65536 KiB together)"
if ((carried + tree > 62 * 1024 * 1024)); then
	echo "build.sh: over 62 MiB with the tree: the device tool would refuse it" >&2
	exit 1
fi
