#!/bin/sh
# A worker that writes batches through a fencewatch daemon under a lease, each exactly once.
#
#   FENCEWATCH_URL=http://127.0.0.1:7420 sh assets/examples/worker.sh SPOOL [LEASE] [RESOURCE]
#
# Each file in the folder SPOOL is a batch: its name is the batch's id, its content the value to
# write to RESOURCE (default jobs/totals) under a generation of LEASE (default jobs). Batches go
# in name order; names starting with '.' are skipped (write one as .NAME, then rename it). A
# file is removed only once the daemon accepted it, or replayed it (it was applied before and
# the answer lost). Replace next_batch and batch_done to take batches from elsewhere.
# FENCEWATCH_OWNER names the worker (default host-pid), FENCEWATCH_TTL is the lease's (10s);
# fencewatch reads FENCEWATCH_API_KEY and FENCEWATCH_CA_CERT.
#
# Exit: 0 SPOOL is empty; 1 no lease: the daemon failed; 2 bad arguments; 3, 6 or 7 a newer
# owner took over, the lease is held or lost, or the API key may not; 5 or 8 the daemon refuses
# a batch as it is (its id was used for another request, or it is invalid or too large). The
# batch in hand stays in SPOOL whatever the exit. While the daemon is unreachable or failing
# (write's exit 1) the same batch is tried again every second.
set -u
spool=${1:?usage: worker.sh SPOOL [LEASE] [RESOURCE]} lease=${2:-jobs} resource=${3:-jobs/totals}
me=${FENCEWATCH_OWNER:-$(uname -n)-$$}
[ -d "$spool" ] || { echo "worker: $spool is not a folder" >&2; exit 2; }

# Sets batch_id and batch_file here: called in $(...), it would set them in a subshell.
next_batch() {
  for batch_file in "$spool"/*; do
    [ -f "$batch_file" ] && batch_id=${batch_file##*/} && return 0
  done
  return 1
}
batch_done() { rm -f -- "$batch_file"; }

token=$(fencewatch lease acquire "$lease" --holder "$me" --ttl "${FENCEWATCH_TTL:-10s}" --token-only) || exit
while next_batch; do
  # The same batch with the same key until the daemon decides it: applied once, never skipped.
  while :; do
    fencewatch write "$resource" --token "$token" --lease "$lease" --owner "$me" \
      --idempotency-key "batch-$batch_id" <"$batch_file" && break
    code=$?
    case $code in
      1) sleep 1 ;;                 # daemon unreachable or failing (5xx): try again
      3|6|7) echo "worker: lost $lease (exit $code); batch $batch_id stays in $spool" >&2; exit "$code" ;;
      *) echo "worker: batch $batch_id refused (exit $code); it stays in $spool" >&2; exit "$code" ;;
    esac
  done
  batch_done
  fencewatch lease renew "$lease" --holder "$me" --token "$token" >/dev/null; code=$?
  case $code in 0|1) ;; *) echo "worker: lost $lease (exit $code)" >&2; exit "$code" ;; esac
done
fencewatch lease release "$lease" --holder "$me" --token "$token" >/dev/null || true
