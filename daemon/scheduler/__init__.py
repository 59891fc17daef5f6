"""``dreamd run``: the scheduled daemon. A face like the CLI: it drives the service layer,
but runs every pass that reads a store in a worker process so the daemon itself stays small
between passes (a watched store's skip, which reads nothing, it records itself)."""
