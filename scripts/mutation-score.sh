#!/usr/bin/env bash
# Oracle strength as a number (issue 19): cargo-mutants over the controller's disruption,
# termination, provisioning, lifecycle and interruption modules, judged by the scenario
# library's oracles (tests/mutation_suite.rs), on a fixed sample of the mutants.
# Results and the method: docs/mutation-score.md.
#
#   scripts/mutation-score.sh                  # the documented sample: mutant i of the listing with i mod 20 = 19 (49 on this tree)
#   SHARD=all scripts/mutation-score.sh        # every mutant (hours on 2 cores)
#   SHARD=3/20 scripts/mutation-score.sh       # another shard of the same listing
#   scripts/mutation-score.sh --list           # extra arguments go to cargo-mutants
#   ITERATE=1 scripts/mutation-score.sh        # resume: skip mutants caught in an earlier run
#   NO_BASELINE=1 scripts/mutation-score.sh    # skip the unmutated check (already green)
#
# Tool: cargo-mutants 27.1.0 (`cargo install cargo-mutants --version 27.1.0 --locked`).
# It mutates the sources IN PLACE (--in-place: no copy of the tree; the target dir is
# reused, so each mutant is an incremental rebuild); it restores every file after each
# mutant, but do not run it in a tree you are editing, and check `git status` after an
# interrupted run. Output goes to target/mutants/mutants.out (not committed).
set -euo pipefail
cd "$(dirname "$0")/.."

SHARD="${SHARD:-19/20}"
shard_args=()
if [[ "$SHARD" != all ]]; then
    shard_args=(--shard "$SHARD" --sharding round-robin)
fi
iterate_args=()
if [[ -n "${ITERATE:-}" ]]; then
    iterate_args=(--iterate)
fi

# The unmutated tree must pass the suite (cargo-mutants' baseline); it is skipped here
# because the script checks it first with the same command, which also warms the build.
if [[ " $* " != *" --list "* && -z "${NO_BASELINE:-}" ]]; then
    CARGO_BUILD_JOBS=2 nice -n 5 cargo test --workspace --test mutation_suite -- --ignored
fi

# The build and test commands are `cargo test [--no-run] --workspace --test=mutation_suite`
# (the test itself runs with `-- --ignored`: it is #[ignore]d in the default `cargo test`,
# which runs the same stories in tests/scenarios.rs):
# --workspace, not `-p dovetail-tests`, so features unify as in every other build of this
# tree (with -p the AWS SDK crates rebuild for ten minutes).
# --timeout: a mutant whose suite runs longer (a hang in wall clock) counts as caught
# ("timeout"); the suite's own watchdog (60 s without simulated progress, 600 s per story)
# fails a hung run long before. A surviving mutant's suite took 216 s of wall clock in a
# debug build on a 2-core machine at load average 9.
# nice 5, as every long run on the shared machine; two build jobs.
# Do not add --re/--exclude-re to a sharded run: filters apply before sharding and move
# every later mutant into another shard.
CARGO_BUILD_JOBS=2 exec nice -n 5 cargo mutants \
    --in-place \
    --file 'controller/src/disruption/**' \
    --file 'controller/src/termination/**' \
    --file 'controller/src/provisioning/**' \
    --file 'controller/src/lifecycle/**' \
    --file 'controller/src/interruption/**' \
    --exclude 'controller/src/disruption/tests.rs' \
    --test-workspace=true \
    --cargo-arg=--test=mutation_suite \
    --baseline skip \
    --timeout 1800 --build-timeout 1800 \
    --output target/mutants \
    "${shard_args[@]}" "${iterate_args[@]}" "$@" \
    -- -- --ignored
