"""``dreamd run``: the scheduled daemon. A face like the CLI: it drives the service layer,
but runs every pass in a worker process so the daemon itself stays small between passes."""
