"""What every HTTP engine shares: the measuring client and its SSE stream (`client`, `stream`), the
server process and its log (`process`), the connection pool (`pool`), Prometheus text (`promtext`),
one start for several jobs (`shared_start`), and the base runtime each engine subclasses (`runtime`)."""
